#include "layout/yaml_scalars.h"

#include "io/text.h"

#include <charconv>
#include <cstdlib>
#include <limits>
#include <vector>

namespace ckpt::layout {

namespace {

std::string trimmed(std::string_view s)
{
    return std::string(io::trimBlanks(s));
}

// A plain scalar's JSON value (YAML 1.1's core forms that dumps write).
nlohmann::json plainValue(const std::string& v)
{
    if (v.empty() || v == "null" || v == "~" || v == "Null" || v == "NULL") return nullptr;
    if (v == "true" || v == "True" || v == "TRUE") return true;
    if (v == "false" || v == "False" || v == "FALSE") return false;
    int64_t i = 0;
    const char* end = v.data() + v.size();
    if (auto [p, ec] = std::from_chars(v.data() + (v[0] == '+'), end, i); ec == std::errc() && p == end)
        return i;
    if (v == ".inf" || v == "+.inf") return std::numeric_limits<double>::infinity();
    if (v == "-.inf") return -std::numeric_limits<double>::infinity();
    if (v.find_first_not_of("0123456789+-.eE") == std::string::npos &&
        v.find_first_of("0123456789") != std::string::npos) {
        char* stop = nullptr;
        const double d = std::strtod(v.c_str(), &stop);
        if (stop == v.c_str() + v.size()) return d;
    }
    return v;
}

// A quoted scalar's text: '' is a quote in single quotes; double quotes keep their common escapes.
std::string unquoted(const std::string& v)
{
    std::string out;
    const char q = v[0];
    for (size_t i = 1; i < v.size(); ++i) {
        if (v[i] == q) {
            if (q == '\'' && i + 1 < v.size() && v[i + 1] == '\'') {
                out += '\'', ++i;
                continue;
            }
            break;
        }
        if (q == '"' && v[i] == '\\' && i + 1 < v.size()) {
            const char e = v[++i];
            out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
            continue;
        }
        out += v[i];
    }
    return out;
}

} // namespace

std::map<std::string, nlohmann::json> yamlScalars(const std::string& text)
{
    std::map<std::string, nlohmann::json> out;
    std::vector<std::pair<size_t, std::string>> parents; // (indent, key) of the mappings we are in
    size_t skipDeeperThan = std::string::npos;           // inside a sequence or a block scalar
    size_t pos = 0;
    while (pos < text.size()) {
        size_t eol = text.find('\n', pos);
        if (eol == std::string::npos) eol = text.size();
        const std::string_view line(text.data() + pos, eol - pos);
        pos = eol + 1;
        const size_t indent = line.find_first_not_of(' ');
        if (indent == std::string_view::npos || line[indent] == '#' || line[indent] == '\r') continue;
        if (indent == 0 && (line.starts_with("---") || line.starts_with("..."))) continue;
        if (skipDeeperThan != std::string::npos) {
            if (indent > skipDeeperThan || (indent == skipDeeperThan && line[indent] == '-')) continue;
            skipDeeperThan = std::string::npos;
        }
        if (line[indent] == '-') { // a sequence: its items, and what they hold, are passed over
            skipDeeperThan = indent;
            continue;
        }
        const size_t colon = line.find(": ", indent);
        const bool opens = colon == std::string_view::npos && trimmed(line).ends_with(':');
        if (colon == std::string_view::npos && !opens) continue;
        std::string key = trimmed(opens ? line.substr(indent, line.rfind(':') - indent)
                                        : line.substr(indent, colon - indent));
        if (key.size() >= 2 && (key[0] == '\'' || key[0] == '"')) key = unquoted(key);
        while (!parents.empty() && parents.back().first >= indent)
            parents.pop_back();
        std::string path;
        for (const auto& [i, k] : parents)
            path += k + ".";
        path += key;
        if (opens) {
            parents.push_back({indent, key});
            continue;
        }
        std::string value = trimmed(line.substr(colon + 2));
        if (value.starts_with('|') || value.starts_with('>')) { // a block scalar's lines
            skipDeeperThan = indent;
            continue;
        }
        if (!value.empty() && (value[0] == '\'' || value[0] == '"')) {
            out[path] = unquoted(value);
            continue;
        }
        if (const size_t hash = value.find(" #"); hash != std::string::npos)
            value = trimmed(value.substr(0, hash));
        out[path] = plainValue(value);
    }
    return out;
}

} // namespace ckpt::layout
