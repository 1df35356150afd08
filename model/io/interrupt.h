// SIGINT, SIGTERM and SIGHUP end a job cleanly and promptly: the signal becomes a cancel
// request; if the job has not wound down within a grace period (it may be blocked in a read or
// a write), every temporary output is removed from here and the process exits with 128 + the
// signal, as a shell expects. A dedicated thread waits for the signals (sigwait), so the work
// done on a signal is ordinary code, not an async-signal handler.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace ckpt::io {

class InterruptHandler
{
public:
    // Construct before any other thread starts: threads inherit the blocked signal mask, which
    // is what routes every signal to the waiting thread.
    // `program` names the process in the line printed on a forced exit.
    InterruptHandler(const char* program, std::function<void()> cancel,
                     std::chrono::milliseconds grace = std::chrono::milliseconds(700));
    // The job is over (finished or unwound): no forced exit from now on.
    ~InterruptHandler();
    InterruptHandler(const InterruptHandler&) = delete;
    InterruptHandler& operator=(const InterruptHandler&) = delete;

    int signal() const { return m_signal.load(); } // 0 while none arrived
    static int exitCode(int signal) { return 128 + signal; }
    // "ckpt: interrupted by SIGTERM; partial output removed"
    static std::string message(const char* program, int signal);

private:
    void run();

    const char* m_program;
    std::function<void()> m_cancel;
    std::chrono::milliseconds m_grace;
    std::atomic<int> m_signal{0};
    std::mutex m_mutex;
    std::condition_variable m_doneChanged;
    bool m_done = false;
    std::thread m_thread;
};

} // namespace ckpt::io
