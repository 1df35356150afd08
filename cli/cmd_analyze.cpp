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

// JSON has no NaN/Inf: write them as strings, as Python's json would not (it writes NaN);
// a string keeps the document valid for every parser.
ordered_json num(double v)
{
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

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

ordered_json histogramJson(const gpu::Histogram& h)
{
    return {{"lo", h.lo},     {"hi", h.hi},       {"log10", h.log10},
            {"bins", h.bins}, {"zeros", h.zeros}, {"non_finite", h.nonFinite}};
}

ordered_json statsJson(const ops::StatsResult& r)
{
    ordered_json doc;
    doc["source"] = r.source;
    doc["device"] = r.device;
    ordered_json tensors = ordered_json::array();
    for (const auto& t : r.tensors) {
        if (!t.aliasOf.empty()) {
            tensors.push_back({{"name", t.name}, {"alias_of", t.aliasOf}});
            continue;
        }
        const gpu::Stats& s = t.stats;
        ordered_json j{
            {"name", t.name}, {"dtype", torch::name(t.dtype)}, {"shape", t.shape}, {"count", s.count}};
        const bool any = s.valid() > 0;
        j["min"] = any ? num(s.min) : nullptr;
        j["max"] = any ? num(s.max) : nullptr;
        j["mean"] = any ? num(s.mean) : nullptr;
        j["std"] = s.valid() > 1 ? num(s.std()) : nullptr;
        j["absmax"] = any ? num(s.absmax) : nullptr;
        j["l2"] = num(s.l2());
        j["zeros"] = s.zeros;
        j["nans"] = s.nans;
        j["infs"] = s.infs;
        if (t.histogram) j["histogram"] = histogramJson(*t.histogram);
        tensors.push_back(std::move(j));
    }
    doc["tensors"] = std::move(tensors);
    doc["skipped"] = r.skipped;
    doc["warnings"] = r.warnings;
    return doc;
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

// The document `ckpt diff --json` has always written (tensors compared, the names only one
// side has, shape or dtype changes, totals), plus each side's tag and each tensor's status.
ordered_json diffJson(const ops::DiffResult& r)
{
    ordered_json doc;
    doc["a"] = r.a.label;
    doc["b"] = r.b.label;
    doc["a_tag"] = r.a.tag;
    doc["b_tag"] = r.b.tag;
    doc["device"] = r.device;
    ordered_json tensors = ordered_json::array(), onlyA = ordered_json::array(),
                 onlyB = ordered_json::array(), changed = ordered_json::array();
    uint64_t identical = 0, different = 0;
    double worst = 0;
    auto shapeJson = [](torch::DType dtype, const std::vector<int64_t>& shape) {
        return ordered_json{{"dtype", torch::name(dtype)}, {"shape", shape}};
    };
    for (const auto& t : r.tensors) {
        if (t.status == ops::DiffStatus::OnlyInA) onlyA.push_back(t.name);
        if (t.status == ops::DiffStatus::OnlyInB) onlyB.push_back(t.name);
        if (t.status == ops::DiffStatus::ShapeOrDTypeChanged || t.status == ops::DiffStatus::DTypeChanged)
            changed.push_back({{"name", t.name},
                               {"a", shapeJson(t.dtypeA, t.shapeA)},
                               {"b", shapeJson(t.dtypeB, t.shapeB)}});
        if (!t.compared) continue;
        const gpu::DiffStats& d = t.diff;
        // Values equal across a dtype change count as identical here, as they always have.
        const bool same =
            d.nanMismatch == 0 && d.maxAbsDiff == 0 && (!t.bitwiseKnown || d.bitwiseEqual == d.count);
        same ? ++identical : ++different;
        worst = std::max(worst, d.maxAbsDiff);
        ordered_json j{
            {"name", t.name},
            {"status", ops::statusName(t.status)},
            {"count", d.count},
            {"identical", same},
            {"max_abs_diff", num(d.maxAbsDiff)},
            {"l2_diff", num(d.l2Diff())},
            {"rel_l2", num(d.relL2())},
            {"cosine", num(d.cosine())},
            {"bitwise_equal", t.bitwiseKnown ? ordered_json(d.bitwiseEqual) : ordered_json(nullptr)},
            {"nan_mismatch", d.nanMismatch}};
        if (t.sideStats) {
            j["mean_a"] = num(t.statsA.mean), j["std_a"] = num(t.statsA.std());
            j["mean_b"] = num(t.statsB.mean), j["std_b"] = num(t.statsB.std());
        }
        tensors.push_back(std::move(j));
    }
    doc["tensors"] = std::move(tensors);
    const ordered_json totals{{"compared", identical + different},
                              {"identical", identical},
                              {"different", different},
                              {"only_a", onlyA.size()},
                              {"only_b", onlyB.size()},
                              {"changed", changed.size()},
                              {"max_abs_diff", num(worst)}};
    doc["only_a"] = std::move(onlyA);
    doc["only_b"] = std::move(onlyB);
    doc["changed"] = std::move(changed);
    doc["totals"] = totals;
    doc["warnings"] = r.warnings;
    return doc;
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
        statsJson, printStats);
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
        diffJson, printDiff);
}

} // namespace ckpt::cli
