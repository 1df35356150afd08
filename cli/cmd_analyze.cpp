#include "commands.h"

#include "ops/analyze.h"
#include "progress.h"

#include <iostream>

namespace ckpt::cli {

std::shared_ptr<gpu::ComputeBackend> backendFor(const std::string& device, bool quiet)
{
    const gpu::Device want = device == "cpu"    ? gpu::Device::Cpu
                             : device == "cuda" ? gpu::Device::Cuda
                                                : gpu::Device::Auto;
    std::string reason;
    try {
        auto b = gpu::makeBackend(want, &reason);
        if (!quiet) std::cerr << "ckpt: compute on " << reason << "\n";
        return b;
    } catch (const gpu::BackendError& e) {
        throw Error(e.what());
    }
}

namespace {

// stats and diff differ only in the operation and the printer: backend, options, progress and
// output are the same.
template <typename Compute, typename Print>
int runAnalysis(const AnalyzeArgs& a, Compute compute, Print print)
{
    auto backend = backendFor(a.device, a.quiet || a.json);
    ops::AnalyzeOptions o;
    o.source.tag = a.tag;
    o.source.backend = backend;
    o.histogramBins = a.bins;
    o.histogramLog10 = a.log10;
    nlohmann::ordered_json doc;
    {
        ProgressPrinter printer(a.quiet);
        doc = compute(o, *backend, printer.sink());
    }
    if (a.json)
        std::cout << doc.dump(2) << "\n";
    else
        print(doc, std::cout);
    // With --json too: the document holds them, stderr is where a person looks.
    for (const auto& w : doc["warnings"])
        std::cerr << "ckpt: warning: " << a.a << ": " << w.get<std::string>() << "\n";
    return 0;
}

} // namespace

int runStats(const AnalyzeArgs& a, const ops::CancelToken& cancel)
{
    return runAnalysis(
        a,
        [&](const ops::AnalyzeOptions& o, gpu::ComputeBackend& b, const ops::ProgressSink& p) {
            return ops::computeStats(a.a, o, b, p, cancel);
        },
        ops::printStats);
}

int runDiff(const AnalyzeArgs& a, const ops::CancelToken& cancel)
{
    return runAnalysis(
        a,
        [&](const ops::AnalyzeOptions& o, gpu::ComputeBackend& b, const ops::ProgressSink& p) {
            return ops::computeDiff(a.a, a.b, o, b, p, cancel);
        },
        ops::printDiff);
}

} // namespace ckpt::cli
