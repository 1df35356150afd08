#include "io/remote/transport.h"

#include "io/fetch_watch.h"
#include "io/remote/http_headers.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <curl/curl.h>
#include <deque>
#include <random>
#include <thread>

namespace ckpt::io::remote {

namespace {

using Clock = std::chrono::steady_clock;

// One request's state across its attempts.
struct Exchange
{
    HttpRequest* request = nullptr;
    HttpResponse response;
    CURL* easy = nullptr;
    curl_slist* headerList = nullptr;
    Clock::time_point due{};
    bool statusKnown = false;
    bool errorBody = false;
    uint64_t* waveReceived = nullptr; // the batch's count of body bytes, for the job's progress
};

long envLong(const char* name, long fallback)
{
    const char* v = std::getenv(name);
    if (!v || !*v) return fallback;
    char* end = nullptr;
    const long n = std::strtol(v, &end, 10);
    return end && *end == 0 && n > 0 ? n : fallback;
}

size_t onHeader(char* data, size_t size, size_t count, void* user)
{
    auto* x = static_cast<Exchange*>(user);
    addHeaderLine(x->response.headers, std::string_view(data, size * count));
    return size * count;
}

// The first body byte tells whether this is the answer we asked for (2xx: into the sink) or an
// error document (kept, capped, for the message).
size_t onBody(char* data, size_t size, size_t count, void* user)
{
    auto* x = static_cast<Exchange*>(user);
    const size_t n = size * count;
    if (!x->statusKnown) {
        long status = 0;
        curl_easy_getinfo(x->easy, CURLINFO_RESPONSE_CODE, &status);
        x->errorBody = status < 200 || status >= 300;
        x->statusKnown = true;
    }
    HttpResponse& r = x->response;
    if (x->errorBody) {
        if (r.body.size() < (64u << 10))
            r.body.append(data, std::min<size_t>(n, (64u << 10) - r.body.size()));
        return n;
    }
    const HttpRequest& q = *x->request;
    if (r.received + n > q.maxBody) {
        r.overflow = true;
        return 0; // ends the transfer: no more of an answer larger than asked is read
    }
    if (q.sink) {
        if (r.received + n > q.sinkSize) {
            r.overflow = true;
            return 0;
        }
        std::copy(data, data + n, q.sink + r.received);
    } else {
        r.body.append(data, n);
    }
    r.received += n;
    if (x->waveReceived) *x->waveReceived += n;
    return n;
}

bool retryableStatus(long status)
{
    return status == 408 || status == 429 || status == 500 || status == 502 || status == 503 || status == 504;
}

bool retryableCurl(CURLcode c)
{
    switch (c) {
    case CURLE_COULDNT_CONNECT:
    case CURLE_OPERATION_TIMEDOUT:
    case CURLE_PARTIAL_FILE:
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
    case CURLE_SSL_CONNECT_ERROR:
        return true;
    default:
        return false;
    }
}

struct CurlGlobal
{
    CurlGlobal() { curl_global_init(CURL_GLOBAL_DEFAULT); }
};

} // namespace

TransportOptions transportOptionsFromEnv()
{
    TransportOptions o;
    o.maxConnections = int(envLong("CKPT_REMOTE_CONNECTIONS", o.maxConnections));
    o.stallSeconds = envLong("CKPT_REMOTE_STALL_SECONDS", o.stallSeconds);
    o.maxAttempts = int(envLong("CKPT_REMOTE_ATTEMPTS", o.maxAttempts));
    for (const char* var : {"CKPT_CA_BUNDLE", "SSL_CERT_FILE"})
        if (const char* v = std::getenv(var); v && *v && o.caFile.empty()) o.caFile = v;
    return o;
}

// Connections, DNS answers and TLS sessions are shared by every batch (CURLSH), so a batch
// reuses what the previous one opened; each batch has a multi handle of its own, so batches
// from different threads run side by side.
struct Transport::Impl
{
    CURLSH* share = nullptr;
    std::mutex shareLocks[CURL_LOCK_DATA_LAST];
    std::mutex poolMutex;
    std::vector<CURL*> idle; // easy handles kept for reuse
    std::mutex rngMutex;
    std::mt19937_64 rng{std::random_device{}()};
    std::atomic<uint64_t> attempts{0};
    std::atomic<uint64_t> bodyBytes{0};

    static void lock(CURL*, curl_lock_data d, curl_lock_access, void* self)
    {
        static_cast<Impl*>(self)->shareLocks[d].lock();
    }
    static void unlock(CURL*, curl_lock_data d, void* self)
    {
        static_cast<Impl*>(self)->shareLocks[d].unlock();
    }

