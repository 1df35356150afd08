#include "torch/chunk_stream.h"

#include "io/fetch_watch.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace ckpt::torch {

namespace {

// Ring buffers kept by the calling thread between calls: a job streaming many files (one per
// parameter state in a Universal checkpoint) would otherwise allocate, zero and fault in
// ring x chunk bytes for every file, and give them back to the kernel after it.
struct RingPool
{
    std::vector<std::unique_ptr<uint8_t[]>> buffers;
    uint64_t chunk = 0;
};
thread_local RingPool t_pool;

struct Slot
{
    std::unique_ptr<uint8_t[]> data;
    size_t tensor = 0;
    uint64_t size = 0;
    bool full = false, last = false;
};

// The ring's buffers, taken from the thread's pool and given back to it however the stream
// ends. A pool of smaller buffers is dropped for a fresh one; a nested call finds it empty.
class PooledRing
{
public:
    PooledRing(int ringSize, uint64_t chunkSize) : slots(static_cast<size_t>(ringSize))
    {
        if (t_pool.chunk < chunkSize) t_pool = {{}, chunkSize};
        for (auto& s : slots) {
            if (!t_pool.buffers.empty()) {
                s.data = std::move(t_pool.buffers.back());
                t_pool.buffers.pop_back();
            } else {
                s.data.reset(new uint8_t[t_pool.chunk]); // not zeroed: every byte consumed is filled
            }
        }
        m_chunk = t_pool.chunk;
    }
    ~PooledRing()
    {
        if (t_pool.chunk != m_chunk) return; // a nested call replaced the pool meanwhile
        for (auto& s : slots)
            if (s.data) t_pool.buffers.push_back(std::move(s.data));
    }
    PooledRing(const PooledRing&) = delete;
    PooledRing& operator=(const PooledRing&) = delete;

    std::vector<Slot> slots;

private:
    uint64_t m_chunk = 0;
};

// What the producer and the consumer threads share. A slot belongs to the producer while it is
// not full and to the consumer while it is; `full`, `last`, `stop` and `producerError` change
// under the mutex only.
struct Shared
{
    std::vector<Slot>& ring;
    std::mutex m;
    std::condition_variable cv;
    bool stop = false;
    std::exception_ptr producerError;
};

// The producer thread: fills the slots in turn with the tensors' chunks, then marks the slot
// after the last one `last`. Stops early when the consumer says stop; its exceptions go to
// the consumer through `producerError`.
void produce(Shared& sh, const std::vector<torch::OutTensor>& tensors, uint64_t chunkSize,
             const io::CancelToken& cancel, io::TensorHasher* hasher)
{
    size_t slot = 0;
    auto publish = [&](Slot& s) {
        std::lock_guard<std::mutex> lock(sh.m);
        s.full = true;
        sh.cv.notify_all();
    };
    try {
        for (size_t i = 0; i < tensors.size(); ++i) {
            for (uint64_t off = 0; off < tensors[i].nbytes; off += chunkSize) {
                Slot& s = sh.ring[slot];
                {
                    std::unique_lock<std::mutex> lock(sh.m);
                    sh.cv.wait(lock, [&] { return !s.full || sh.stop; });
                    if (sh.stop) return;
                }
                if (cancel.cancelled()) throw Cancelled();
                s.tensor = i;
                s.size = std::min(chunkSize, tensors[i].nbytes - off);
                tensors[i].fill(off, s.size, s.data.get());
                if (hasher) hasher->update(i, s.data.get(), s.size);
                publish(s);
                slot = (slot + 1) % sh.ring.size();
            }
        }
        Slot& s = sh.ring[slot];
        std::unique_lock<std::mutex> lock(sh.m);
        sh.cv.wait(lock, [&] { return !s.full || sh.stop; });
        s.last = true;
        s.full = true;
        sh.cv.notify_all();
    } catch (...) {
        std::lock_guard<std::mutex> lock(sh.m);
        sh.producerError = std::current_exception();
        sh.cv.notify_all();
    }
}

// The calling thread: hands each full slot to `consume` and frees it, until the last slot or
// a producer error. Throws what `consume` throws.
void consumeAll(Shared& sh, const std::function<void(size_t, const uint8_t*, uint64_t)>& consume)
{
    size_t slot = 0;
    for (;;) {
        Slot& s = sh.ring[slot];
        {
            std::unique_lock<std::mutex> lock(sh.m);
            sh.cv.wait(lock, [&] { return s.full || sh.producerError; });
            if (!s.full && sh.producerError) break;
        }
        if (s.last) break;
        consume(s.tensor, s.data.get(), s.size);
        {
            std::lock_guard<std::mutex> lock(sh.m);
            s.full = false;
            sh.cv.notify_all();
        }
        slot = (slot + 1) % sh.ring.size();
    }
}

} // namespace

void streamChunks(const std::vector<torch::OutTensor>& tensors,
                  const std::function<void(size_t, const uint8_t*, uint64_t)>& consume,
                  const io::CancelToken& cancel, io::TensorHasher* hasher, uint64_t chunkSize, int ringSize)
{
    uint64_t largest = 1;
    for (const auto& t : tensors)
        largest = std::max(largest, t.nbytes);
    chunkSize = std::min(chunkSize, largest);

    PooledRing ring(ringSize, chunkSize);
    Shared sh{ring.slots, {}, {}, false, nullptr};
    // The producer reads for this job: its fetches of remote bytes answer to the job's watch.
    std::thread producer([&, watch = io::FetchWatch::current()] {
        const io::FetchWatch::Scope scope(watch);
        produce(sh, tensors, chunkSize, cancel, hasher);
    });

    std::exception_ptr consumerError;
    try {
        consumeAll(sh, consume);
    } catch (...) {
        consumerError = std::current_exception();
    }
    {
        std::lock_guard<std::mutex> lock(sh.m);
        sh.stop = true;
        sh.cv.notify_all();
    }
    producer.join();
    if (consumerError) std::rethrow_exception(consumerError);
    if (sh.producerError) std::rethrow_exception(sh.producerError);
}

} // namespace ckpt::torch
