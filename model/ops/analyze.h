// `ckpt stats` and `ckpt diff`: per-tensor statistics, and per-tensor comparison of two files
// or two tags, streamed through the compute backend with progress and cancel.
#pragma once

#include "compute_backend.h"
#include "ops/job.h"
#include "ops/tensor_source.h"

#include <nlohmann/json.hpp>
#include <string>

namespace ckpt::ops {

struct AnalyzeOptions
{
    SourceOptions source;   // tag, dtype for checkpoints (stats/diff read what export would write)
    int histogramBins = 0;  // stats: add a histogram with this many bins (0: none)
    bool histogramLog10 = false;
};

nlohmann::ordered_json computeStats(const std::string& path, const AnalyzeOptions& options, gpu::ComputeBackend& backend,
                                    const ProgressSink& progress, const CancelToken& cancel);
nlohmann::ordered_json computeDiff(const std::string& a, const std::string& b, const AnalyzeOptions& options,
                                   gpu::ComputeBackend& backend, const ProgressSink& progress, const CancelToken& cancel);

void printStats(const nlohmann::ordered_json& doc, std::ostream& out);
void printDiff(const nlohmann::ordered_json& doc, std::ostream& out);

} // namespace ckpt::ops
