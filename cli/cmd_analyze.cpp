#include "commands.h"

#include "ops/analyze.h"
#include "progress.h"

#include <iostream>

namespace ckpt::cli {

std::shared_ptr<gpu::ComputeBackend> backendFor(const std::string& device, bool quiet)
{
    const gpu::Device want = device == "cpu" ? gpu::Device::Cpu : device == "cuda" ? gpu::Device::Cuda : gpu::Device::Auto;
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
ops::AnalyzeOptions optionsFor(const AnalyzeArgs& a)
{
    ops::AnalyzeOptions o;
    o.source.tag = a.tag;
    o.histogramBins = a.bins;
    o.histogramLog10 = a.log10;
    return o;
}
} // namespace

int runStats(const AnalyzeArgs& a, const ops::CancelToken& cancel)
{
    auto backend = backendFor(a.device, a.quiet || a.json);
    auto o = optionsFor(a);
    o.source.backend = backend;
    nlohmann::ordered_json doc;
    {
        ProgressPrinter printer(a.quiet);
        doc = ops::computeStats(a.a, o, *backend, printer.sink(), cancel);
    }
    if (a.json) std::cout << doc.dump(2) << "\n";
    else ops::printStats(doc, std::cout);
    return 0;
}

int runDiff(const AnalyzeArgs& a, const ops::CancelToken& cancel)
{
    auto backend = backendFor(a.device, a.quiet || a.json);
    auto o = optionsFor(a);
    o.source.backend = backend;
    nlohmann::ordered_json doc;
    {
        ProgressPrinter printer(a.quiet);
        doc = ops::computeDiff(a.a, a.b, o, *backend, printer.sink(), cancel);
    }
    if (a.json) std::cout << doc.dump(2) << "\n";
    else ops::printDiff(doc, std::cout);
    return 0;
}

} // namespace ckpt::cli
