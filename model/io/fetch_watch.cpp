#include "io/fetch_watch.h"

namespace ckpt::io {

namespace {
// A thread works for one job at a time; the pointer, not the watch, is per thread.
thread_local const FetchWatch* t_current = nullptr;
} // namespace

FetchWatch::FetchWatch(const CancelToken* cancel, Listener listener)
    : m_cancel(cancel), m_listener(std::move(listener))
{
}

void FetchWatch::report(const std::string& url, size_t objects, uint64_t newBytes, uint64_t waveDone,
                        uint64_t waveTotal) const
{
    const uint64_t total = m_fetched.fetch_add(newBytes, std::memory_order_relaxed) + newBytes;
    if (m_listener) m_listener({url, objects, waveDone, waveTotal, total});
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
