// The checks every writer makes before an output takes its name, in one place: bytes hashed
// (xxh3) while they are written, the finished file re-read from its temporary name in bounded
// memory (each chunk's pages let go behind the reader, so a multi-gigabyte output is never
// resident), and a mismatch an Error naming the file. Export, slim and the Universal conversion
// all write through AtomicFile (temporary name, fsync, rename at commit) and check with these.
#pragma once

#include "io/atomic_file.h"
#include "io/job.h"

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <xxhash.h>

namespace ckpt::io {

// xxh3-64 of `size` bytes at `data`, which lie in `owner` (a mapped file or anything with
// release(p, n)), 16 MiB at a time, releasing each chunk's pages once hashed.
template <typename Mapped>
uint64_t hashReleasing(const Mapped& owner, const uint8_t* data, uint64_t size,
                       const CancelToken* cancel = nullptr)
{
    const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    constexpr uint64_t kChunk = 16u << 20;
    for (uint64_t at = 0; at < size; at += kChunk) {
        if (cancel) cancel->throwIfCancelled();
        const uint64_t n = std::min<uint64_t>(kChunk, size - at);
        XXH3_64bits_update(state.get(), data + at, n);
        owner.release(data + at, n);
    }
    return XXH3_64bits_digest(state.get());
}

// What a byte-for-byte copy wrote.
struct Copied
{
    uint64_t size = 0, hash = 0;
};

// Streams the file `from` into `out` (hashed on the way, the input's pages released behind),
// then finishes `out`. `onBytes` sees each chunk written.
Copied copyHashed(const std::string& from, AtomicFile& out, const std::function<void(uint64_t)>& onBytes,
                  const CancelToken& cancel);
// Re-reads the finished `out` from its temporary name: it must hold what was copied.
void verifyCopy(const AtomicFile& out, const Copied& copied, const CancelToken& cancel);

// Runs each finished file's check on a thread of its own while the next files are written: the
// checks cost the writer no time, and all of them are done before anything is renamed into place
// (finish()). The first failure is thrown by the next add() or by finish().
class Verifier
{
public:
    Verifier();
    ~Verifier();
    Verifier(const Verifier&) = delete;
    Verifier& operator=(const Verifier&) = delete;

    void add(std::function<void()> check);
    void finish();

private:
    void run();

    std::mutex m_lock;
    std::condition_variable m_wake;
    std::deque<std::function<void()>> m_queue;
    std::exception_ptr m_failed;
    bool m_busy = false, m_stop = false;
    std::thread m_thread; // last: started once the rest is built
};

} // namespace ckpt::io
