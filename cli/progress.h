// Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds otherwise.
// While it lives, the job's remote transfers report to it too (io/fetch_watch.h): a job waiting
// on the network shows "fetching FILE, X of Y" as its stage, its figures unchanged.
#pragma once

#include "io/fetch_watch.h"
#include "ops/job.h"

#include <chrono>
#include <mutex>

namespace ckpt::cli {

// What every line this process writes to stderr starts with: "ckpt: ", or, for one shard of a
// job split across processes, "ckpt [shard 2/4]: " (many processes share one log under srun).
std::string logPrefix();
void setLogLabel(const std::string& label);
// "ckpt: x.pt: the server answered 503; retrying in 1.2 s, attempt 2 of 5": said as a retry is
// scheduled, so a slow server reads as that and not as a frozen line.
void printRetry(const io::FetchProgress& f);
// "ckpt: fetched 1.3 GiB from the network in 31.2 s (41 MiB/s)": a run's last line, when it read
// remote files (nothing for local ones).
void printFetched(const io::FetchWatch& watch);

class ProgressPrinter
{
public:
    explicit ProgressPrinter(bool quiet);
    ~ProgressPrinter();
    void operator()(const ops::Progress& p);
    ops::ProgressSink sink()
    {
        return [this](const ops::Progress& p) { (*this)(p); };
    }

private:
    void fetched(const io::FetchProgress& f);
    void draw(const ops::Progress& p); // with m_lock held

    bool m_quiet;
    bool m_tty;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start, m_last;
    uint64_t m_lastDone = 0;
    std::mutex m_lock;    // writers and transfers report from several threads
    ops::Progress m_said; // the job's last report, which a transfer's repeats
    // Last: the watch takes the job's cancel token from the one around it (cli/main.cpp).
    io::FetchWatch m_watch;
    io::FetchWatch::Scope m_scope;
};

} // namespace ckpt::cli
