// The operations of `ckpt` (export, universal, slim, stats, diff) for Python: the CLI's options
// as arguments, results as plain dicts the package turns into dataclasses (Universal and slim: the
// `--json` documents themselves, ops::toJson), each run by runJob
// (progress, Ctrl+C and cancel; partial output removed by the operation itself).
#include "bindings.h"
#include "job.h"

#include "compute_backend.h"
#include "io/error.h"
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/slim.h"
#include "ops/universal.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>
#include <nlohmann/json.hpp>

namespace ckpt::python {

namespace {

// What a job reads: an opened checkpoint (nothing parsed again) or a path the operation opens
// itself (after checking its output, before parsing anything).
struct Input
{
    std::shared_ptr<Opened> opened;
    std::string path;
};

Input inputOf(nb::handle src)
{
    if (nb::isinstance<Opened>(src)) return {nb::cast<std::shared_ptr<Opened>>(src), {}};
    return {nullptr, nb::cast<std::string>(nb::str(src))};
}

// A result's `ckpt --json` document as a dict: Python reads the same keys as scripts of the CLI.
nb::dict dictOf(const nlohmann::ordered_json& doc)
{
    return nb::cast<nb::dict>(nb::module_::import_("json").attr("loads")(doc.dump()));
}

std::shared_ptr<gpu::ComputeBackend> backendOf(const std::string& device)
{
    const gpu::Device want = device == "cpu"    ? gpu::Device::Cpu
                             : device == "cuda" ? gpu::Device::Cuda
                                                : gpu::Device::Auto;
    std::string reason;
    try {
        return gpu::makeBackend(want, &reason);
    } catch (const gpu::BackendError& e) {
        throw Error(e.what());
    }
}

nb::dict exportOp(nb::handle src, const std::string& out, const std::string& tag, const std::string& format,
                  std::optional<std::string> dtype, const std::string& maxShardSize, bool excludeFrozen,
                  std::vector<std::string> ignore, bool all, bool overwrite, const std::string& device,
                  nb::object poll)
{
    ops::ConsolidateOptions o;
    o.tag = tag;
    if (format != "safetensors" && format != "bin") throw Error("format must be 'safetensors' or 'bin'");
    o.format =
        format == "bin" ? ops::ConsolidateOptions::Format::Bin : ops::ConsolidateOptions::Format::Safetensors;
    o.dtype = dtypeOf(dtype);
    o.maxShardSize = ops::parseShardSize(maxShardSize);
    o.excludeFrozen = excludeFrozen;
    o.ignore = std::move(ignore);
    o.all = all;
    o.overwrite = overwrite;
    o.backend = backendOf(device);
    const Input in = inputOf(src);
    const auto r = runJob<ops::ConsolidateResult>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            return in.opened ? ops::consolidate(in.opened->tag(tag), out, o, sink, cancel)
                             : ops::consolidate(in.path, out, o, sink, cancel);
        });
    return dictOf(ops::toJson(r));
}

nb::dict universalOp(nb::handle src, const std::string& out, const std::string& tag, bool injectMissingState,
                     bool overwrite, nb::object poll)
{
    ops::UniversalOptions o;
    o.tag = tag;
    o.injectMissingState = injectMissingState;
    o.overwrite = overwrite;
    const Input in = inputOf(src);
    const auto r = runJob<ops::UniversalResult>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            return in.opened ? ops::universal(in.opened->tag(tag), out, o, sink, cancel)
                             : ops::universal(in.path, out, o, sink, cancel);
        });
    return dictOf(ops::toJson(r));
}

nb::dict slimOp(const std::string& path, const std::string& out, bool dryRun, bool overwrite, nb::object poll)
{
    ops::SlimOptions o;
    o.dryRun = dryRun;
    o.overwrite = overwrite;
    const auto r = runJob<ops::SlimResult>(std::move(poll),
                                           [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
                                               return ops::slim(path, out, o, sink, cancel);
                                           });
    return dictOf(ops::toJson(r));
}

nb::dict statsDict(const gpu::Stats& s)
{
    nb::dict d;
    d["count"] = s.count;
    d["zeros"] = s.zeros;
    d["nans"] = s.nans;
    d["infs"] = s.infs;
    d["min"] = s.min;
    d["max"] = s.max;
    d["mean"] = s.mean;
    d["std"] = s.std();
    d["absmax"] = s.absmax;
    d["l2"] = s.l2();
    return d;
}

nb::object histogramDict(const std::optional<gpu::Histogram>& h)
{
    if (!h) return nb::none();
    nb::dict d;
    d["bins"] = h->bins;
    d["lo"] = h->lo;
    d["hi"] = h->hi;
    d["log10"] = h->log10;
    d["zeros"] = h->zeros;
    d["non_finite"] = h->nonFinite;
    return d;
}

