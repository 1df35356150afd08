// Parsers of what an HTTP server sends back besides the body: Content-Range, ETag,
// Retry-After, and header lines. Servers are untrusted input: every parser here is fuzzed
// (tests/fuzz/fuzz_remote_headers.cpp) and answers "absent" rather than guessing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace ckpt::io::remote {

struct ContentRange
{
    uint64_t first = 0;            // inclusive, as HTTP writes it
    uint64_t last = 0;             // inclusive
    std::optional<uint64_t> total; // absent for "bytes a-b/*"
};

// "bytes 0-99/1000" or "bytes 0-99/*"; nullopt when malformed, when last < first, or when last
// lies at or beyond a stated total.
std::optional<ContentRange> parseContentRange(std::string_view value);
// Retry-After as delta-seconds (the form S3, GCS and proxies send); nullopt for anything else
// (an HTTP date is then ignored and the usual back-off applies). Capped at one hour.
std::optional<double> parseRetryAfter(std::string_view value);
// A strong or weak ETag as the server wrote it, trimmed; nullopt when empty or not quoted text.
std::optional<std::string> parseEtag(std::string_view value);

// One "Name: value" line of a response head, as libcurl hands them over; the name lower-cased
// (HTTP names are case-insensitive) and the value trimmed. A status line starts a new response
// (redirects, 100-continue), so it clears what the previous one set.
void addHeaderLine(std::map<std::string, std::string>& headers, std::string_view line);

} // namespace ckpt::io::remote
