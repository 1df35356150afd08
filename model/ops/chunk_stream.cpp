#include "ops/chunk_stream.h"

#include <condition_variable>
#include <exception>
#include <mutex>
#include <thread>

namespace ckpt::ops {

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
        std::vector<uint8_t> data;
        size_t tensor = 0;
        uint64_t size = 0;
        bool full = false, last = false;
    };
    std::vector<Slot> ring(static_cast<size_t>(ringSize));
    for (auto& s : ring)
        s.data.resize(chunkSize);
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
                    tensors[i].fill(off, s.size, s.data.data());
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
            consume(s.tensor, s.data.data(), s.size);
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
