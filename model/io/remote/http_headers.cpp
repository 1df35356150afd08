#include "io/remote/http_headers.h"

#include "io/text.h"

#include <charconv>

namespace ckpt::io::remote {

namespace {

// A whole run of decimal digits, no sign, no overflow.
std::optional<uint64_t> number(std::string_view s)
{
    if (s.empty() || s.size() > 20) return std::nullopt;
    uint64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
    return v;
}

} // namespace

std::optional<ContentRange> parseContentRange(std::string_view value)
{
    value = trimBlanks(value);
    constexpr std::string_view unit = "bytes ";
    if (value.substr(0, unit.size()) != unit) return std::nullopt;
    value.remove_prefix(unit.size());
    const auto dash = value.find('-');
    const auto slash = value.find('/');
    if (dash == std::string_view::npos || slash == std::string_view::npos || slash < dash)
        return std::nullopt;
    const auto first = number(value.substr(0, dash));
    const auto last = number(value.substr(dash + 1, slash - dash - 1));
    if (!first || !last || *last < *first) return std::nullopt;
    ContentRange r{*first, *last, std::nullopt};
    const std::string_view total = value.substr(slash + 1);
    if (total != "*") {
        r.total = number(total);
        if (!r.total || *last >= *r.total) return std::nullopt;
    }
    return r;
}

std::optional<double> parseRetryAfter(std::string_view value)
{
    const auto v = number(trimBlanks(value));
    if (!v) return std::nullopt;
    return double(std::min<uint64_t>(*v, 3600));
}

std::optional<std::string> parseEtag(std::string_view value)
{
    value = trimBlanks(value);
    std::string_view inner = value;
    if (inner.substr(0, 2) == "W/") inner.remove_prefix(2);
    if (inner.size() < 2 || inner.front() != '"' || inner.back() != '"') return std::nullopt;
    for (const char c : inner.substr(1, inner.size() - 2))
        if (c == '"' || static_cast<unsigned char>(c) < 0x21 || c == 0x7f) return std::nullopt;
    return std::string(value);
}

void addHeaderLine(std::map<std::string, std::string>& headers, std::string_view line)
{
    line = trimBlanks(line);
    if (line.substr(0, 5) == "HTTP/") {
        headers.clear();
        return;
    }
    const auto colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) return;
    std::string name(trimBlanks(line.substr(0, colon)));
    for (char& c : name)
        if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
    headers[name] = std::string(trimBlanks(line.substr(colon + 1)));
}

} // namespace ckpt::io::remote
