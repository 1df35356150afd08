// AWS Signature Version 4 for S3 requests (and GCS's XML API with HMAC keys), written with
// OpenSSL's SHA-256 and HMAC. curl's built-in SigV4 in Debian 12 omits x-amz-content-sha256
// and sorts no query, so S3 servers refuse it (../shared/specs/remote-checkpoints.md §5).
#pragma once

#include <ctime>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ckpt::io::remote {

struct AwsCredentials
{
    std::string accessKey;
    std::string secretKey;
    std::string sessionToken;
    // Where they came from, for error messages ("environment (AWS_ACCESS_KEY_ID)", "profile 'x'
    // in ~/.aws/credentials"); never the secret itself.
    std::string source = "none (anonymous requests)";
    std::time_t expiration = 0; // when fetched credentials stop working; 0: they do not expire
    bool anonymous() const { return accessKey.empty(); }
};

using HeaderList = std::vector<std::pair<std::string, std::string>>;

struct SigningRequest
{
    std::string method = "GET";
    std::string host;         // as sent in Host: (with the port when it is not the scheme's default)
    std::string canonicalUri; // the path, already URI-encoded once
    HeaderList query;         // raw names and values; encoded and sorted when signing
    HeaderList extraHeaders;  // other headers to sign (lower-case names), e.g. range
    std::string region;
    std::string service = "s3";
    std::time_t when = 0;
    std::string payloadHash; // hex SHA-256 of the body; empty means the empty body's
};

std::string sha256Hex(std::string_view data);
std::string canonicalQuery(const HeaderList& query);
// "20130524T000000Z"
std::string amzDate(std::time_t when);
// The headers to add to the request: x-amz-date, x-amz-content-sha256, x-amz-security-token
// (with a session token) and Authorization. Anonymous credentials add nothing.
HeaderList signV4(const SigningRequest& r, const AwsCredentials& creds);

} // namespace ckpt::io::remote
