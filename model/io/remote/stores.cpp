#include "io/remote/stores.h"

#include "io/error.h"
#include "io/remote/google_auth.h"
#include "io/remote/transport.h"

#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <sstream>

namespace ckpt::io::remote {

namespace {

constexpr uint64_t kMaxTreePage = 16u << 20;

std::string withoutTrailingSlash(std::string s)
{
    while (!s.empty() && s.back() == '/')
        s.pop_back();
    return s;
}

// "http(s)://host[:port][/base]" from an endpoint setting, refused naming `url` otherwise.
std::string endpointOf(const std::string& value, const char* setting, const std::string& url)
{
    if (value.rfind("http://", 0) != 0 && value.rfind("https://", 0) != 0)
        throw Error(std::string(setting) + "='" + value + "' is not an http:// or https:// URL", url);
    return withoutTrailingSlash(value);
}

std::string envOr(const EnvLookup& env, const char* name, const std::string& fallback)
{
    const auto v = env(name);
    return v && !v->empty() ? *v : fallback;
}

// GCS with an OAuth 2 access token: path-style XML API requests with a bearer header, and its
// ListObjectsV2 for folders. The token is asked for per request: one from a credentials file
// expires within the hour, and google_auth.cpp's cache renews it.
class GcsTokenStore final : public Store
{
public:
    using TokenSource = std::function<std::string()>;
    GcsTokenStore(std::string endpoint, TokenSource token, std::string source)
        : m_endpoint(std::move(endpoint)), m_token(std::move(token)), m_source(std::move(source))
    {
    }

    HttpRequest request(const Url& url, const HeaderList& query) const override
    {
        HttpRequest q;
        q.url = m_endpoint + "/" + uriEncode(url.authority, false) +
                (url.key.empty() ? "" : "/" + uriEncode(url.key, true));
        if (!query.empty()) {
            std::string qs;
            for (const auto& [k, v] : query)
                qs += (qs.empty() ? "?" : "&") + uriEncode(k, false) + "=" + uriEncode(v, false);
            q.url += qs;
        }
        q.headers.emplace_back("Authorization", "Bearer " + m_token());
        return q;
    }
    std::string credentialNote() const override
    {
        return "credentials: " + m_source + ", endpoint " + m_endpoint;
    }
    ListPage list(const Url& prefix, bool oneLevel, const CancelToken* cancel) const override
    {
        return listObjectsV2(*this, prefix, oneLevel, cancel);
    }

private:
    std::string m_endpoint;
    TokenSource m_token;
    std::string m_source;
};

// The Hub: a file is its resolve URL (which redirects large files to a CDN; the bearer header is
// not sent on to another host), a folder the tree API's pages.
class HubStore final : public Store
{
public:
    HubStore(std::string endpoint, std::string token, std::string source)
        : m_endpoint(std::move(endpoint)), m_token(std::move(token)), m_source(std::move(source))
    {
    }

    HttpRequest request(const Url& url, const HeaderList&) const override
    {
        HttpRequest q;
        q.url = m_endpoint + "/" + url.authority + "/resolve/" + uriEncode(revision(url), false) + "/" +
                uriEncode(url.key, true);
        authorize(q);
        return q;
    }
    std::string credentialNote() const override { return "token: " + m_source + ", endpoint " + m_endpoint; }

