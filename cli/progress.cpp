#include "progress.h"

#include "ops/inspect.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <unistd.h>

namespace ckpt::cli {

namespace {
std::string& logLabel()
{
    static std::string label;
    return label;
}
} // namespace

std::string logPrefix()
{
    return logLabel().empty() ? "ckpt: " : "ckpt [" + logLabel() + "]: ";
}

void setLogLabel(const std::string& label)
{
    logLabel() = label;
}

ProgressPrinter::ProgressPrinter(bool quiet)
    : m_quiet(quiet), m_tty(::isatty(2)), m_start(std::chrono::steady_clock::now()), m_last(m_start),
      m_watch(io::FetchWatch::current() ? io::FetchWatch::current()->cancel() : nullptr,
              [this](const io::FetchProgress& f) { fetched(f); }),
      m_scope(&m_watch)
{
}

ProgressPrinter::~ProgressPrinter()
{
    if (m_drawn && m_tty) std::fputc('\n', stderr);
}

void printRetry(const io::FetchProgress& f)
{
    std::fprintf(stderr, "%s%s: %s; retrying in %.1f s, attempt %d of %d\n", logPrefix().c_str(),
                 f.url.substr(f.url.rfind('/') + 1).c_str(), f.retry.c_str(), f.retryIn, f.attempt,
                 f.attempts);
}

void printFetched(const io::FetchWatch& watch)
{
    const uint64_t bytes = watch.fetched();
    if (bytes == 0) return; // local files: nothing to say
    const double s = watch.seconds();
    std::fprintf(stderr, "%sfetched %s from the network", logPrefix().c_str(),
                 ops::humanBytes(bytes).c_str());
    if (s >= 1)
        std::fprintf(stderr, " in %.1f s (%s/s)", s, ops::humanBytes(uint64_t(double(bytes) / s)).c_str());
    std::fputc('\n', stderr);
}

void ProgressPrinter::operator()(const ops::Progress& p)
{
    const std::lock_guard hold(m_lock);
    if (!p.note.empty()) { // not progress: a message the user must see, quiet or not
        if (m_drawn && m_tty) std::fputc('\n', stderr);
        m_drawn = false;
        std::fprintf(stderr, "%s%s\n", logPrefix().c_str(), p.note.c_str());
        return;
    }
    m_said = p;
    draw(p);
}

void ProgressPrinter::fetched(const io::FetchProgress& f)
{
    const std::lock_guard hold(m_lock);
    const std::string name = f.url.substr(f.url.rfind('/') + 1);
    if (!f.retry.empty()) { // a line of its own at once, quiet or not: the run is waiting on it
        if (m_drawn && m_tty) std::fputc('\n', stderr);
        m_drawn = false;
        printRetry(f);
        return;
    }
    ops::Progress p = m_said;
    p.stage = "fetching " + (f.objects > 1 ? std::to_string(f.objects) + " files" : name);
    if (f.waveTotal)
        p.stage +=
            ", " + ops::humanBytes(std::min(f.waveDone, f.waveTotal)) + " of " + ops::humanBytes(f.waveTotal);
    if (f.bytesPerSecond > 0) p.stage += ", " + ops::humanBytes(uint64_t(f.bytesPerSecond)) + "/s";
    draw(p);
}

void ProgressPrinter::draw(const ops::Progress& p)
{
    if (m_quiet) return;
    const auto now = std::chrono::steady_clock::now();
    // A job's phases each count their own bytes (reading the tag's files, then writing): bytes
    // going back mean a new phase, whose rate and ETA start from now.
    if (p.doneBytes < m_lastDone) m_start = now;
    m_lastDone = p.doneBytes;
    const double since = std::chrono::duration<double>(now - m_last).count();
    const bool final = p.permille >= 1000;
    if (!final && since < (m_tty ? 0.1 : 2.0)) return;
    m_last = now;
    const double elapsed = std::chrono::duration<double>(now - m_start).count();
    const double rate = elapsed > 0 ? double(p.doneBytes) / elapsed : 0;
    const double eta = rate > 0 && p.totalBytes > p.doneBytes ? double(p.totalBytes - p.doneBytes) / rate : 0;
    char line[256];
    std::snprintf(line, sizeof line, "%5.1f%%  %s / %s  %.2f GB/s  ETA %.0fs  %s", p.permille / 10.0,
                  ops::humanBytes(p.doneBytes).c_str(), ops::humanBytes(p.totalBytes).c_str(), rate / 1e9,
                  eta, p.stage.substr(0, 60).c_str());
    const std::string label = logLabel().empty() ? "" : "[" + logLabel() + "] ";
    if (m_tty)
        std::fprintf(stderr, "\r\033[K%s%s", label.c_str(), line);
    else
        std::fprintf(stderr, "%s%s\n", label.c_str(), line);
    m_drawn = true;
}

} // namespace ckpt::cli
