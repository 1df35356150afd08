// Each result's `--json` document: what `ckpt` prints and scripts read (../shared/DESIGN.md,
// the ckpt contract). Declared beside each result type; defined here, in the one translation unit
// of ops that builds documents, so the result headers need only nlohmann's forward declarations.
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/scan.h"
#include "ops/slim.h"
#include "ops/universal.h"

#include <cmath>
#include <nlohmann/json.hpp>

namespace ckpt::ops {

using nlohmann::ordered_json;

namespace {

// JSON has no NaN/Inf: write them as strings, as Python's json would not (it writes NaN);
// a string keeps the document valid for every parser.
ordered_json num(double v)
{
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

ordered_json histogramJson(const gpu::Histogram& h)
{
    return {{"lo", h.lo},     {"hi", h.hi},       {"log10", h.log10},
            {"bins", h.bins}, {"zeros", h.zeros}, {"non_finite", h.nonFinite}};
}

} // namespace

ordered_json toJson(const StatsResult& r)
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

// The document `ckpt diff --json` has always written (tensors compared, the names only one
// side has, shape or dtype changes, totals), plus each side's tag and each tensor's status.
ordered_json toJson(const DiffResult& r)
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
        if (t.status == DiffStatus::OnlyInA) onlyA.push_back(t.name);
        if (t.status == DiffStatus::OnlyInB) onlyB.push_back(t.name);
        if (t.status == DiffStatus::ShapeOrDTypeChanged || t.status == DiffStatus::DTypeChanged)
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
            {"status", statusName(t.status)},
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

ordered_json toJson(const ConsolidateResult& r)
{
    return {{"tag", r.tag},
            {"files", r.files},
            {"tensors", r.tensors},
            {"bytes", r.bytes},
            {"warnings", r.warnings}};
}

ordered_json toJson(const UniversalResult& r)
{
    return {{"tag", r.tag},
            {"tag_dir", r.tagDir},
            {"output", r.output},
            {"latest_universal", r.latestFile},
            {"zero_stage", r.zeroStage},
            {"world_size", r.worldSize},
            {"tensor_parallel", r.tensorParallel},
            {"optimizer", r.optimizer},
            {"parameters", r.parameters},
            {"files", r.files},
            {"tensor_bytes", r.tensorBytes},
            {"copied_bytes", r.copiedBytes},
            {"bytes_written", r.bytesWritten},
            {"warnings", r.warnings}};
}

ordered_json toJson(const SlimResult& r)
{
    ordered_json doc;
    doc["files"] = ordered_json::array();
    for (const auto& f : r.files)
        doc["files"].push_back({{"path", f.path},
                                {"action", f.action},
                                {"bytes_before", f.bytesBefore},
                                {"bytes_after", f.bytesAfter},
                                {"storage_bytes_before", f.storageBefore},
                                {"storage_bytes_after", f.storageAfter},
                                {"used_bytes", f.usedBytes},
                                {"storages_before", f.storagesBefore},
                                {"storages_after", f.storagesAfter}});
    doc["bytes_before"] = r.bytesBefore();
    doc["bytes_after"] = r.bytesAfter();
    doc["warnings"] = r.warnings;
    return doc;
}

ordered_json toJson(const ScanReport& r)
{
    ordered_json doc{
        {"file", r.file}, {"format", r.format}, {"pickles", r.pickles}, {"dangerous", r.dangerous()}};
    auto& g = doc["globals"] = ordered_json::array();
    for (const auto& f : r.findings)
        g.push_back({{"module", f.module},
                     {"name", f.name},
                     {"safety", pickle::safetyName(f.safety)},
                     {"count", f.count},
                     {"first_seen", f.where}});
    doc["errors"] = r.errors;
    return doc;
}

} // namespace ckpt::ops