    ListPage list(const Url& prefix, bool oneLevel, const CancelToken* cancel) const override
    {
        const std::string folder = withoutTrailingSlash(prefix.key);
        std::string next = m_endpoint + "/api/models/" + prefix.authority + "/tree/" +
                           uriEncode(revision(prefix), false) +
                           (folder.empty() ? "" : "/" + uriEncode(folder, true)) +
                           "?recursive=" + (oneLevel ? "false" : "true") + "&expand=false";
        ListPage all;
        for (int page = 0; !next.empty(); ++page) {
            HttpRequest q;
            q.url = next;
            q.maxBody = kMaxTreePage;
            authorize(q);
            std::vector<HttpRequest> qs{q};
            const HttpResponse r = Transport::shared().perform(qs, cancel).front();
            // A folder the repository does not have: an empty listing, as S3 gives for a prefix.
            // (Only that: a missing revision or repository is said as the Hub says it.)
            const auto code = r.headers.find("x-error-code");
            if (r.status == 404 && r.failure.empty() && page == 0 && !folder.empty() &&
                code != r.headers.end() && code->second == "EntryNotFound")
                return all;
            checkListingAnswer(r, prefix.text, *this);
            ListPage p = parseHubTree(r.body, prefix.text);
            appendPage(all, p, prefix.text);
            const auto link = r.headers.find("link");
            next = link == r.headers.end() ? std::string() : nextLink(link->second);
            if (!next.empty() && next.rfind(m_endpoint + "/", 0) != 0)
                throw Error("the Hub's next page is on another server (" + next + ")", prefix.text);
        }
        // With a folder asked, the tree API gives paths from the repository's root, as S3 keys are.
        return all;
    }

private:
    static std::string revision(const Url& u) { return u.revision.empty() ? "main" : u.revision; }
    void authorize(HttpRequest& q) const
    {
        if (!m_token.empty()) q.headers.emplace_back("Authorization", "Bearer " + m_token);
    }

