// The operations of `ckpt` (export, universal, slim, stats, diff, scan) for Python: the CLI's options
// as arguments, results as the engine's own result types (results.h: attributes named as the
// `--json` keys), each run by runJob (progress, Ctrl+C and cancel; partial output removed by the
// operation itself).
#include "bindings.h"
#include "job.h"
#include "results.h"

#include "compute_backend.h"
#include "io/error.h"
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "ops/scan.h"
#include "ops/slim.h"
#include "ops/universal.h"
#include "ops/verify.h"

#include <nanobind/stl/optional.h>
#include <nanobind/stl/shared_ptr.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

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

ops::ConsolidateResult exportOp(nb::handle src, const std::string& out, const std::string& tag,
                                const std::string& format, std::optional<std::string> dtype,
                                const std::string& maxShardSize, bool excludeFrozen,
                                std::vector<std::string> ignore, bool all, bool raw, bool overwrite,
                                const std::string& device, const std::string& manifestOut, nb::object poll)
{
    ops::ConsolidateOptions o;
    o.manifestOut = manifestOut;
    o.tag = tag;
    if (format != "safetensors" && format != "bin") throw Error("format must be 'safetensors' or 'bin'");
    o.format =
        format == "bin" ? ops::ConsolidateOptions::Format::Bin : ops::ConsolidateOptions::Format::Safetensors;
    o.dtype = dtypeOf(dtype);
    o.maxShardSize = ops::parseShardSize(maxShardSize);
    o.excludeFrozen = excludeFrozen;
    o.ignore = std::move(ignore);
    o.all = all;
    o.raw = raw;
    o.overwrite = overwrite;
    o.backend = backendOf(device);
    const Input in = inputOf(src);
    return runJob<ops::ConsolidateResult>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            return in.opened ? ops::consolidate(in.opened->tag(tag), out, o, sink, cancel)
                             : ops::consolidate(in.path, out, o, sink, cancel);
        });
}

ops::UniversalResult universalOp(nb::handle src, const std::string& out, const std::string& tag,
                                 bool injectMissingState, bool overwrite, nb::object poll)
{
    ops::UniversalOptions o;
    o.tag = tag;
    o.injectMissingState = injectMissingState;
    o.overwrite = overwrite;
    const Input in = inputOf(src);
    return runJob<ops::UniversalResult>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            return in.opened ? ops::universal(in.opened->tag(tag), out, o, sink, cancel)
                             : ops::universal(in.path, out, o, sink, cancel);
        });
}

ops::SlimResult slimOp(const std::string& path, const std::string& out, bool dryRun, bool overwrite,
                       nb::object poll)
{
    ops::SlimOptions o;
    o.dryRun = dryRun;
    o.overwrite = overwrite;
    return runJob<ops::SlimResult>(std::move(poll),
                                   [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
                                       return ops::slim(path, out, o, sink, cancel);
                                   });
}

ops::StatsResult statsOp(nb::handle src, const std::string& tag, std::optional<std::string> dtype, int bins,
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
    return runJob<ops::StatsResult>(
        std::move(poll), [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
            return in.opened ? ops::computeStats(in.opened->tag(tag), o, *backend, sink, cancel)
                             : ops::computeStats(in.path, o, *backend, sink, cancel);
        });
}

ops::DiffResult diffOp(nb::handle a, nb::handle b, const std::string& tagA, const std::string& tagB,
                       bool moments, bool sideStats, const std::string& device, nb::object poll)
{
    ops::DiffOptions o;
    o.a.tag = tagA;
    o.b.tag = tagB;
    o.moments = moments;
    o.sideStats = sideStats;
    auto backend = backendOf(device);
    o.a.backend = o.b.backend = backend;
    const Input ia = inputOf(a), ib = inputOf(b);
    return runJob<ops::DiffResult>(std::move(poll), [&](const io::ProgressSink& sink,
                                                        const io::CancelToken& cancel) {
        if (ia.opened && ib.opened)
            return ops::computeDiff(ia.opened->tag(tagA), ib.opened->tag(tagB), o, *backend, sink, cancel);
        if (ia.opened || ib.opened)
            return ops::computeDiff(ia.opened ? ia.opened->tag(tagA) : layout::openTag(ia.path, tagA),
                                    ib.opened ? ib.opened->tag(tagB) : layout::openTag(ib.path, tagB), o,
                                    *backend, sink, cancel);
        return ops::computeDiff(ia.path, ib.path, o, *backend, sink, cancel);
    });
}

// `ckpt verify`: what the checkpoint's files prove of it, and its manifest where there is one.
ops::VerifyReport verifyOp(const std::string& path, const std::string& tag, bool allTags,
                           const std::string& manifest, const std::string& writeManifest, bool megatron,
                           nb::object poll)
{
    ops::VerifyOptions o;
    o.tag = tag;
    o.allTags = allTags;
    o.manifest = manifest;
    o.writeManifest = writeManifest;
    o.megatronManifest = megatron;
    return runJob<ops::VerifyReport>(std::move(poll),
                                     [&](const io::ProgressSink& sink, const io::CancelToken& cancel) {
                                         return ops::verify(path, o, sink, cancel);
                                     });
}

// Every pickle of a file, of a folder's files or of an archive's members, as `ckpt scan` reads
// them: parsed, never run. A single file is a folder scan of one.
ops::FolderScan scanOp(const std::string& path, nb::object poll)
{
    return runJob<ops::FolderScan>(std::move(poll),
                                   [&](const io::ProgressSink&, const io::CancelToken& cancel) {
                                       return ops::scanFolder(path, [&] { return cancel.cancelled(); });
                                   });
}

} // namespace

void bindOperations(nb::module_& m)
{
    bindResults(m);
    m.def("export", &exportOp, "src"_a, "out"_a, "tag"_a, "format"_a, "dtype"_a.none(), "max_shard_size"_a,
          "exclude_frozen"_a, "ignore"_a, "all"_a, "raw"_a, "overwrite"_a, "device"_a, "manifest_out"_a,
          "poll"_a.none());
    m.def("universal", &universalOp, "src"_a, "out"_a, "tag"_a, "inject_missing_state"_a, "overwrite"_a,
          "poll"_a.none());
    m.def("slim", &slimOp, "path"_a, "out"_a, "dry_run"_a, "overwrite"_a, "poll"_a.none());
    m.def("stats", &statsOp, "src"_a, "tag"_a, "dtype"_a.none(), "histogram_bins"_a, "histogram_log10"_a,
          "device"_a, "poll"_a.none());
    m.def("scan", &scanOp, "path"_a, "poll"_a.none());
    m.def("verify", &verifyOp, "path"_a, "tag"_a, "all_tags"_a, "manifest"_a, "write_manifest"_a,
          "megatron"_a, "poll"_a.none());
    m.def("diff", &diffOp, "a"_a, "b"_a, "tag_a"_a, "tag_b"_a, "moments"_a, "side_stats"_a, "device"_a,
          "poll"_a.none());
}

} // namespace ckpt::python
