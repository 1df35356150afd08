// What every long operation takes: a progress sink and a cancel token. The CLI draws progress on
// stderr; the GUI forwards it to its job manager. Both are plain values, safe across threads.
// They live at the bottom (io) because writers below the operations (the torch writer, the
// verified writer) report and stop through them too.
#pragma once

#include "io/error.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>

namespace ckpt::io {

struct Progress
{
    int permille = 0; // 0..1000
    std::string stage;
    uint64_t doneBytes = 0;
    uint64_t totalBytes = 0;
    // A one-off message for the user, shown whatever the throttling or quiet setting
    // (e.g. "removed stale partial output ..."); permille and bytes are then unchanged.
    std::string note = {};
};

using ProgressSink = std::function<void(const Progress&)>;

// Sends each of a transaction's notes through the progress sink.
template <typename Notes> void reportNotes(const ProgressSink& progress, const Notes& notes)
{
    if (!progress) return;
    for (const auto& n : notes) {
        Progress p;
        p.note = n;
        progress(p);
    }
}

class CancelToken
{
public:
    void cancel() { m_flag.store(true, std::memory_order_relaxed); }
    bool cancelled() const { return m_flag.load(std::memory_order_relaxed); }
    void throwIfCancelled() const
    {
        if (cancelled()) throw Cancelled();
    }

private:
    std::atomic<bool> m_flag{false};
};

} // namespace ckpt::io
