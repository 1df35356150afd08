// `ckpt stats` and `ckpt diff` (and the window's comparison): per-tensor statistics, and the
// per-tensor comparison of two files, checkpoints or tags, streamed through the compute backend
// with progress and cancel. Results are plain values with their JSON beside them; cli/ renders them as text.
#pragma once

#include "compute_backend.h"
#include "ops/describe.h"
#include "ops/job.h"
#include "ops/tensor_source.h"

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::ops {

struct AnalyzeOptions
{
    SourceOptions source;  // tag, dtype for checkpoints (stats/diff read what export would write)
    int histogramBins = 0; // stats: add a histogram with this many bins (0: none)
    bool histogramLog10 = false;
};

struct TensorStats
{
    std::string name;
    std::string aliasOf; // a tied alias: no statistics of its own
    torch::DType dtype = torch::DType::Float32;
    std::vector<int64_t> shape;
    gpu::Stats stats;
    std::optional<gpu::Histogram> histogram;

    template <class V> static void describe(V& v); // a tied alias has only its name and alias_of
};

struct StatsResult
{
    std::string source; // the TensorSet's label
    std::string device; // "cpu: 16 CPU threads"
    std::vector<TensorStats> tensors;
    std::vector<std::string> skipped, warnings;

    template <class V> static void describe(V& v)
    {
        v("source", &StatsResult::source);
        v("device", &StatsResult::device);
        v("tensors", &StatsResult::tensors);
        v("skipped", &StatsResult::skipped);
        v("warnings", &StatsResult::warnings);
    }
};
// `ckpt stats --json`: per tensor its statistics (NaN and infinities as strings) and histogram.
nlohmann::ordered_json toJson(const StatsResult& r);

template <class V> void TensorStats::describe(V& v)
{
    using T = TensorStats;
    const auto own = [](const T& t) { return t.aliasOf.empty(); };
    const auto alias = [](const T& t) { return !t.aliasOf.empty(); };
    // min, max, mean and absmax need one valid (non-NaN) element, std two: else unknown.
    const auto known = [](bool k, double x) { return k ? Nullable<Real>{Real{x}} : Nullable<Real>{}; };
    v("name", &T::name);
    v("alias_of", &T::aliasOf, alias);
    v(
        "dtype", [](const T& t) { return std::string(torch::name(t.dtype)); }, own);
    v("shape", &T::shape, own);
    v(
        "count", [](const T& t) { return t.stats.count; }, own);
    v(
        "min", [known](const T& t) { return known(t.stats.valid() > 0, t.stats.min); }, own);
    v(
        "max", [known](const T& t) { return known(t.stats.valid() > 0, t.stats.max); }, own);
    v(
        "mean", [known](const T& t) { return known(t.stats.valid() > 0, t.stats.mean); }, own);
    v(
        "std", [known](const T& t) { return known(t.stats.valid() > 1, t.stats.std()); }, own);
    v(
        "absmax", [known](const T& t) { return known(t.stats.valid() > 0, t.stats.absmax); }, own);
    v(
        "l2", [](const T& t) { return Real{t.stats.l2()}; }, own);
    v(
        "zeros", [](const T& t) { return t.stats.zeros; }, own);
    v(
        "nans", [](const T& t) { return t.stats.nans; }, own);
    v(
        "infs", [](const T& t) { return t.stats.infs; }, own);
    v("histogram", &T::histogram, own);
}

// The statistics of every model tensor of a tag (options.source.tag is not read: the tag is given).
StatsResult computeStats(const layout::OpenedTag& in, const AnalyzeOptions& options,
                         gpu::ComputeBackend& backend, const ProgressSink& progress,
                         const CancelToken& cancel);
// The same from a path, opened through the registry (the tag options.source.tag names).
StatsResult computeStats(const std::string& path, const AnalyzeOptions& options, gpu::ComputeBackend& backend,
                         const ProgressSink& progress, const CancelToken& cancel);

// --- diff -----------------------------------------------------------------------------------

// DTypeChanged: one shape, another dtype (an fp32 master and its bf16 copy): the values are
// compared all the same, each side widened to float64 (exact for every float type), and the
// numbers stand beside the change. ShapeOrDTypeChanged: another shape; nothing compared.
enum class DiffStatus { Identical, Changed, OnlyInA, OnlyInB, ShapeOrDTypeChanged, DTypeChanged };
// "identical", "changed", "only_a", "only_b", "shape_or_dtype", "dtype_changed"
const char* statusName(DiffStatus s);

// One side of a comparison: what was read, and which tag of it.
struct DiffSide
{
    std::string path;
    std::string label; // "CHECKPOINT (tag global_step4)" or the file
    std::string tag;   // checkpoints: the tag read; files: empty
};

struct TensorDiff
{
    std::string name;
    DiffStatus status = DiffStatus::Identical;
    torch::DType dtypeA = torch::DType::Float32, dtypeB = torch::DType::Float32;
    std::vector<int64_t> shapeA, shapeB;
    bool compared = false;     // values compared (both sides present, one shape)
    bool bitwiseKnown = false; // one dtype on both sides: diff.bitwiseEqual means something
    gpu::DiffStats diff;
    bool sideStats = false; // statsA/statsB computed
    gpu::Stats statsA, statsB;
    // With DiffOptions::histogramBins: A and B over one shared range (so they overlay), a-b
    // over its own.
    std::optional<gpu::Histogram> histA, histB, histDiff;
    // A tied alias listed beside the tensors (the window's table): the tensor it ties to, whose
    // numbers it shows. Never counted: the comparison holds that tensor once.
    std::string tiedTo;

    // The `ckpt diff --json` row of a compared tensor (DiffResult lists only those).
    template <class V> static void describe(V& v);
};

// A side's dtype and shape where they differ (DiffResult's "changed").
struct DiffShape
{
    torch::DType dtype = torch::DType::Float32;
    std::vector<int64_t> shape;

    template <class V> static void describe(V& v)
    {
        v("dtype", [](const DiffShape& s) { return std::string(torch::name(s.dtype)); });
        v("shape", &DiffShape::shape);
    }
};

struct DiffChange
{
    std::string name;
    DiffShape a, b;

    template <class V> static void describe(V& v)
    {
        v("name", &DiffChange::name);
        v("a", &DiffChange::a);
        v("b", &DiffChange::b);
    }
};

// A comparison's totals as `ckpt diff --json` gives them: a tensor is identical when its values
// are (across a dtype change too, as they always have been).
struct DiffSummary
{
    uint64_t compared = 0, identical = 0, different = 0, onlyA = 0, onlyB = 0, changed = 0;
    double maxAbsDiff = 0;

    template <class V> static void describe(V& v)
    {
        v("compared", &DiffSummary::compared);
        v("identical", &DiffSummary::identical);
        v("different", &DiffSummary::different);
        v("only_a", &DiffSummary::onlyA);
        v("only_b", &DiffSummary::onlyB);
        v("changed", &DiffSummary::changed);
        v("max_abs_diff", [](const DiffSummary& s) { return Real{s.maxAbsDiff}; });
    }
};

struct DiffResult
{
    DiffSide a, b;
    std::string device;
    std::vector<TensorDiff> tensors; // A's order, then what only B has
    std::vector<std::string> warnings;
    // Side A's tied aliases (alias, the tensor it ties to): compared once, as that tensor.
    std::vector<std::pair<std::string, std::string>> tied;

    template <class V> static void describe(V& v);
};
// The values of a compared tensor are equal (bit for bit where one dtype allows it to be known).
bool valuesIdentical(const TensorDiff& t);
std::vector<TensorDiff> comparedTensors(const DiffResult& r);
std::vector<std::string> namesWithStatus(const DiffResult& r, DiffStatus status);
std::vector<DiffChange> shapeChanges(const DiffResult& r);
DiffSummary summaryOf(const DiffResult& r);

template <class V> void TensorDiff::describe(V& v)
{
    using T = TensorDiff;
    const auto sides = [](const T& t) { return t.sideStats; };
    v("name", &T::name);
    v("status", [](const T& t) { return std::string(statusName(t.status)); });
    v("count", [](const T& t) { return t.diff.count; });
    v("identical", valuesIdentical);
    v("max_abs_diff", [](const T& t) { return Real{t.diff.maxAbsDiff}; });
    v("l2_diff", [](const T& t) { return Real{t.diff.l2Diff()}; });
    v("rel_l2", [](const T& t) { return Real{t.diff.relL2()}; });
    v("cosine", [](const T& t) { return Real{t.diff.cosine()}; });
    v("bitwise_equal", [](const T& t) {
        return t.bitwiseKnown ? Nullable<uint64_t>{t.diff.bitwiseEqual} : Nullable<uint64_t>{};
    });
    v("nan_mismatch", [](const T& t) { return t.diff.nanMismatch; });
    v(
        "mean_a", [](const T& t) { return Real{t.statsA.mean}; }, sides);
    v(
        "std_a", [](const T& t) { return Real{t.statsA.std()}; }, sides);
    v(
        "mean_b", [](const T& t) { return Real{t.statsB.mean}; }, sides);
    v(
        "std_b", [](const T& t) { return Real{t.statsB.std()}; }, sides);
}

// The document `ckpt diff --json` has always written (tensors compared, the names only one side
// has, shape or dtype changes, totals), plus each side's tag.
template <class V> void DiffResult::describe(V& v)
{
    using R = DiffResult;
    v("a", [](const R& r) { return r.a.label; });
    v("b", [](const R& r) { return r.b.label; });
    v("a_tag", [](const R& r) { return r.a.tag; });
    v("b_tag", [](const R& r) { return r.b.tag; });
    v("device", &R::device);
    v("tensors", comparedTensors);
    v("only_a", [](const R& r) { return namesWithStatus(r, DiffStatus::OnlyInA); });
    v("only_b", [](const R& r) { return namesWithStatus(r, DiffStatus::OnlyInB); });
    v("changed", shapeChanges);
    v("totals", summaryOf);
    v("warnings", &R::warnings);
}
// `ckpt diff --json`: the tensors compared, the names only one side has, shape or dtype changes
// and totals, each side's tag and each tensor's status.
nlohmann::ordered_json toJson(const DiffResult& r);

struct DiffTotals
{
    uint64_t compared = 0, identical = 0, changed = 0, onlyA = 0, onlyB = 0, shapeOrDType = 0,
             dtypeChanged = 0;
    double maxAbsDiff = 0;
};
DiffTotals totalsOf(const std::vector<TensorDiff>& tensors);

struct DiffOptions
{
    SourceOptions a, b;     // per side: tag (empty = latest), dtype, backend for casts
    bool sideStats = false; // mean/std/... of A and B as well (one more reduction per side)
    int histogramBins = 0;  // > 0: histograms of A, B and a-b (a second pass over chunked tensors)
    // The optimizer moments of each parameter too, as tensors "<param>/exp_avg",
    // "<param>/exp_avg_sq" (or as its optimizer names them), compared as stored
    // (layout::momentTensors).
    bool moments = false;
};

// The model tensors of `path`'s tag, as diff reads them, followed by its moments when asked
// (a warning in the set when it has none).
TensorSet diffTensors(const layout::OpenedTag& in, const SourceOptions& options, bool moments);
TensorSet diffTensors(const std::string& path, const SourceOptions& options, bool moments);

// One row of a comparison as a view shows it: the tensor's name and status, then numbers by key
// (nullopt: unknown).
struct DiffRow
{
    std::string name;
    DiffStatus status = DiffStatus::Identical;
    std::vector<std::pair<std::string, std::optional<double>>> numbers;
};
// The rows as a JSON array of objects {"name", "status", key: number...}, indented; NaN, Inf and
// unknown numbers are null (JSON has neither). What the comparison window exports of its table.
std::string diffRowsJson(const std::vector<DiffRow>& rows);

// Called with each tensor's result as soon as it is known, on the computing thread.
using DiffSink = std::function<void(const TensorDiff&)>;

// Tensors are matched by name; a tied alias is compared once, as its target. When a device's
// self-check catches a wrong result the comparison is redone on the CPU, and onTensor then sees
// every tensor a second time, with the CPU's numbers (which replace the first).
// Throws Error on damage, Cancelled when cancelled.
DiffResult computeDiff(const layout::OpenedTag& a, const layout::OpenedTag& b, const DiffOptions& options,
                       gpu::ComputeBackend& backend, const ProgressSink& progress, const CancelToken& cancel,
                       const DiffSink& onTensor = {});
// The same from paths, each opened through the registry (the tags options.a.tag and .b.tag name).
DiffResult computeDiff(const std::string& a, const std::string& b, const DiffOptions& options,
                       gpu::ComputeBackend& backend, const ProgressSink& progress, const CancelToken& cancel,
                       const DiffSink& onTensor = {});

} // namespace ckpt::ops
