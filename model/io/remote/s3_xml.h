// The two XML documents an S3-compatible server sends us: a ListObjectsV2 page and an <Error>
// body. Parsed with expat (no DTDs, no entities beyond XML's own), bounded in size by the
// transport; fuzzed by fuzz_s3_xml.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::io::remote {

struct ListedObject
{
    std::string key;
    uint64_t size = 0;
    std::string etag;
};

struct ListPage
{
    std::vector<ListedObject> objects;
    std::vector<std::string> prefixes; // CommonPrefixes with a delimiter: the "folders"
    bool truncated = false;
    std::string continuationToken;
};

// Throws ckpt::Error (naming `url`) when the text is not well-formed XML or not a
// ListBucketResult, or when a Size is not a number.
ListPage parseListPage(std::string_view xml, const std::string& url);

struct S3ErrorBody
{
    std::string code;    // "NoSuchKey", "SignatureDoesNotMatch", "SlowDown", ...
    std::string message; // the server's words
};
// Best effort: an empty result when the body is not an S3 <Error> document.
S3ErrorBody parseErrorBody(std::string_view xml);

} // namespace ckpt::io::remote
