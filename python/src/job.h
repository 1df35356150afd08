// Runs one engine operation from Python: the work on a thread of its own with the GIL released,
// the calling thread waiting in slices of at most 100 ms, in which it handles Python's signals
// (so Ctrl+C cancels the job within a fraction of a second instead of after it) and hands
// progress to a Python callable. Any exception on the calling side (KeyboardInterrupt, a
// callback's own, a cancel request) cancels the job, waits for it to unwind (the operation then
// removes its partial output) and is raised in its place.
#pragma once

#include "io/fetch_watch.h"
#include "ops/job.h"

#include <nanobind/nanobind.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

namespace ckpt::python {

namespace nb = nanobind;

// Between the job's threads (which report) and the calling thread (which forwards). With a
// callback, a report waits until the callback has seen it: what the callback does (raise,
// cancel) takes effect before the job goes on, as with a tqdm bar in a Python loop.
struct JobChannel
{
    std::mutex mutex;
    std::condition_variable changed;
    std::optional<io::Progress> pending;
    bool done = false;
    bool forwarding = false;
    io::CancelToken cancel;

    void report(const io::Progress& p)
    {
        std::unique_lock<std::mutex> lock(mutex);
        if (!forwarding || cancel.cancelled()) return;
        changed.wait(lock, [&] { return !pending || cancel.cancelled(); });
        if (cancel.cancelled()) return;
        pending = p;
        changed.notify_all();
        changed.wait(lock, [&] { return !pending || cancel.cancelled(); });
    }
};

// `poll(progress)`: called on the calling thread with each report as a tuple
// (stage, done_bytes, total_bytes, permille, note), and with None at least every 100 ms; None
// for no callback at all. `work(sink, cancel)` is the operation.
template <typename R>
R runJob(nb::object poll, const std::function<R(const io::ProgressSink&, const io::CancelToken&)>& work)
{
    JobChannel ch;
    ch.forwarding = !poll.is_none();
    std::optional<R> result;
    std::exception_ptr failure;
    std::thread worker;
    {
        nb::gil_scoped_release unlocked;
        worker = std::thread([&] {
            // Its cancel (Ctrl+C, a cancel event, a failing callback) reaches remote transfers
            // in flight too, not only the job's next check.
            const io::FetchWatch watch(&ch.cancel);
            const io::FetchWatch::Scope scope(&watch);
            try {
                result.emplace(work([&](const io::Progress& p) { ch.report(p); }, ch.cancel));
            } catch (...) {
                failure = std::current_exception();
            }
            std::lock_guard<std::mutex> lock(ch.mutex);
            ch.done = true;
            ch.changed.notify_all();
        });
    }
    auto stop = [&] {
        nb::gil_scoped_release unlocked;
        {
            std::lock_guard<std::mutex> lock(ch.mutex);
            ch.cancel.cancel();
            ch.changed.notify_all();
        }
        worker.join();
    };
    for (;;) {
        std::optional<io::Progress> seen;
        {
            nb::gil_scoped_release unlocked;
            std::unique_lock<std::mutex> lock(ch.mutex);
            ch.changed.wait_for(lock, std::chrono::milliseconds(100), [&] { return ch.done || ch.pending; });
            if (ch.done) break;
            seen = ch.pending;
        }
        try {
            if (PyErr_CheckSignals() != 0) throw nb::python_error();
            if (!poll.is_none()) {
                if (seen)
                    poll(nb::make_tuple(seen->stage, seen->doneBytes, seen->totalBytes, seen->permille,
                                        seen->note));
                else
                    poll(nb::none());
            }
            // A Ctrl+C that came while the callback ran (or that it sent) is taken now, while
            // the job still waits for this report: it stops before writing on, not after it ends.
            if (PyErr_CheckSignals() != 0) throw nb::python_error();
        } catch (...) {
            stop();
            throw;
        }
        if (seen) {
            nb::gil_scoped_release unlocked;
            std::lock_guard<std::mutex> lock(ch.mutex);
            ch.pending.reset();
            ch.changed.notify_all();
        }
    }
    {
        nb::gil_scoped_release unlocked;
        worker.join();
    }
    if (failure) std::rethrow_exception(failure);
    return std::move(*result);
}

} // namespace ckpt::python
