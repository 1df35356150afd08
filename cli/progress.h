// Progress on stderr: a redrawn bar on a terminal, a plain line every few seconds otherwise.
#pragma once

#include "ops/job.h"

#include <chrono>

namespace ckpt::cli {

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
    bool m_quiet;
    bool m_tty;
    bool m_drawn = false;
    std::chrono::steady_clock::time_point m_start, m_last;
    uint64_t m_lastDone = 0;
};

} // namespace ckpt::cli
