#include "io/verified_writer.h"

#include "io/mapped_file.h"

namespace ckpt::io {

Copied copyHashed(const std::string& from, AtomicFile& out, const std::function<void(uint64_t)>& onBytes,
                  const CancelToken& cancel)
{
    const auto in = MappedFile::open(from);
    const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    constexpr uint64_t kChunk = 16u << 20;
    for (uint64_t at = 0; at < in->size(); at += kChunk) {
        cancel.throwIfCancelled();
        const uint64_t n = std::min(kChunk, in->size() - at);
        in->ensure(at, n); // a remote input's bytes come when asked (a local one's are there)
        const uint8_t* p = in->bytes().data() + at;
        XXH3_64bits_update(state.get(), p, n);
        out.write(p, n);
        in->release(p, n);
        if (onBytes) onBytes(n);
    }
    out.finish();
    return {in->size(), XXH3_64bits_digest(state.get())};
}

void verifyCopy(const AtomicFile& out, const Copied& copied, const CancelToken& cancel)
{
    const auto back = MappedFile::open(out.tempPath());
    if (back->size() != copied.size ||
        hashReleasing(*back, back->bytes().data(), back->size(), &cancel) != copied.hash)
        throw Error("verification failed: the copy differs from the input", out.finalPath());
}

Verifier::Verifier() : m_thread([this] { run(); }) {}

Verifier::~Verifier()
{
    {
        const std::lock_guard<std::mutex> lock(m_lock);
        m_stop = true;
    }
    m_wake.notify_all();
    m_thread.join();
}

void Verifier::add(std::function<void()> check)
{
    const std::lock_guard<std::mutex> lock(m_lock);
    if (m_failed) std::rethrow_exception(m_failed);
    m_queue.push_back(std::move(check));
    m_wake.notify_all();
}

void Verifier::finish()
{
    std::unique_lock<std::mutex> lock(m_lock);
    m_wake.wait(lock, [this] { return (m_queue.empty() && !m_busy) || m_failed; });
    if (m_failed) std::rethrow_exception(m_failed);
}

void Verifier::run()
{
    std::unique_lock<std::mutex> lock(m_lock);
    for (;;) {
        m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
        if (m_stop) return;
        std::function<void()> check = std::move(m_queue.front());
        m_queue.pop_front();
        m_busy = true;
        lock.unlock();
        std::exception_ptr failed;
        try {
            check();
        } catch (...) {
            failed = std::current_exception();
        }
        lock.lock();
        m_busy = false;
        if (failed && !m_failed) m_failed = failed;
        if (m_failed) m_queue.clear();
        m_wake.notify_all();
    }
}

} // namespace ckpt::io