    CURL* take();
    void give(CURL* e);
    void setup(Exchange& x, const TransportOptions& o);
    double delayFor(const Exchange& x, const TransportOptions& o);
    bool finish(Exchange& x, CURLcode code, const TransportOptions& o);
};

CURL* Transport::Impl::take()
{
    std::lock_guard lock(poolMutex);
    if (idle.empty()) return curl_easy_init();
    CURL* e = idle.back();
    idle.pop_back();
    curl_easy_reset(e);
    return e;
}

void Transport::Impl::give(CURL* e)
{
    std::lock_guard lock(poolMutex);
    idle.push_back(e);
}

void Transport::Impl::setup(Exchange& x, const TransportOptions& o)
{
    if (!x.easy) x.easy = take();
    const HttpRequest& q = *x.request;
    const int attempt = x.response.attempts;
    x.response = HttpResponse{};
    x.response.attempts = attempt + 1;
    x.statusKnown = false;
    curl_slist_free_all(x.headerList);
    x.headerList = nullptr;
    HeaderList headers = q.headers;
    if (q.sign) {
        const HeaderList s = q.sign();
        headers.insert(headers.end(), s.begin(), s.end());
    }
    headers.emplace_back("Accept-Encoding", "identity"); // a compressed body is not the bytes asked for
    for (const auto& [k, v] : headers)
        x.headerList = curl_slist_append(x.headerList, (k + ": " + v).c_str());
    CURL* e = x.easy;
    curl_easy_setopt(e, CURLOPT_SHARE, share);
    curl_easy_setopt(e, CURLOPT_URL, q.url.c_str());
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, x.headerList);
    if (q.method == "HEAD") curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
    if (q.method == "PUT" || q.method == "POST") {
        // A body from memory, its length given: curl sends Content-Length and no chunking, which
        // IMDS (an empty PUT) and token endpoints expect.
        curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(q.body.size()));
        curl_easy_setopt(e, CURLOPT_POSTFIELDS, q.body.c_str());
        if (q.method == "PUT") curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(e, CURLOPT_MAXREDIRS, o.maxRedirects);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT, o.connectTimeoutSeconds);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME, o.stallSeconds);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    if (!o.caFile.empty()) curl_easy_setopt(e, CURLOPT_CAINFO, o.caFile.c_str());
    curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &onHeader);
    curl_easy_setopt(e, CURLOPT_HEADERDATA, &x);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &onBody);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &x);
    curl_easy_setopt(e, CURLOPT_PRIVATE, &x);
}

// Full jitter (AWS's advice): uniform in [0, base * 2^(attempt-1)], capped; a server's
// Retry-After wins when it asks for longer, up to the cap.
double Transport::Impl::delayFor(const Exchange& x, const TransportOptions& o)
{
    const long s = x.response.status;
    const double base = (s == 429 || s == 503) ? o.throttleBaseDelay : o.errorBaseDelay;
    const double ceiling = std::min(o.maxDelay, base * std::pow(2.0, x.response.attempts - 1));
    double d = 0;
    {
        std::lock_guard lock(rngMutex);
        d = std::uniform_real_distribution<double>(0, ceiling)(rng);
    }
    for (const char* h : {"retry-after", "x-amz-retry-after"}) {
        const auto it = x.response.headers.find(h);
        if (it == x.response.headers.end()) continue;
        if (const auto ra = parseRetryAfter(it->second)) d = std::max(d, std::min(*ra, o.maxDelay));
    }
    return d;
}

// True when the exchange is over (answered, or out of attempts); false when it goes again.
bool Transport::Impl::finish(Exchange& x, CURLcode code, const TransportOptions& o)
{
    HttpResponse& r = x.response;
    curl_easy_getinfo(x.easy, CURLINFO_RESPONSE_CODE, &r.status);
    if (char* u = nullptr; curl_easy_getinfo(x.easy, CURLINFO_EFFECTIVE_URL, &u) == CURLE_OK && u)
        r.effectiveUrl = u;
    bodyBytes += r.received;
    const bool overflowAbort = code == CURLE_WRITE_ERROR && r.overflow;
    if (code != CURLE_OK && !overflowAbort) r.failure = curl_easy_strerror(code);
    const bool again = (code != CURLE_OK && !overflowAbort && retryableCurl(code)) ||
                       (code == CURLE_OK && retryableStatus(r.status));
    if (!again || r.attempts >= o.maxAttempts) return true;
    const double delay = delayFor(x, o);
    x.due = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(delay));
    // Said at once, so a slow or throttling server reads as that and not as a frozen line.
    if (const FetchWatch* w = FetchWatch::current())
        w->retrying(x.request->url,
                    r.failure.empty() ? "the server answered " + std::to_string(r.status) : r.failure,
                    r.attempts + 1, o.maxAttempts, delay);
    return false;
}

Transport::Transport(TransportOptions options)
    : m_options(std::move(options)), m_impl(std::make_unique<Impl>())
{
    static CurlGlobal global;
    Impl& m = *m_impl;
    m.share = curl_share_init();
    curl_share_setopt(m.share, CURLSHOPT_LOCKFUNC, &Impl::lock);
    curl_share_setopt(m.share, CURLSHOPT_UNLOCKFUNC, &Impl::unlock);
    curl_share_setopt(m.share, CURLSHOPT_USERDATA, &m);
    for (const auto what : {CURL_LOCK_DATA_CONNECT, CURL_LOCK_DATA_DNS, CURL_LOCK_DATA_SSL_SESSION})
        curl_share_setopt(m.share, CURLSHOPT_SHARE, what);
}

