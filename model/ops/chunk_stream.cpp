#include "ops/chunk_stream.h"

#include <condition_variable>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>

namespace ckpt::ops {

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

} // namespace

void streamChunks(const std::vector<torch::OutTensor>& tensors,
                  const std::function<void(size_t, const uint8_t*, uint64_t)>& consume,
                  const CancelToken& cancel, uint64_t chunkSize, int ringSize)
{
    uint64_t largest = 1;
    for (const auto& t : tensors)
        largest = std::max(largest, t.nbytes);
    chunkSize = std::min(chunkSize, largest);

    struct Slot
    {
        std::unique_ptr<uint8_t[]> data;
        size_t tensor = 0;
        uint64_t size = 0;
        bool full = false, last = false;
    };
    std::vector<Slot> ring(static_cast<size_t>(ringSize));
    if (t_pool.chunk < chunkSize) t_pool = {{}, chunkSize}; // (a nested call finds it empty)
    for (auto& s : ring) {
        if (!t_pool.buffers.empty()) {
            s.data = std::move(t_pool.buffers.back());
            t_pool.buffers.pop_back();
        } else {
            s.data.reset(new uint8_t[t_pool.chunk]); // not zeroed: every byte consumed is filled
        }
    }
    const uint64_t pooledChunk = t_pool.chunk;
    struct GiveBack
    {
        std::vector<Slot>& ring;
        uint64_t chunk;
        ~GiveBack()
        {
            if (t_pool.chunk != chunk) return;
            for (auto& s : ring)
                if (s.data) t_pool.buffers.push_back(std::move(s.data));
        }
    } giveBack{ring, pooledChunk};
    std::mutex m;
    std::condition_variable cv;
    bool stop = false;
    std::exception_ptr producerError;

    std::thread producer([&] {
        size_t slot = 0;
        auto publish = [&](Slot& s) {
            std::lock_guard<std::mutex> lock(m);
            s.full = true;
            cv.notify_all();
        };
        try {
            for (size_t i = 0; i < tensors.size(); ++i) {
                for (uint64_t off = 0; off < tensors[i].nbytes; off += chunkSize) {
                    Slot& s = ring[slot];
                    {
                        std::unique_lock<std::mutex> lock(m);
                        cv.wait(lock, [&] { return !s.full || stop; });
                        if (stop) return;
                    }
                    if (cancel.cancelled()) throw Cancelled();
                    s.tensor = i;
                    s.size = std::min(chunkSize, tensors[i].nbytes - off);
                    tensors[i].fill(off, s.size, s.data.get());
                    publish(s);
                    slot = (slot + 1) % ring.size();
                }
            }
            Slot& s = ring[slot];
            std::unique_lock<std::mutex> lock(m);
            cv.wait(lock, [&] { return !s.full || stop; });
            s.last = true;
            s.full = true;
            cv.notify_all();
        } catch (...) {
            std::lock_guard<std::mutex> lock(m);
            producerError = std::current_exception();
            cv.notify_all();
        }
    });

    std::exception_ptr consumerError;
    try {
        size_t slot = 0;
        for (;;) {
            Slot& s = ring[slot];
            {
                std::unique_lock<std::mutex> lock(m);
                cv.wait(lock, [&] { return s.full || producerError; });
                if (!s.full && producerError) break;
            }
            if (s.last) break;
            consume(s.tensor, s.data.get(), s.size);
            {
                std::lock_guard<std::mutex> lock(m);
                s.full = false;
                cv.notify_all();
            }
            slot = (slot + 1) % ring.size();
        }
    } catch (...) {
        consumerError = std::current_exception();
    }
    {
        std::lock_guard<std::mutex> lock(m);
        stop = true;
        cv.notify_all();
    }
    producer.join();
    if (consumerError) std::rethrow_exception(consumerError);
    if (producerError) std::rethrow_exception(producerError);
}

} // namespace ckpt::ops
