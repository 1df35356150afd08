#include "io/remote/remote_object.h"

#include "io/bytes.h"
#include "io/error.h"
#include "io/remote/aws_config.h"
#include "io/remote/aws_credentials.h"
#include "io/remote/http_headers.h"
#include "io/remote/sigv4.h"
#include "io/remote/stores.h"

#include <ctime>

namespace ckpt::io::remote {

namespace {

constexpr uint64_t kMaxListingPage = 16u << 20;
constexpr size_t kMaxListed = 1000000;

std::string reason(long status)
{
    switch (status) {
    case 200:
        return "OK";
    case 206:
        return "Partial Content";
    case 301:
        return "Moved Permanently";
    case 400:
        return "Bad Request";
    case 401:
        return "Unauthorized";
    case 403:
        return "Forbidden";
    case 404:
        return "Not Found";
    case 412:
        return "Precondition Failed";
    case 416:
        return "Range Not Satisfiable";
    case 429:
        return "Too Many Requests";
    case 500:
        return "Internal Server Error";
    case 502:
        return "Bad Gateway";
    case 503:
        return "Service Unavailable";
    case 504:
        return "Gateway Timeout";
    default:
        return {};
    }
}

std::string rangeText(ByteRange r)
{
    return "bytes " + std::to_string(r.offset) + "-" + std::to_string(r.offset + r.size - 1);
}

// Plain HTTP(S): the URL is the object; nothing is signed and nothing can be listed.
class HttpStore : public Store
{
public:
    HttpRequest request(const Url& url, const HeaderList&) const override
    {
        HttpRequest q;
        q.url = url.text;
        return q;
    }
};

// S3 and S3-compatible stores: SigV4, virtual-host addressing on AWS, path-style on a custom
// endpoint (moto, MinIO, Ceph: their buckets are rarely DNS names).
class S3Store : public Store
{
public:
    explicit S3Store(S3Settings s) : m_s(std::move(s)) {}

    HttpRequest request(const Url& url, const HeaderList& query) const override
    {
        const Target t = target(url);
        HttpRequest q;
        q.url = t.url + (query.empty() ? std::string() : "?" + canonicalQuery(query));
        // Fetched here, outside the transfer loop, so a failing credential_process is this
        // request's Error; the cache keeps them valid for longer than the request's retries.
        const AwsCredentials creds = m_s.dynamic ? currentAwsCredentials(*m_s.dynamic) : m_s.credentials;
        q.sign = [t, query, region = m_s.region, creds] {
            SigningRequest r;
            r.host = t.host;
            r.canonicalUri = t.canonicalUri;
            r.query = query;
            r.region = region;
            r.when = std::time(nullptr);
            return signV4(r, creds);
        };
        return q;
    }

    // The key id goes with the source: with fetched credentials it tells which role or key a
    // 403 was for (an access key id is no secret; S3's own error bodies show it).
    std::string credentialNote() const override
    {
        AwsCredentials c = m_s.credentials;
        if (m_s.dynamic) {
            try {
                c = currentAwsCredentials(*m_s.dynamic); // cached by the request that failed
            } catch (const Error&) {
            }
        }
        return "credentials: " + c.source + (c.anonymous() ? std::string() : ", key " + c.accessKey) +
               ", region " + m_s.region +
               (m_s.endpoint.empty() ? std::string() : ", endpoint " + m_s.endpoint);
    }

    ListPage list(const Url& prefix, bool oneLevel, const CancelToken* cancel) const override;

private:
    struct Target
    {
        std::string url, host, canonicalUri;
    };
    Target target(const Url& u) const;