nb::dict statsOp(nb::handle src, const std::string& tag, std::optional<std::string> dtype, int bins,
                 bool log10, const std::string& device, nb::object poll)
{
    ops::AnalyzeOptions o;
    o.source.tag = tag;
    o.source.dtype = dtypeOf(dtype);
    o.histogramBins = bins;
    o.histogramLog10 = log10;
    auto backend = backendOf(device);
    o.source.backend = backend;
    const Input in = inputOf(src);
    const auto r = runJob<ops::StatsResult>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            return in.opened ? ops::computeStats(in.opened->tag(tag), o, *backend, sink, cancel)
                             : ops::computeStats(in.path, o, *backend, sink, cancel);
        });
    nb::list tensors;
    for (const auto& t : r.tensors) {
        nb::dict e = statsDict(t.stats);
        e["name"] = t.name;
        e["alias_of"] = t.aliasOf;
        e["dtype"] = std::string(torch::name(t.dtype));
        e["shape"] = t.shape;
        e["histogram"] = histogramDict(t.histogram);
        tensors.append(e);
    }
    nb::dict d;
    d["source"] = r.source;
    d["device"] = r.device;
    d["tensors"] = tensors;
    d["skipped"] = r.skipped;
    d["warnings"] = r.warnings;
    return d;
}

nb::dict diffEntry(const ops::TensorDiff& t)
{
    nb::dict e;
    e["name"] = t.name;
    e["status"] = ops::statusName(t.status);
    e["dtype_a"] = std::string(torch::name(t.dtypeA));
    e["dtype_b"] = std::string(torch::name(t.dtypeB));
    e["shape_a"] = t.shapeA;
    e["shape_b"] = t.shapeB;
    e["compared"] = t.compared;
    e["bitwise_known"] = t.bitwiseKnown;
    e["count"] = t.diff.count;
    e["bitwise_equal"] = t.diff.bitwiseEqual;
    e["nan_mismatch"] = t.diff.nanMismatch;
    e["max_abs_diff"] = t.diff.maxAbsDiff;
    e["l2_diff"] = t.diff.l2Diff();
    e["rel_l2"] = t.diff.relL2();
    e["cosine"] = t.diff.cosine();
    e["stats_a"] = t.sideStats ? nb::object(statsDict(t.statsA)) : nb::none();
    e["stats_b"] = t.sideStats ? nb::object(statsDict(t.statsB)) : nb::none();
    return e;
}

nb::dict sideDict(const ops::DiffSide& s)
{
    nb::dict d;
    d["path"] = s.path;
    d["label"] = s.label;
    d["tag"] = s.tag;
    return d;
}

nb::dict diffOp(nb::handle a, nb::handle b, const std::string& tagA, const std::string& tagB, bool moments,
                bool sideStats, const std::string& device, nb::object poll)
{
    ops::DiffOptions o;
    o.a.tag = tagA;
    o.b.tag = tagB;
    o.moments = moments;
    o.sideStats = sideStats;
    auto backend = backendOf(device);
    o.a.backend = o.b.backend = backend;
    const Input ia = inputOf(a), ib = inputOf(b);
    const auto r = runJob<ops::DiffResult>(std::move(poll), [&](const io::ProgressSink& sink,
                                                                const io::CancelToken& cancel) {
        if (ia.opened && ib.opened)
            return ops::computeDiff(ia.opened->tag(tagA), ib.opened->tag(tagB), o, *backend, sink, cancel);
        if (ia.opened || ib.opened)
            return ops::computeDiff(ia.opened ? ia.opened->tag(tagA) : layout::openTag(ia.path, tagA),
                                    ib.opened ? ib.opened->tag(tagB) : layout::openTag(ib.path, tagB), o,
                                    *backend, sink, cancel);
        return ops::computeDiff(ia.path, ib.path, o, *backend, sink, cancel);
    });
    nb::list tensors;
    for (const auto& t : r.tensors)
        tensors.append(diffEntry(t));
    nb::dict d;
    d["a"] = sideDict(r.a);
    d["b"] = sideDict(r.b);
    d["device"] = r.device;
    d["tensors"] = tensors;
    d["warnings"] = r.warnings;
    return d;
}

} // namespace

void bindOperations(nb::module_& m)
{
    m.def("export", &exportOp, "src"_a, "out"_a, "tag"_a, "format"_a, "dtype"_a.none(), "max_shard_size"_a,
          "exclude_frozen"_a, "ignore"_a, "all"_a, "overwrite"_a, "device"_a, "poll"_a.none());
    m.def("universal", &universalOp, "src"_a, "out"_a, "tag"_a, "inject_missing_state"_a, "overwrite"_a,
          "poll"_a.none());
    m.def("slim", &slimOp, "path"_a, "out"_a, "dry_run"_a, "overwrite"_a, "poll"_a.none());
    m.def("stats", &statsOp, "src"_a, "tag"_a, "dtype"_a.none(), "histogram_bins"_a, "histogram_log10"_a,
          "device"_a, "poll"_a.none());
    m.def("diff", &diffOp, "a"_a, "b"_a, "tag_a"_a, "tag_b"_a, "moments"_a, "side_stats"_a, "device"_a,
          "poll"_a.none());
}

} // namespace ckpt::python
