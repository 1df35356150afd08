// Google OAuth 2 access tokens from a credentials file, for gs:// (stores.h): a service account's
// key (an RS256-signed JWT exchanged at its token_uri) or a user's refresh token (gcloud's
// application default credentials). Tokens are cached per process until shortly before they
// expire. The file is untrusted text (fuzzed by fuzz_google_credentials).
#pragma once

#include <ctime>
#include <string>
#include <string_view>

namespace ckpt::io::remote {

// Where authorized_user files, which name no token endpoint, send their refresh token; the
// environment variable CKPT_GOOGLE_TOKEN_URI overrides it (tests, private endpoints).
inline constexpr const char* kGoogleTokenUri = "https://oauth2.googleapis.com/token";
// Reads only objects: the narrowest scope that serves ckpt.
inline constexpr const char* kGcsReadScope = "https://www.googleapis.com/auth/devstorage.read_only";

struct GoogleCredentials
{
    std::string path;                                  // the file, named in every Error
    std::string type;                                  // "service_account" or "authorized_user"
    std::string clientEmail, privateKey, privateKeyId; // service_account
    std::string clientId, clientSecret, refreshToken;  // authorized_user
    std::string tokenUri;
};

// Throws Error naming `path` for anything but a service_account or authorized_user file with
// every field it needs. `defaultTokenUri` serves files that name none.
GoogleCredentials parseGoogleCredentials(std::string_view json, const std::string& path,
                                         const std::string& defaultTokenUri = kGoogleTokenUri);
// Reads and parses the file (at most 1 MiB).
GoogleCredentials readGoogleCredentials(const std::string& path, const std::string& defaultTokenUri);

// base64url without padding (RFC 7515).
std::string base64Url(std::string_view bytes);
// header.claims.signature for a service account: iss = client_email, aud = token_uri, scope,
// iat = now, exp = now + 1 h; signed RS256 with its private key. Throws Error naming the file
// when the key is not an RSA PEM key.
std::string serviceAccountJwt(const GoogleCredentials& c, std::time_t now, const std::string& scope);
// The form POSTed to token_uri: a JWT bearer grant, or a refresh_token grant.
std::string tokenRequestBody(const GoogleCredentials& c, std::time_t now, const std::string& scope);

struct GoogleToken
{
    std::string accessToken;
    std::time_t expires = 0;
};
// The token endpoint's JSON answer ({"access_token", "expires_in"}); `now` dates expires_in.
GoogleToken parseTokenAnswer(std::string_view json, const std::string& path, std::time_t now);

// A bearer token for `c`, from the cache or its token endpoint. Throws Error naming the file and
// what the endpoint answered.
std::string googleAccessToken(const GoogleCredentials& c, const std::string& scope = kGcsReadScope);
void clearGoogleTokenCache();

} // namespace ckpt::io::remote