    S3Settings m_s;
};

S3Store::Target S3Store::target(const Url& u) const
{
    Target t;
    const std::string key = uriEncode(u.key, true);
    if (m_s.endpoint.empty()) {
        t.host = u.authority + ".s3." + m_s.region + ".amazonaws.com";
        t.canonicalUri = "/" + key;
        t.url = "https://" + t.host + t.canonicalUri;
        return t;
    }
    const auto schemeEnd = m_s.endpoint.find("://");
    if (schemeEnd == std::string::npos)
        throw Error("the S3 endpoint '" + m_s.endpoint + "' is not an http:// or https:// URL", u.text);
    const std::string scheme = m_s.endpoint.substr(0, schemeEnd);
    std::string rest = m_s.endpoint.substr(schemeEnd + 3);
    const auto slash = rest.find('/');
    const std::string base = slash == std::string::npos ? std::string() : rest.substr(slash);
    t.host = rest.substr(0, slash);
    // curl leaves a default port out of Host:, and the signature must see what is sent.
    const std::string defaultPort = scheme == "https" ? ":443" : ":80";
    if (t.host.size() > defaultPort.size() && t.host.ends_with(defaultPort))
        t.host.resize(t.host.size() - defaultPort.size());
    t.canonicalUri = base + "/" + uriEncode(u.authority, false) + (u.key.empty() ? "" : "/" + key);
    t.url = scheme + "://" + t.host + t.canonicalUri;
    return t;
}

ListPage S3Store::list(const Url& prefix, bool oneLevel, const CancelToken* cancel) const
{
    return listObjectsV2(*this, prefix, oneLevel, cancel);
}

} // namespace

void checkListingAnswer(const HttpResponse& r, const std::string& url, const Store& store)
{
    if (!r.failure.empty() || r.status != 200) failWith(r, url, store);
    if (r.overflow) throw Error("a listing page larger than 16 MiB was refused", url);
}

void appendPage(ListPage& all, ListPage& page, const std::string& url)
{
    for (auto& o : page.objects)
        all.objects.push_back(std::move(o));
    for (auto& p : page.prefixes)
        all.prefixes.push_back(std::move(p));
    if (all.objects.size() + all.prefixes.size() > kMaxListed)
        throw Error("more than a million objects under this prefix", url);
}

ListPage listObjectsV2(const Store& store, const Url& prefix, bool oneLevel, const CancelToken* cancel)
{
    Url bucket = prefix;
    bucket.key.clear();
    ListPage all;
    std::string token;
    do {
        HeaderList query{{"list-type", "2"}, {"prefix", prefix.key}};
        if (oneLevel) query.emplace_back("delimiter", "/");
        if (!token.empty()) query.emplace_back("continuation-token", token);
        std::vector<HttpRequest> q{store.request(bucket, query)};
        q[0].maxBody = kMaxListingPage;
        const HttpResponse r = Transport::shared().perform(q, cancel).front();
        checkListingAnswer(r, prefix.text, store);
        ListPage page = parseListPage(r.body, prefix.text);
        appendPage(all, page, prefix.text);
        token = page.truncated ? page.continuationToken : std::string();
    } while (!token.empty());
    return all;
}

ListPage Store::list(const Url& prefix, bool, const CancelToken*) const
{
    throw Error("an HTTP server cannot list a folder; name a file", prefix.text);
}

std::shared_ptr<const Store> Store::forUrl(const Url& url)
{
    switch (url.scheme) {
    case Scheme::Http:
    case Scheme::Https: {
        static const auto http = std::make_shared<HttpStore>();
        return http;
    }
    case Scheme::S3:
        // Read afresh per object (two small files): a changed profile or key applies at once.
        return std::make_shared<S3Store>(resolveS3Settings());
    case Scheme::Gcs:
        return gcsStore();
    case Scheme::HuggingFace:
        return hubStore();
    }
    throw Error("unknown URL scheme", url.text);
}

std::shared_ptr<const Store> makeS3Store(S3Settings settings)
{
    return std::make_shared<S3Store>(std::move(settings));
}

std::string describeAnswer(const HttpResponse& r)
{
    if (!r.failure.empty())
        return "no answer from the server (" + r.failure + ") after " + std::to_string(r.attempts) +
               (r.attempts == 1 ? " attempt" : " attempts");
    std::string s = "the server answered " + std::to_string(r.status);
    if (const std::string why = reason(r.status); !why.empty()) s += " " + why;
    const S3ErrorBody e = parseErrorBody(r.body);
    if (!e.code.empty()) s += " (" + e.code + (e.message.empty() ? "" : ": " + e.message) + ")";
    if (r.attempts > 1) s += " after " + std::to_string(r.attempts) + " attempts";
    return s;
}

void failWith(const HttpResponse& r, const std::string& url, const Store& store)
{
    std::string msg = describeAnswer(r);
    const std::string note = store.credentialNote();
    if (!note.empty() && (r.status == 400 || r.status == 401 || r.status == 403 || r.status == 404))
        msg += "; " + note;
    throw Error(msg, url);
}

// The first answer for an object: pins its size and validator. Throws Error naming the URL.
void RemoteObject::adoptFirst(const HttpResponse& r, uint64_t asked)
{
    ++m_requests;
    m_fetched += r.received;
    if (!r.failure.empty() || (r.status != 200 && r.status != 206)) failWith(r, m_url.text, *m_store);
    if (const auto it = r.headers.find("etag"); it != r.headers.end())
        m_etag = parseEtag(it->second).value_or("");
    if (const auto it = r.headers.find("last-modified"); it != r.headers.end()) m_lastModified = it->second;
    const auto cr = r.headers.find("content-range");
    if (cr != r.headers.end()) {
        const auto range = parseContentRange(cr->second);
        if (!range || !range->total || range->first != 0 || range->last + 1 != r.received)
            throw Error("the server answered a malformed Content-Range '" + cr->second + "' for bytes 0-" +
                            std::to_string(asked - 1),
                        m_url.text);
        m_size = *range->total;
    } else if (r.status == 206 || r.overflow) {
        // 200 and more than asked: the server sends whole objects; refuse before it sends more.
        throw Error("the server ignores byte ranges (it answered " + std::to_string(r.status) +
                        " with more than the " + std::to_string(asked) +
                        " bytes asked for); reading a checkpoint through it would download it whole",
                    m_url.text);
    } else {
        m_size = r.received; // a small object sent whole: all of it is here
    }
}

std::vector<OpenedObject> RemoteObject::openMany(const std::vector<OpenPlan>& plans, uint64_t head,
                                                 uint64_t tail, const CancelToken* cancel)
{
    std::vector<OpenedObject> out(plans.size());
    std::vector<HttpRequest> q;
    std::vector<std::pair<size_t, ByteRange>> owner; // request -> (plan, range)
    for (size_t i = 0; i < plans.size(); ++i) {
        try {
            out[i].object.reset(new RemoteObject);
            RemoteObject& o = *out[i].object;
            o.m_url = parseUrl(plans[i].url);
            o.m_store = Store::forUrl(o.m_url);
            const uint64_t known = plans[i].knownSize;
            // The head, and a zip's directory at the end when the size says where that is; one
            // request for the whole of a small object, so no byte comes twice.
            std::vector<ByteRange> ranges{{0, known && known <= head + tail ? known : head}};
            if (known > head + tail && tail) ranges.push_back({known - tail, tail});
            for (const ByteRange r : ranges) {
                out[i].pieces.push_back({r.offset, std::vector<uint8_t>(r.size)});
                HttpRequest req = o.m_store->request(o.m_url);
                req.headers.emplace_back("Range", "bytes=" + std::to_string(r.offset) + "-" +
                                                      std::to_string(r.offset + r.size - 1));
                q.push_back(std::move(req));
                owner.push_back({i, r});
            }
        } catch (const Error& e) {
            out[i].error = e;
        }
    }
    // Sinks point into the pieces, which no longer move.
    for (size_t k = 0, n = 0; k < q.size(); ++k) {
        auto& pieces = out[owner[k].first].pieces;
        n = (k > 0 && owner[k - 1].first == owner[k].first) ? n + 1 : 0;
        q[k].sink = pieces[n].second.data();
        q[k].sinkSize = q[k].maxBody = pieces[n].second.size();
    }
    const std::vector<HttpResponse> resp = Transport::shared().perform(q, cancel);
    for (size_t k = 0; k < resp.size(); ++k) {
        OpenedObject& o = out[owner[k].first];
        const bool first = k == 0 || owner[k - 1].first != owner[k].first;
        if (o.error) continue;
        try {
            if (first) {
                o.object->adoptFirst(resp[k], owner[k].second.size);
                o.pieces.front().second.resize(resp[k].received);
            } else {
                ++o.object->m_requests;
                o.object->m_fetched += resp[k].received;
                o.object->check(resp[k], owner[k].second); // the same version as the head
            }
        } catch (const Error& e) {
            o.error = e;
        }
    }
    return out;
}

std::shared_ptr<RemoteObject> RemoteObject::open(const std::string& url, uint64_t head,
                                                 std::vector<uint8_t>& headBytes, const CancelToken* cancel)
{
    std::vector<OpenedObject> o = openMany({{url, 0}}, head, 0, cancel);
    if (o[0].error) throw *o[0].error;
    headBytes = std::move(o[0].pieces.front().second);
    return o[0].object;
}

HttpRequest RemoteObject::rangeRequest(ByteRange r, uint8_t* dest) const
{
    HttpRequest q = m_store->request(m_url);
    q.headers.emplace_back("Range",
                           "bytes=" + std::to_string(r.offset) + "-" + std::to_string(r.offset + r.size - 1));
    // A weak ETag never matches If-Match (strong comparison), so only a strong one is sent;
    // either way every answer's ETag is compared below, for servers that ignore If-Match.
    if (!m_etag.empty() && m_etag.rfind("W/", 0) != 0)
        q.headers.emplace_back("If-Match", m_etag);
    else if (m_etag.empty() && !m_lastModified.empty())
        q.headers.emplace_back("If-Unmodified-Since", m_lastModified);
    q.sink = dest;
    q.sinkSize = q.maxBody = r.size;
    return q;
}

void RemoteObject::check(const HttpResponse& resp, ByteRange r) const
{
    const std::string what = rangeText(r);
    const auto changed = [&](const std::string& how) {
        throw Error("the object changed while it was being read (" + how + "); reopen it", m_url.text);
    };
    if (resp.status == 412) changed("its ETag is no longer " + validator() + ": the server answered 412");
    if (!resp.failure.empty() || (resp.status != 200 && resp.status != 206)) {
        try {
            failWith(resp, m_url.text, *m_store);
        } catch (const Error& e) {
            throw Error(e.message() + " for " + what, m_url.text);
        }
    }
    const auto header = [&](const char* name) {
        const auto it = resp.headers.find(name);
        return it == resp.headers.end() ? std::string() : it->second;
    };
    if (const std::string enc = header("content-encoding"); !enc.empty() && enc != "identity")
        throw Error("the server sent " + what + " compressed (Content-Encoding: " + enc + ")", m_url.text);
    if (const std::string etag = header("etag"); !m_etag.empty() && !etag.empty() && etag != m_etag)
        changed("its ETag was " + m_etag + " and is now " + etag);
    if (const std::string lm = header("last-modified");
        m_etag.empty() && !m_lastModified.empty() && !lm.empty() && lm != m_lastModified)
        changed("Last-Modified was " + m_lastModified + " and is now " + lm);
    const std::string crText = header("content-range");
    if (crText.empty())
        throw Error("the server ignores byte ranges (it answered " + std::to_string(resp.status) +
                        " with no Content-Range to a request for " + what + " of " + std::to_string(m_size) +
                        ")",
                    m_url.text);
    const auto cr = parseContentRange(crText);
    if (!cr)
        throw Error("the server answered a malformed Content-Range '" + crText + "' for " + what, m_url.text);
    if (cr->total && *cr->total != m_size)
        changed("its size was " + std::to_string(m_size) + " and is now " + std::to_string(*cr->total));
    if (cr->first != r.offset || cr->last != r.offset + r.size - 1)
        throw Error("the server answered '" + crText + "' to a request for " + what, m_url.text);
    if (resp.overflow) throw Error("the server sent more bytes than the " + what + " asked for", m_url.text);
    if (resp.received != r.size)
        throw Error("the server sent " + std::to_string(resp.received) + " of the " + std::to_string(r.size) +
                        " bytes of " + what,
                    m_url.text);
}

void RemoteObject::read(const std::vector<ByteRange>& ranges, const std::vector<uint8_t*>& dest,
                        const CancelToken* cancel) const
{
    std::vector<HttpRequest> q;
    q.reserve(ranges.size());
    for (size_t i = 0; i < ranges.size(); ++i) {
        if (!rangeFits(ranges[i].offset, ranges[i].size, m_size) || ranges[i].size == 0)
            throw Error(rangeText(ranges[i]) + " lie outside the object (" + std::to_string(m_size) +
                            " bytes)",
                        m_url.text);
        q.push_back(rangeRequest(ranges[i], dest[i]));
    }
    const std::vector<HttpResponse> resp = Transport::shared().perform(q, cancel);
    for (size_t i = 0; i < resp.size(); ++i) {
        m_requests += uint64_t(resp[i].attempts);
        m_fetched += resp[i].received;
    }
    for (size_t i = 0; i < resp.size(); ++i)
        check(resp[i], ranges[i]);
}

} // namespace ckpt::io::remote
