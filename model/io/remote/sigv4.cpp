#include "io/remote/sigv4.h"

#include "io/remote/url.h"

#include <algorithm>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

namespace ckpt::io::remote {

namespace {

std::string hex(const unsigned char* p, size_t n)
{
    static const char* digits = "0123456789abcdef";
    std::string s(n * 2, '0');
    for (size_t i = 0; i < n; ++i) {
        s[2 * i] = digits[p[i] >> 4];
        s[2 * i + 1] = digits[p[i] & 15];
    }
    return s;
}

std::string hmac(std::string_view key, std::string_view data)
{
    unsigned char out[EVP_MAX_MD_SIZE];
    unsigned int len = 0;
    HMAC(EVP_sha256(), key.data(), int(key.size()), reinterpret_cast<const unsigned char*>(data.data()),
         data.size(), out, &len);
    return std::string(reinterpret_cast<const char*>(out), len);
}

std::string lowerTrim(std::string s, bool lower)
{
    const auto b = s.find_first_not_of(" \t");
    const auto e = s.find_last_not_of(" \t");
    s = b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
    if (lower)
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return char(std::tolower(c)); });
    return s;
}

} // namespace

std::string sha256Hex(std::string_view data)
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), d);
    return hex(d, sizeof d);
}

std::string canonicalQuery(const HeaderList& query)
{
    std::vector<std::pair<std::string, std::string>> enc;
    for (const auto& [k, v] : query)
        enc.emplace_back(uriEncode(k, false), uriEncode(v, false));
    std::sort(enc.begin(), enc.end()); // by encoded name, then value, as SigV4 requires
    std::string s;
    for (const auto& [k, v] : enc)
        s += (s.empty() ? "" : "&") + k + "=" + v;
    return s;
}

std::string amzDate(std::time_t when)
{
    std::tm tm{};
    gmtime_r(&when, &tm);
    char buf[20];
    std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
    return buf;
}

HeaderList signV4(const SigningRequest& r, const AwsCredentials& creds)
{
    if (creds.anonymous()) return {};
    const std::string date = amzDate(r.when);
    const std::string day = date.substr(0, 8);
    const std::string payload = r.payloadHash.empty() ? sha256Hex("") : r.payloadHash;

    HeaderList added{{"x-amz-content-sha256", payload}, {"x-amz-date", date}};
    if (!creds.sessionToken.empty()) added.emplace_back("x-amz-security-token", creds.sessionToken);
    HeaderList signedHeaders{{"host", r.host}};
    for (const auto& [k, v] : r.extraHeaders)
        signedHeaders.emplace_back(lowerTrim(k, true), lowerTrim(v, false));
    signedHeaders.insert(signedHeaders.end(), added.begin(), added.end());
    std::sort(signedHeaders.begin(), signedHeaders.end());

    std::string canonicalHeaders, names;
    for (const auto& [k, v] : signedHeaders) {
        canonicalHeaders += k + ":" + v + "\n";
        names += (names.empty() ? "" : ";") + k;
    }
    const std::string canonical = r.method + "\n" + r.canonicalUri + "\n" + canonicalQuery(r.query) + "\n" +
                                  canonicalHeaders + "\n" + names + "\n" + payload;
    const std::string scope = day + "/" + r.region + "/" + r.service + "/aws4_request";
    const std::string toSign = "AWS4-HMAC-SHA256\n" + date + "\n" + scope + "\n" + sha256Hex(canonical);
    std::string key = hmac("AWS4" + creds.secretKey, day);
    key = hmac(key, r.region);
    key = hmac(key, r.service);
    key = hmac(key, "aws4_request");
    const std::string mac = hmac(key, toSign);
    const std::string signature = hex(reinterpret_cast<const unsigned char*>(mac.data()), mac.size());
    added.emplace_back("Authorization", "AWS4-HMAC-SHA256 Credential=" + creds.accessKey + "/" + scope +
                                            ", SignedHeaders=" + names + ", Signature=" + signature);
    return added;
}

} // namespace ckpt::io::remote
