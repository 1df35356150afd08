// HTTP(S) exchanges over libcurl's multi interface: a batch of requests runs concurrently
// (bounded), each retried on what may pass later (5xx, 429, dropped or stalled connections)
// with full-jitter back-off that honours Retry-After. It says what the server answered and
// never judges it: remote_object.cpp decides what a status or header means.
#pragma once

#include "io/job.h"
#include "io/remote/sigv4.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ckpt::io::remote {

struct HttpRequest
{
    std::string url;
    std::string method = "GET"; // GET or HEAD; PUT and POST (with body) for credential services
    HeaderList headers;
    std::string body; // sent with PUT and POST (a form, for OAuth token endpoints)
    // Called before every attempt, so a retry is signed afresh (SigV4 dates expire).
    std::function<HeaderList()> sign;
    // A success body goes to sink (at most sinkSize bytes) or, without a sink, to the response's
    // body; one byte more than maxBody ends the transfer and sets overflow, so a server that
    // ignores ranges or never stops costs bounded memory and time.
    uint8_t* sink = nullptr;
    uint64_t sinkSize = 0;
    uint64_t maxBody = 1u << 20;
};

struct HttpResponse
{
    long status = 0;
    std::map<std::string, std::string> headers; // lower-case names, the final response's
    std::string body;                           // success body without a sink, or an error body (capped)
    uint64_t received = 0;                      // body bytes, sink or not
    bool overflow = false;
    std::string failure; // a transport error (connect, timeout, reset) after the last attempt
    int attempts = 0;
    std::string effectiveUrl;
};

struct TransportOptions
{
    int maxConnections = 16;
    long maxRedirects = 8;
    long connectTimeoutSeconds = 10;
    long stallSeconds = 30; // a transfer that moves no byte for this long is dropped (and retried)
    int maxAttempts = 5;
    double errorBaseDelay = 0.05;   // seconds; doubled per attempt, full jitter
    double throttleBaseDelay = 0.5; // for 429 and 503 (SlowDown)
    double maxDelay = 20;
    std::string caFile; // CKPT_CA_BUNDLE, else SSL_CERT_FILE, else the system's
};

// The defaults with the environment's overrides: CKPT_REMOTE_CONNECTIONS,
// CKPT_REMOTE_STALL_SECONDS, CKPT_REMOTE_ATTEMPTS, CKPT_CA_BUNDLE / SSL_CERT_FILE.
TransportOptions transportOptionsFromEnv();

struct TransportStats
{
    uint64_t attempts = 0;
    uint64_t bodyBytes = 0;
};

class Transport
{
public:
    explicit Transport(TransportOptions options = transportOptionsFromEnv());
    ~Transport();
    Transport(const Transport&) = delete;
    Transport& operator=(const Transport&) = delete;

    // One response per request, in order. Throws Cancelled when `cancel` or the token of the
    // calling thread's job (io/fetch_watch.h) fires, transfers in flight aborted first; tells
    // that job's watch the bytes as they arrive. Never throws for what a server answered.
    // Thread-safe: batches from several threads run at once, sharing connections.
    std::vector<HttpResponse> perform(std::vector<HttpRequest>& requests,
                                      const CancelToken* cancel = nullptr);
    TransportStats stats() const;
    const TransportOptions& options() const { return m_options; }

    // The process's transport: one connection pool shared by every remote object.
    static Transport& shared();

private:
    struct Impl;
    TransportOptions m_options;
    std::unique_ptr<Impl> m_impl;
};

// For credential services (token endpoints, container and instance metadata): no redirects (a
// secret in a body or header must not follow one to another host) and few attempts; with
// `instanceMetadata`, a 1 s connect timeout and one attempt, as botocore does, so a machine off
// EC2 pays at most a second once.
Transport& credentialTransport(bool instanceMetadata);

} // namespace ckpt::io::remote
