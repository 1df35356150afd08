#include "io/fetch_watch.h"

#include <chrono>

namespace ckpt::io {

namespace {
// A thread works for one job at a time; the pointer, not the watch, is per thread.
thread_local const FetchWatch* t_current = nullptr;
} // namespace

FetchWatch::FetchWatch(const CancelToken* cancel, Listener listener)
    : m_cancel(cancel), m_listener(std::move(listener)), m_parent(t_current)
{
}

namespace {
int64_t nowNs()
{
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}
} // namespace

void FetchWatch::started() const
{
    if (m_firstNs.load(std::memory_order_relaxed) != 0) return; // the clock asked once per job
    int64_t unset = 0;
    m_firstNs.compare_exchange_strong(unset, nowNs(), std::memory_order_relaxed);
}

double FetchWatch::seconds() const
{
    const int64_t first = m_firstNs.load(std::memory_order_relaxed);
    return first ? double(nowNs() - first) / 1e9 : 0;
}

void FetchWatch::report(const std::string& url, size_t objects, uint64_t newBytes, uint64_t waveDone,
                        uint64_t waveTotal) const
{
    for (const FetchWatch* w = m_parent; w; w = w->m_parent) { // counted, not told
        w->started();
        w->m_fetched.fetch_add(newBytes, std::memory_order_relaxed);
    }
    started();
    const uint64_t total = m_fetched.fetch_add(newBytes, std::memory_order_relaxed) + newBytes;
    if (!m_listener) return;
    FetchProgress p;
    p.url = url;
    p.objects = objects;
    p.waveDone = waveDone;
    p.waveTotal = waveTotal;
    p.jobFetched = total;
    // A rate over less than a second says more about latency than throughput.
    if (const double s = seconds(); s >= 1) p.bytesPerSecond = double(total) / s;
    m_listener(p);
}

void FetchWatch::retrying(const std::string& url, const std::string& why, int attempt, int attempts,
                          double in) const
{
    if (!m_listener) return;
    FetchProgress p;
    p.url = url;
    p.objects = 1;
    p.jobFetched = fetched();
    p.retry = why;
    p.attempt = attempt;
    p.attempts = attempts;
    p.retryIn = in;
    m_listener(p);
}

const FetchWatch* FetchWatch::current()
{
    return t_current;
}

FetchWatch::Scope::Scope(const FetchWatch* watch) : m_previous(t_current)
{
    t_current = watch;
}

FetchWatch::Scope::~Scope()
{
    t_current = m_previous;
}

} // namespace ckpt::io
