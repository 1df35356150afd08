#include "io/remote/google_auth.h"

#include "io/error.h"
#include "io/remote/transport.h"
#include "io/remote/url.h"

#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <openssl/evp.h>
#include <openssl/pem.h>

namespace ckpt::io::remote {

namespace {

using Json = nlohmann::json;

std::string field(const Json& doc, const char* key, const std::string& path, bool required)
{
    const auto it = doc.find(key);
    if (it == doc.end() || it->is_null() || (it->is_string() && it->get_ref<const std::string&>().empty())) {
        if (required) throw Error(std::string("the Google credentials file has no ") + key, path);
        return {};
    }
    if (!it->is_string())
        throw Error(std::string("the Google credentials file's ") + key + " is not a string", path);
    return it->get<std::string>();
}

std::string claimsJson(const GoogleCredentials& c, std::time_t now, const std::string& scope)
{
    Json claims = {{"iss", c.clientEmail},
                   {"scope", scope},
                   {"aud", c.tokenUri},
                   {"iat", int64_t(now)},
                   {"exp", int64_t(now) + 3600}};
    return claims.dump();
}

std::string headerJson(const GoogleCredentials& c)
{
    Json header = {{"alg", "RS256"}, {"typ", "JWT"}};
    if (!c.privateKeyId.empty()) header["kid"] = c.privateKeyId;
    return header.dump();
}

struct KeyFree
{
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
struct BioFree
{
    void operator()(BIO* b) const { BIO_free(b); }
};
struct MdFree
{
    void operator()(EVP_MD_CTX* c) const { EVP_MD_CTX_free(c); }
};

// RS256: RSASSA-PKCS1-v1_5 over SHA-256, as EVP_DigestSign does for an RSA key by default.
std::string rs256(const std::string& pem, std::string_view input, const std::string& path)
{
    std::unique_ptr<BIO, BioFree> bio(BIO_new_mem_buf(pem.data(), int(pem.size())));
    // A null passphrase callback with an empty user string: an encrypted key fails instead of
    // prompting on the terminal.
    std::unique_ptr<EVP_PKEY, KeyFree> key(
        bio ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, const_cast<char*>("")) : nullptr);
    if (!key) throw Error("the Google credentials file's private_key is not a PEM private key", path);
    if (EVP_PKEY_get_base_id(key.get()) != EVP_PKEY_RSA)
        throw Error("the Google credentials file's private_key is not an RSA key (RS256 needs one)", path);
    std::unique_ptr<EVP_MD_CTX, MdFree> md(EVP_MD_CTX_new());
    size_t size = 0;
    if (!md || EVP_DigestSignInit(md.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
        EVP_DigestSign(md.get(), nullptr, &size, reinterpret_cast<const unsigned char*>(input.data()),
                       input.size()) != 1)
        throw Error("the Google credentials file's private_key cannot sign", path);
    std::string sig(size, '\0');
    if (EVP_DigestSign(md.get(), reinterpret_cast<unsigned char*>(sig.data()), &size,
                       reinterpret_cast<const unsigned char*>(input.data()), input.size()) != 1)
        throw Error("the Google credentials file's private_key cannot sign", path);
    sig.resize(size);
    return sig;
}

std::string formEncode(const std::vector<std::pair<std::string, std::string>>& fields)
{
    std::string body;
    for (const auto& [k, v] : fields)
        body += (body.empty() ? "" : "&") + uriEncode(k, false) + "=" + uriEncode(v, false);
    return body;
}

// What a token endpoint said when it refused: OAuth's {"error", "error_description"} when it
// sent that, else the start of its body.
std::string refusal(const HttpResponse& r)
{
    if (!r.failure.empty()) return "no answer (" + r.failure + ")";
    std::string s = "HTTP " + std::to_string(r.status);
    const Json doc = Json::parse(r.body, nullptr, false);
    if (doc.is_object() && doc.contains("error")) {
        const auto& e = doc["error"];
        s += " (" + (e.is_string() ? e.get<std::string>() : e.dump());
        if (doc.contains("error_description") && doc["error_description"].is_string())
            s += ": " + doc["error_description"].get<std::string>();
        s += ")";
    } else if (!r.body.empty()) {
        s += " '" + r.body.substr(0, std::min<size_t>(r.body.find('\n'), 300)) + "'";
    }
    return s;
}

std::mutex g_tokenMutex;
std::map<std::string, GoogleToken> g_tokens;

} // namespace

GoogleCredentials parseGoogleCredentials(std::string_view json, const std::string& path,
                                         const std::string& defaultTokenUri)
{
    const Json doc = Json::parse(json, nullptr, false);
    if (!doc.is_object()) throw Error("the Google credentials file is not a JSON object", path);
    GoogleCredentials c;
    c.path = path;
    c.type = field(doc, "type", path, true);
    c.tokenUri = field(doc, "token_uri", path, false);
    if (c.tokenUri.empty()) c.tokenUri = defaultTokenUri;
    if (c.tokenUri.rfind("https://", 0) != 0 && c.tokenUri.rfind("http://", 0) != 0)
        throw Error("the Google credentials file's token_uri '" + c.tokenUri + "' is not an http(s) URL",
                    path);
    if (c.type == "service_account") {
        c.clientEmail = field(doc, "client_email", path, true);
        c.privateKey = field(doc, "private_key", path, true);
        c.privateKeyId = field(doc, "private_key_id", path, false);
    } else if (c.type == "authorized_user") {
        c.clientId = field(doc, "client_id", path, true);
        c.clientSecret = field(doc, "client_secret", path, true);
        c.refreshToken = field(doc, "refresh_token", path, true);
    } else {
        throw Error("the Google credentials file is of type '" + c.type +
                        "'; ckpt reads service_account and authorized_user files (or set "
                        "GOOGLE_OAUTH_ACCESS_TOKEN to a token from gcloud auth print-access-token)",
                    path);
    }
    return c;
}

GoogleCredentials readGoogleCredentials(const std::string& path, const std::string& defaultTokenUri)
{
    std::ifstream f(path, std::ios::binary);
    if (!f) throw Error("the Google credentials file cannot be read", path);
    std::string text((1u << 20) + 1, '\0');
    f.read(text.data(), std::streamsize(text.size()));
    text.resize(size_t(f.gcount()));
    if (text.size() > (1u << 20)) throw Error("the Google credentials file is larger than 1 MiB", path);
    return parseGoogleCredentials(text, path, defaultTokenUri);
}

std::string base64Url(std::string_view bytes)
{
    std::string out(4 * ((bytes.size() + 2) / 3) + 1, '\0');
    const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()),
                                  reinterpret_cast<const unsigned char*>(bytes.data()), int(bytes.size()));
    out.resize(size_t(n));
    while (!out.empty() && out.back() == '=')
        out.pop_back();
    for (char& ch : out)
        ch = ch == '+' ? '-' : ch == '/' ? '_' : ch;
    return out;
}

