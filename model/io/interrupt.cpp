#include "io/interrupt.h"

#include "io/output.h"

#include <csignal>
#include <cstring>
#include <pthread.h>
#include <string>
#include <unistd.h>

namespace ckpt::io {

namespace {

// SIGUSR2 only wakes the waiting thread when the handler is destroyed.
sigset_t waitedSignals()
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGUSR2);
    return set;
}

const char* signalName(int sig)
{
    switch (sig) {
    case SIGINT:
        return "SIGINT";
    case SIGTERM:
        return "SIGTERM";
    case SIGHUP:
        return "SIGHUP";
    default:
        return "a signal";
    }
}

} // namespace

std::string InterruptHandler::message(const char* program, int signal)
{
    return std::string(program) + ": interrupted by " + signalName(signal) + "; partial output removed";
}

InterruptHandler::InterruptHandler(const char* program, std::function<void()> cancel,
                                   std::chrono::milliseconds grace)
    : m_program(program), m_cancel(std::move(cancel)), m_grace(grace)
{
    const sigset_t set = waitedSignals();
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    m_thread = std::thread([this] { run(); });
}

InterruptHandler::~InterruptHandler()
{
    {
        std::lock_guard lock(m_mutex);
        m_done = true;
    }
    m_doneChanged.notify_all();
    pthread_kill(m_thread.native_handle(), SIGUSR2);
    m_thread.join();
    // Signals stay blocked: one arriving after the job is over would otherwise kill the process
    // halfway through printing its result; the exit code already says what happened.
}

void InterruptHandler::run()
{
    const sigset_t set = waitedSignals();
    int sig = 0;
    if (sigwait(&set, &sig) != 0 || sig == SIGUSR2) return;
    m_signal.store(sig);
    if (m_cancel) m_cancel();
    std::unique_lock lock(m_mutex);
    if (m_doneChanged.wait_for(lock, m_grace, [this] { return m_done; })) return;
    // The job did not unwind in time (blocked I/O, or work that checks the token rarely).
    removeAllTemporaryOutputs();
    const std::string line = message(m_program, sig) + "\n";
    [[maybe_unused]] const auto n = ::write(2, line.data(), line.size());
    ::_exit(exitCode(sig));
}

} // namespace ckpt::io