    std::string m_endpoint, m_token, m_source;
};

std::string readTokenFile(const std::string& path)
{
    std::ifstream f(path);
    if (!f) return {};
    std::string token;
    std::getline(f, token);
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t'))
        token.pop_back();
    return token;
}

// The credentials file and what named it: GOOGLE_APPLICATION_CREDENTIALS, else gcloud's
// application default credentials ($CLOUDSDK_CONFIG, else ~/.config/gcloud) when that file exists.
std::optional<std::pair<std::string, std::string>> googleCredentialsFile(const EnvLookup& env)
{
    if (const auto file = env("GOOGLE_APPLICATION_CREDENTIALS"); file && !file->empty())
        return std::pair{*file, std::string("GOOGLE_APPLICATION_CREDENTIALS")};
    const std::string dir = envOr(env, "CLOUDSDK_CONFIG", envOr(env, "HOME", "") + "/.config/gcloud");
    const std::string adc = dir + "/application_default_credentials.json";
    if (std::ifstream(adc).good())
        return std::pair{adc, std::string("gcloud application default credentials")};
    return std::nullopt;
}

} // namespace

std::shared_ptr<const Store> gcsStore(const EnvLookup& env)
{
    const std::string endpoint = endpointOf(envOr(env, "CKPT_GCS_ENDPOINT", "https://storage.googleapis.com"),
                                            "CKPT_GCS_ENDPOINT", "gs://");
    const auto id = env("GS_ACCESS_KEY_ID"), secret = env("GS_SECRET_ACCESS_KEY");
    if (id && !id->empty()) {
        if (!secret || secret->empty())
            throw Error("GS_ACCESS_KEY_ID is set but GS_SECRET_ACCESS_KEY is not (an HMAC key has both)",
                        "gs://");
        S3Settings s;
        s.credentials.accessKey = *id;
        s.credentials.secretKey = *secret;
        s.credentials.source = "HMAC key from the environment (GS_ACCESS_KEY_ID)";
        s.region = "auto"; // what GCS expects in a SigV4 scope
        s.endpoint = endpoint;
        return makeS3Store(std::move(s));
    }
    if (const auto token = env("GOOGLE_OAUTH_ACCESS_TOKEN"); token && !token->empty())
        return std::make_shared<GcsTokenStore>(
            endpoint, [t = *token] { return t; }, "OAuth token from GOOGLE_OAUTH_ACCESS_TOKEN");
    if (auto file = googleCredentialsFile(env)) {
        // Read now, so a broken file is this URL's error; the token is fetched on first use.
        GoogleCredentials c;
        try {
            c = readGoogleCredentials(file->first, envOr(env, "CKPT_GOOGLE_TOKEN_URI", kGoogleTokenUri));
        } catch (const Error& e) {
            throw Error(e.message() + " (named by " + file->second + ")", e.file());
        }
        return std::make_shared<GcsTokenStore>(
            endpoint, [c] { return googleAccessToken(c); },
            (c.type == "service_account" ? "service account " + c.clientEmail
                                         : std::string("user credentials")) +
                " from " + file->second + " (" + c.path + ")");
    }
    S3Settings s;
    s.region = "auto";
    s.endpoint = endpoint;
    s.credentials.source = "none (anonymous requests: set GOOGLE_APPLICATION_CREDENTIALS, "
                           "GS_ACCESS_KEY_ID/GS_SECRET_ACCESS_KEY or GOOGLE_OAUTH_ACCESS_TOKEN for a "
                           "private bucket)";
    return makeS3Store(std::move(s));
}

std::shared_ptr<const Store> hubStore(const EnvLookup& env)
{
    const std::string endpoint =
        endpointOf(envOr(env, "HF_ENDPOINT", "https://huggingface.co"), "HF_ENDPOINT", "hf://");
    for (const char* name : {"HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"})
        if (const auto t = env(name); t && !t->empty())
            return std::make_shared<HubStore>(endpoint, *t, std::string("environment (") + name + ")");
    std::string file = envOr(env, "HF_TOKEN_PATH", "");
    if (file.empty()) {
        const std::string home = envOr(env, "HF_HOME", envOr(env, "HOME", "") + "/.cache/huggingface");
        file = home + "/token";
    }
    if (std::string t = readTokenFile(file); !t.empty())
        return std::make_shared<HubStore>(endpoint, t, "the token file " + file);
    return std::make_shared<HubStore>(endpoint, std::string(),
                                      "none (anonymous requests: set HF_TOKEN for a private "
                                      "or gated repository)");
}

ListPage parseHubTree(std::string_view json, const std::string& url)
{
    const auto doc = nlohmann::json::parse(json, nullptr, false);
    if (!doc.is_array()) throw Error("the Hub's tree listing is not a JSON array", url);
    ListPage page;
    for (const auto& e : doc) {
        if (!e.is_object() || !e.contains("path") || !e["path"].is_string() || !e.contains("type") ||
            !e["type"].is_string())
            throw Error("the Hub's tree listing holds an entry without a path and a type", url);
        const std::string path = e["path"].get<std::string>();
        if (path.empty() || path.front() == '/' || path.find('\0') != std::string::npos)
            throw Error("the Hub's tree listing names a path '" + path + "' no repository holds", url);
        const std::string type = e["type"].get<std::string>();
        if (type == "directory") {
            page.prefixes.push_back(path + "/");
        } else if (type == "file") {
            ListedObject o;
            o.key = path;
            const auto& size = e.contains("lfs") && e["lfs"].is_object() && e["lfs"].contains("size")
                                   ? e["lfs"]["size"]
                               : e.contains("size") ? e["size"]
                                                    : nlohmann::json();
            if (!size.is_number_unsigned() && !(size.is_number_integer() && size.get<int64_t>() >= 0))
                throw Error("the Hub's tree listing gives '" + path + "' no size", url);
            o.size = size.get<uint64_t>();
            if (e.contains("oid") && e["oid"].is_string()) o.etag = e["oid"].get<std::string>();
            page.objects.push_back(std::move(o));
        } else {
            throw Error("the Hub's tree listing has an entry of type '" + type + "'", url);
        }
    }
    return page;
}

std::string nextLink(const std::string& header)
{
    // <https://huggingface.co/api/models/o/r/tree/main?cursor=abc>; rel="next", <...>; rel="prev"
    size_t at = 0;
    while ((at = header.find('<', at)) != std::string::npos) {
        const size_t close = header.find('>', at);
        if (close == std::string::npos) return {};
        const size_t end = header.find(',', close);
        const std::string params =
            header.substr(close + 1, end == std::string::npos ? std::string::npos : end - close - 1);
        if (params.find("rel=\"next\"") != std::string::npos || params.find("rel=next") != std::string::npos)
            return header.substr(at + 1, close - at - 1);
        at = close;
    }
    return {};
}

} // namespace ckpt::io::remote
