// Fuzzes what an HTTP server sends besides the body: response head lines (as libcurl hands
// them over), Content-Range, ETag and Retry-After. A server is untrusted input.
#include "io/remote/http_headers.h"

#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::map<std::string, std::string> headers;
    size_t start = 0;
    while (start <= text.size()) {
        const size_t nl = text.find('\n', start);
        const std::string_view line = text.substr(start, nl == std::string_view::npos ? nl : nl - start + 1);
        ckpt::io::remote::addHeaderLine(headers, line);
        if (const auto r = ckpt::io::remote::parseContentRange(line)) {
            // What the parser promises the range checks downstream.
            if (r->last < r->first || (r->total && r->last >= *r->total)) __builtin_trap();
        }
        ckpt::io::remote::parseEtag(line);
        if (const auto s = ckpt::io::remote::parseRetryAfter(line); s && (*s < 0 || *s > 3600))
            __builtin_trap();
        if (nl == std::string_view::npos) break;
        start = nl + 1;
    }
    for (const auto& [k, v] : headers)
        if (k.find(':') != std::string::npos) __builtin_trap();
    return 0;
}