Transport::~Transport()
{
    for (CURL* e : m_impl->idle)
        curl_easy_cleanup(e);
    curl_share_cleanup(m_impl->share);
}

Transport& Transport::shared()
{
    static Transport t;
    return t;
}

Transport& credentialTransport(bool instanceMetadata)
{
    auto options = [](long connect, int attempts) {
        TransportOptions o = transportOptionsFromEnv();
        o.maxRedirects = 0;
        o.connectTimeoutSeconds = connect;
        o.maxAttempts = attempts;
        o.stallSeconds = 10;
        return o;
    };
    static Transport metadata(options(1, 1));
    static Transport services(options(10, 3));
    return instanceMetadata ? metadata : services;
}

TransportStats Transport::stats() const
{
    return {m_impl->attempts.load(), m_impl->bodyBytes.load()};
}

namespace {

// The job's view of one batch (io/fetch_watch.h): whether it was cancelled, and the batch's
// bytes as they arrive, told to the job's listener when they moved.
struct WaveMeter
{
    const CancelToken* cancel;
    const FetchWatch* watch = FetchWatch::current();
    const std::vector<HttpRequest>& requests;
    uint64_t total = 0, received = 0, reported = 0;
    bool started = false;

    WaveMeter(const CancelToken* c, const std::vector<HttpRequest>& q) : cancel(c), requests(q)
    {
        for (const HttpRequest& r : q)
            total += r.sink ? r.sinkSize : 0;
    }
    // The caller's token, and the job's: either stops the batch.
    bool cancelled() const { return (cancel && cancel->cancelled()) || (watch && watch->cancelled()); }
    // After each turn of the transfers: the first says the wave is out (requests sent, answers
    // awaited), the others what arrived since.
    void update()
    {
        if (!watch || requests.empty() || (started && received == reported)) return;
        started = true;
        watch->report(requests.front().url, requests.size(), received - reported, received, total);
        reported = received;
    }
};

// One batch's multi handle, and every easy handle back to the pool however the batch ends.
struct Batch
{
    CURLM* multi = nullptr;
    std::vector<Exchange>& xs;
    std::function<void(CURL*)> give;
    ~Batch()
    {
        for (auto& x : xs) {
            if (!x.easy) continue;
            curl_multi_remove_handle(multi, x.easy);
            give(x.easy);
            curl_slist_free_all(x.headerList);
        }
        curl_multi_cleanup(multi);
    }
};

} // namespace

std::vector<HttpResponse> Transport::perform(std::vector<HttpRequest>& requests, const CancelToken* cancel)
{
    Impl& m = *m_impl;
    WaveMeter meter(cancel, requests);
    std::vector<Exchange> xs(requests.size());
    std::deque<size_t> waiting;
    for (size_t i = 0; i < xs.size(); ++i) {
        xs[i].request = &requests[i];
        xs[i].waveReceived = &meter.received;
        waiting.push_back(i);
    }
    Batch batch{curl_multi_init(), xs, [&m](CURL* e) { m.give(e); }};
    curl_multi_setopt(batch.multi, CURLMOPT_MAX_HOST_CONNECTIONS, long(m_options.maxConnections));
    size_t active = 0, done = 0;
    while (done < xs.size()) {
        // Leaving aborts every transfer in flight (Batch's destructor); the pages they were
        // filling are dropped by the caller (RemoteMapping::fill), so nothing half-fetched stays.
        if (meter.cancelled()) throw Cancelled();
        const auto now = Clock::now();
        auto soonest = now + std::chrono::milliseconds(200);
        for (size_t k = waiting.size(); k-- > 0 && active < size_t(m_options.maxConnections) * 2;) {
            const size_t i = waiting.front();
            waiting.pop_front();
            if (xs[i].due > now) {
                soonest = std::min(soonest, xs[i].due);
                waiting.push_back(i);
                continue;
            }
            m.setup(xs[i], m_options);
            ++m.attempts;
            curl_multi_add_handle(batch.multi, xs[i].easy);
            ++active;
        }
        int running = 0;
        curl_multi_perform(batch.multi, &running);
        meter.update();
        int left = 0;
        while (CURLMsg* msg = curl_multi_info_read(batch.multi, &left)) {
            if (msg->msg != CURLMSG_DONE) continue;
            Exchange* x = nullptr;
            curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, &x);
            const CURLcode code = msg->data.result;
            curl_multi_remove_handle(batch.multi, x->easy);
            --active;
            if (m.finish(*x, code, m_options))
                ++done;
            else
                waiting.push_back(size_t(x - xs.data()));
        }
        if (done == xs.size()) break;
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(soonest - Clock::now()).count();
        if (active > 0)
            curl_multi_poll(batch.multi, nullptr, 0, int(std::clamp<long>(wait, 1, 200)), nullptr);
        else
            std::this_thread::sleep_for(std::chrono::milliseconds(std::clamp<long>(wait, 1, 200)));
    }
    if (meter.cancelled()) throw Cancelled(); // what ended as the token fired is no answer
    std::vector<HttpResponse> out;
    out.reserve(xs.size());
    for (auto& x : xs)
        out.push_back(std::move(x.response));
    return out;
}

} // namespace ckpt::io::remote
