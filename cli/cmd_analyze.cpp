#include "commands.h"

#include "ops/analyze.h"
#include "progress.h"

#include <cmath>
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

using nlohmann::ordered_json;

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

std::string fmt(const ordered_json& v)
{
    if (v.is_null()) return "-";
    if (v.is_string()) return v.get<std::string>();
    char b[32];
    std::snprintf(b, sizeof b, "%.6g", v.get<double>());
    return b;
}

std::string shortName(std::string name)
{
    return name.size() > 44 ? "..." + name.substr(name.size() - 41) : name;
}

void printStats(const ordered_json& doc, std::ostream& out)
{
    out << doc["source"].get<std::string>() << "  (" << doc["tensors"].size() << " tensors, "
        << doc["device"].get<std::string>() << ")\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-44s %-9s %12s %12s %12s %12s %10s %6s %6s\n", "tensor", "dtype",
                  "min", "max", "mean", "std", "zeros", "nan", "inf");
    out << line;
    for (const auto& t : doc["tensors"]) {
        if (t.contains("alias_of")) {
            out << t["name"].get<std::string>() << "  = " << t["alias_of"].get<std::string>() << "\n";
            continue;
        }
        std::snprintf(line, sizeof line, "%-44s %-9s %12s %12s %12s %12s %10llu %6llu %6llu\n",
                      shortName(t["name"]).c_str(), t["dtype"].get<std::string>().c_str(),
                      fmt(t["min"]).c_str(), fmt(t["max"]).c_str(), fmt(t["mean"]).c_str(),
                      fmt(t["std"]).c_str(), (unsigned long long)t["zeros"].get<uint64_t>(),
                      (unsigned long long)t["nans"].get<uint64_t>(),
                      (unsigned long long)t["infs"].get<uint64_t>());
        out << line;
    }
    for (const auto& s : doc["skipped"])
        out << "skipped " << s.get<std::string>() << "\n";
}

void printDiff(const ordered_json& doc, std::ostream& out)
{
    out << "A: " << doc["a"].get<std::string>() << "\nB: " << doc["b"].get<std::string>() << "\n("
        << doc["device"].get<std::string>() << ")\n";
    char line[512];
    std::snprintf(line, sizeof line, "%-44s %12s %12s %12s %10s\n", "tensor", "max|a-b|", "rel_l2", "cosine",
                  "equal");
    out << line;
    for (const auto& t : doc["tensors"]) {
        const std::string eq = t["identical"].get<bool>() ? "identical"
                               : t["bitwise_equal"].is_null()
                                   ? "-"
                                   : std::to_string(t["bitwise_equal"].get<uint64_t>()) + "/" +
                                         std::to_string(t["count"].get<uint64_t>());
        std::snprintf(line, sizeof line, "%-44s %12s %12s %12s %10s\n", shortName(t["name"]).c_str(),
                      fmt(t["max_abs_diff"]).c_str(), fmt(t["rel_l2"]).c_str(), fmt(t["cosine"]).c_str(),
                      eq.c_str());
        out << line;
    }
    for (const auto& n : doc["only_a"])
        out << "only in A: " << n.get<std::string>() << "\n";
    for (const auto& n : doc["only_b"])
        out << "only in B: " << n.get<std::string>() << "\n";
    for (const auto& c : doc["changed"])
        out << "changed: " << c["name"].get<std::string>() << "  " << c["a"].dump() << " -> " << c["b"].dump()
            << "\n";
    const auto& t = doc["totals"];
    out << t["compared"] << " compared: " << t["identical"] << " identical, " << t["different"]
        << " different (max |a-b| " << fmt(t["max_abs_diff"]) << "); " << t["only_a"] << " only in A, "
        << t["only_b"] << " only in B, " << t["changed"] << " changed shape or dtype\n";
}

// stats and diff differ only in the operation and the renderers: backend, progress and output
// are the same.
// Warnings go to stderr after `warningPrefix` (stats: its path; diff: none, each names its side).
template <typename Compute, typename Render, typename Print>
int runAnalysis(const AnalyzeArgs& a, const std::string& warningPrefix, Compute compute, Render render,
                Print print)
{
    auto backend = backendFor(a.device, a.quiet || a.json);
    ordered_json doc;
    {
        ProgressPrinter printer(a.quiet);
        doc = render(compute(backend, printer.sink()));
    }
    if (a.json)
        std::cout << doc.dump(2) << "\n";
    else
        print(doc, std::cout);
    // With --json too: the document holds them, stderr is where a person looks.
    for (const auto& w : doc["warnings"])
        std::cerr << "ckpt: warning: " << warningPrefix << w.get<std::string>() << "\n";
    return 0;
}

} // namespace

int runStats(const AnalyzeArgs& a, const ops::CancelToken& cancel)
{
    return runAnalysis(
        a, a.a + ": ",
        [&](const std::shared_ptr<gpu::ComputeBackend>& b, const ops::ProgressSink& p) {
            ops::AnalyzeOptions o;
            o.source.tag = a.tag;
            o.source.backend = b;
            o.histogramBins = a.bins;
            o.histogramLog10 = a.log10;
            return ops::computeStats(a.a, o, *b, p, cancel);
        },
        [](const ops::StatsResult& r) { return ops::toJson(r); }, printStats);
}

int runDiff(const AnalyzeArgs& a, const ops::CancelToken& cancel)
{
    return runAnalysis(
        a, "",
        [&](const std::shared_ptr<gpu::ComputeBackend>& b, const ops::ProgressSink& p) {
            ops::DiffOptions o;
            o.a.tag = a.tagA.empty() ? a.tag : a.tagA;
            o.b.tag = a.tagB.empty() ? a.tag : a.tagB;
            o.a.backend = o.b.backend = b;
            o.moments = a.moments;
            return ops::computeDiff(a.a, a.b, o, *b, p, cancel);
        },
        [](const ops::DiffResult& r) { return ops::toJson(r); }, printDiff);
}

} // namespace ckpt::cli