std::string serviceAccountJwt(const GoogleCredentials& c, std::time_t now, const std::string& scope)
{
    const std::string input = base64Url(headerJson(c)) + "." + base64Url(claimsJson(c, now, scope));
    return input + "." + base64Url(rs256(c.privateKey, input, c.path));
}

std::string tokenRequestBody(const GoogleCredentials& c, std::time_t now, const std::string& scope)
{
    if (c.type == "service_account")
        return formEncode({{"grant_type", "urn:ietf:params:oauth:grant-type:jwt-bearer"},
                           {"assertion", serviceAccountJwt(c, now, scope)}});
    return formEncode({{"grant_type", "refresh_token"},
                       {"client_id", c.clientId},
                       {"client_secret", c.clientSecret},
                       {"refresh_token", c.refreshToken}});
}

GoogleToken parseTokenAnswer(std::string_view json, const std::string& path, std::time_t now)
{
    const Json doc = Json::parse(json, nullptr, false);
    if (!doc.is_object() || !doc.contains("access_token") || !doc["access_token"].is_string())
        throw Error("the token endpoint's answer has no access_token", path);
    GoogleToken t;
    t.accessToken = doc["access_token"].get<std::string>();
    // It becomes a header value: nothing may end the header early.
    if (t.accessToken.empty() || t.accessToken.find_first_of("\r\n") != std::string::npos)
        throw Error("the token endpoint's access_token is unusable", path);
    const auto in = doc.find("expires_in");
    const int64_t seconds = in != doc.end() && in->is_number_integer() ? in->get<int64_t>() : 3600;
    t.expires = now + std::clamp<int64_t>(seconds, 0, 86400 * 30);
    return t;
}

std::string googleAccessToken(const GoogleCredentials& c, const std::string& scope)
{
    const std::string key = c.path + '\n' + c.type + '\n' + c.clientEmail + c.clientId + '\n' + scope;
    // One exchange at a time: objects opened together share the first one's token.
    std::lock_guard lock(g_tokenMutex);
    const std::time_t now = std::time(nullptr);
    // Renewed 5 minutes early (google-auth's margin), or at half the life of a short one.
    if (const auto it = g_tokens.find(key); it != g_tokens.end()) {
        const std::time_t margin = std::min<std::time_t>(300, (it->second.expires - now) / 2);
        if (now < it->second.expires - std::max<std::time_t>(margin, 0)) return it->second.accessToken;
    }
    std::vector<HttpRequest> q(1);
    q[0].method = "POST";
    q[0].url = c.tokenUri;
    q[0].body = tokenRequestBody(c, now, scope);
    q[0].maxBody = 64u << 10;
    const HttpResponse r = credentialTransport(false).perform(q).front();
    if (!r.failure.empty() || r.status != 200 || r.overflow)
        throw Error("the token endpoint " + c.tokenUri + " refused this file's " +
                        (c.type == "service_account" ? "service-account key: " : "refresh token: ") +
                        refusal(r),
                    c.path);
    GoogleToken t = parseTokenAnswer(r.body, c.path, now);
    g_tokens[key] = t;
    return t.accessToken;
}

void clearGoogleTokenCache()
{
    std::lock_guard lock(g_tokenMutex);
    g_tokens.clear();
}

} // namespace ckpt::io::remote
