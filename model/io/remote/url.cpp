#include "io/remote/url.h"

#include <algorithm>
#include <cctype>

#include "io/error.h"

namespace ckpt::io::remote {

namespace {

struct Prefix
{
    const char* text;
    Scheme scheme;
};
constexpr Prefix kPrefixes[] = {{"s3://", Scheme::S3},
                                {"gs://", Scheme::Gcs},
                                {"http://", Scheme::Http},
                                {"https://", Scheme::Https},
                                {"hf://", Scheme::HuggingFace}};

const Prefix* prefixOf(const std::string& text)
{
    for (const auto& p : kPrefixes)
        if (text.rfind(p.text, 0) == 0) return &p;
    return nullptr;
}

// %XX sequences as the bytes they stand for; anything else as it is.
std::string percentDecode(const std::string& s)
{
    auto hex = [](char c) {
        return c >= '0' && c <= '9'   ? c - '0'
               : c >= 'a' && c <= 'f' ? c - 'a' + 10
               : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                      : -1;
    };
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '%' && i + 2 < s.size() && hex(s[i + 1]) >= 0 && hex(s[i + 2]) >= 0) {
            out += char(hex(s[i + 1]) * 16 + hex(s[i + 2]));
            i += 2;
        } else {
            out += s[i];
        }
    }
    return out;
}

// hf://ORG/REPO[@REV]/PATH: the repository is always two segments, the revision rides on it.
void splitHuggingFace(Url& u, const std::string& rest)
{
    const auto first = rest.find('/');
    const auto second = first == std::string::npos ? std::string::npos : rest.find('/', first + 1);
    std::string repo = rest.substr(0, second);
    u.key = second == std::string::npos ? std::string() : rest.substr(second + 1);
    const auto at = repo.find('@');
    if (at != std::string::npos) {
        // A revision holding '/' (refs/pr/1) comes percent-encoded, as huggingface_hub writes it.
        u.revision = percentDecode(repo.substr(at + 1));
        repo.resize(at);
        if (u.revision.empty()) throw Error("an empty revision after '@'", u.text);
    }
    u.authority = repo;
    const auto slash = repo.find('/');
    if (first == std::string::npos || slash == std::string::npos || slash == 0 || slash + 1 == repo.size())
        throw Error("a Hugging Face URL is hf://ORG/REPO[@REV]/PATH", u.text);
}

} // namespace

std::string meantUrl(const std::string& text)
{
    if (isRemote(text)) return {};
    const auto colon = text.find(':');
    if (colon == std::string::npos || colon == 0 || colon > 5) return {};
    std::string scheme = text.substr(0, colon);
    for (char& c : scheme)
        c = char(std::tolower(static_cast<unsigned char>(c)));
    static const char* const kSchemes[] = {"s3", "gs", "hf", "http", "https"};
    if (std::find(std::begin(kSchemes), std::end(kSchemes), scheme) == std::end(kSchemes)) return {};
    size_t rest = colon + 1;
    while (rest < text.size() && (text[rest] == '/' || text[rest] == '\\'))
        ++rest;
    if (rest == text.size()) return {};
    const std::string meant = scheme + "://" + text.substr(rest);
    return isRemote(meant) ? meant : std::string();
}

bool isRemote(const std::string& text)
{
    return prefixOf(text) != nullptr;
}

Url parseUrl(const std::string& text)
{
    const Prefix* p = prefixOf(text);
    if (!p) throw Error("not a remote URL (s3://, gs://, http://, https:// or hf://)", text);
    for (const char c : text)
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            throw Error("control characters are not allowed in a URL", text);
    Url u;
    u.scheme = p->scheme;
    u.text = text;
    const std::string rest = text.substr(std::string(p->text).size());
    if (u.scheme == Scheme::HuggingFace) {
        splitHuggingFace(u, rest);
        return u;
    }
    const auto slash = rest.find('/');
    u.authority = rest.substr(0, slash);
    u.key = slash == std::string::npos ? std::string() : rest.substr(slash + 1);
    if (u.authority.empty()) throw Error("the URL names no host or bucket", text);
    // Userinfo in a URL would end up in logs and error messages; credentials come from the
    // environment instead.
    if (u.authority.find('@') != std::string::npos)
        throw Error("credentials inside the URL are not accepted; use the environment", text);
    return u;
}

Url Url::sibling(const std::string& name) const
{
    Url u = *this;
    u.key = folder() + name;
    std::string base = text.substr(0, text.size() - key.size());
    if (base.back() != '/') base += '/';
    u.text = base + u.key;
    return u;
}

std::string Url::folder() const
{
    const auto slash = key.rfind('/');
    return slash == std::string::npos ? std::string() : key.substr(0, slash + 1);
}

std::string uriEncode(const std::string& s, bool keepSlash)
{
    static const char* hex = "0123456789ABCDEF";
    std::string out;
    out.reserve(s.size());
    for (const unsigned char c : s) {
        const bool unreserved = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                                c == '-' || c == '_' || c == '.' || c == '~';
        if (unreserved || (keepSlash && c == '/')) {
            out += char(c);
        } else {
            out += '%';
            out += hex[c >> 4];
            out += hex[c & 15];
        }
    }
    return out;
}

} // namespace ckpt::io::remote
