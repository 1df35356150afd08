#pragma once
// Small text helpers the line-based readers share (HTTP headers, AWS config, YAML scalars).
#include <string_view>

namespace ckpt::io {

// `s` without leading and trailing blanks (space, tab, CR, LF): what a line-based format ignores.
inline std::string_view trimBlanks(std::string_view s)
{
    const size_t a = s.find_first_not_of(" \t\r\n");
    if (a == std::string_view::npos) return {};
    return s.substr(a, s.find_last_not_of(" \t\r\n") - a + 1);
}

} // namespace ckpt::io
