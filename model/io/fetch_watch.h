// What remote transfers answer to: the job that made them. A job lends its cancel token (a
// transfer in flight is aborted when it fires) and a listener for the bytes as they arrive to
// every fetch its thread makes, by installing a FetchWatch::Scope there. io/remote's transport
// consults FetchWatch::current(), so no parser or operation between the job and the transfer
// (MappedFile::ensure, the zip reader, the families) carries either. A thread a job starts to
// read for it takes the watch along: Scope s(FetchWatch::current()) at its top.
#pragma once

#include "io/job.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace ckpt::io {

// One wave of requests (io/remote/transport.h), as it goes.
struct FetchProgress
{
    std::string url;           // the wave's first object
    size_t objects = 0;        // requests in the wave
    uint64_t waveDone = 0;     // body bytes of the wave received so far
    uint64_t waveTotal = 0;    // body bytes asked for (those whose size is known beforehand)
    uint64_t jobFetched = 0;   // body bytes every wave of the job received, this one's so far included
    double bytesPerSecond = 0; // jobFetched over the time since the job's first request
    // Set when a request is to be asked again: why (the server's answer, or the transfer's
    // failure), the attempt next, of how many, and in how many seconds. The wave waits for it.
    std::string retry;
    int attempt = 0, attempts = 0;
    double retryIn = 0;
};

class FetchWatch
{
public:
    using Listener = std::function<void(const FetchProgress&)>;
    // `listener` runs on whichever of the job's threads fetches; it must be cheap and thread-safe.
    // A watch made while another is this thread's (a command's progress printer inside the
    // command's own watch) counts its bytes in that one too, which then knows the whole run's.
    explicit FetchWatch(const CancelToken* cancel, Listener listener = {});

    const CancelToken* cancel() const { return m_cancel; }
    bool cancelled() const { return m_cancel && m_cancel->cancelled(); }
    // From the transport: a wave started (waveDone 0) or `newBytes` more of it arrived.
    void report(const std::string& url, size_t objects, uint64_t newBytes, uint64_t waveDone,
                uint64_t waveTotal) const;
    // From the transport: `url` is asked again (attempt `attempt` of `attempts`) in `in` seconds.
    void retrying(const std::string& url, const std::string& why, int attempt, int attempts, double in) const;
    uint64_t fetched() const { return m_fetched.load(std::memory_order_relaxed); }
    // Seconds since the job's first request (0 before it).
    double seconds() const;

    // The watch of the job this thread works for, or null (a caller outside any job).
    static const FetchWatch* current();

    // Makes `watch` this thread's for the scope's life (null: none); the previous one returns
    // after, so scopes nest.
    class Scope
    {
    public:
        explicit Scope(const FetchWatch* watch);
        ~Scope();
        Scope(const Scope&) = delete;
        Scope& operator=(const Scope&) = delete;

    private:
        const FetchWatch* m_previous;
    };

private:
    void started() const; // the first request's time, kept once

    const CancelToken* m_cancel;
    Listener m_listener;
    const FetchWatch* m_parent; // the thread's watch when this one was made, or null
    mutable std::atomic<uint64_t> m_fetched{0};
    mutable std::atomic<int64_t> m_firstNs{0}; // steady clock, at the first request; 0 before
};

} // namespace ckpt::io
