#include "ops/analyze.h"

#include "cast.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <tuple>

namespace ckpt::ops {

namespace {

constexpr uint64_t kChunk = 64u << 20;

// Calls fn(view, len) for consecutive element ranges [first, first + len) of a tensor: in place
// when its bytes lie contiguous in a mapped file, else through a bounded staging buffer.
gpu::StridedView chunkView(const SourceTensor& t, uint32_t es, uint64_t first, uint64_t len,
                           std::vector<uint8_t>& buf)
{
    if (t.direct) return gpu::StridedView{t.direct + first * es, es, {int64_t(len)}, {1}, 0};
    buf.resize(len * es);
    if (len) t.tensor.fill(first * es, len * es, buf.data());
    return gpu::StridedView{buf.data(), es, {int64_t(len)}, {1}, 0};
}

template <typename Fn>
void chunks(const SourceTensor& t, std::vector<uint8_t>& buf, const CancelToken& cancel, Fn fn)
{
    const uint32_t es = torch::elementSize(t.tensor.dtype);
    const uint64_t n = t.tensor.nbytes / es;
    const uint64_t per = kChunk / es;
    for (uint64_t first = 0; first < n || (n == 0 && first == 0); first += per) {
        cancel.throwIfCancelled();
        const uint64_t len = std::min(per, n - first);
        fn(chunkView(t, es, first, len, buf), len);
        if (n == 0) break;
    }
}

// Bins of one pass per chunk, added up: over a fixed [lo, hi] the parts sum to the whole.
void addHistogram(gpu::Histogram& into, const gpu::Histogram& part)
{
    for (size_t i = 0; i < into.bins.size() && i < part.bins.size(); ++i)
        into.bins[i] += part.bins[i];
    into.zeros += part.zeros;
    into.nonFinite += part.nonFinite;
}

gpu::Histogram emptyHistogram(int bins, bool log10, std::pair<double, double> range)
{
    gpu::Histogram h;
    h.log10 = log10;
    std::tie(h.lo, h.hi) = range;
    h.bins.assign(size_t(bins), 0);
    return h;
}

// What went wrong in the backends without failing the job (a device replaced by the CPU).
void addBackendWarnings(std::vector<std::string>& warnings, gpu::ComputeBackend& backend,
                        std::initializer_list<const SourceOptions*> sources)
{
    for (auto& w : backend.takeWarnings())
        warnings.push_back(std::move(w));
    std::vector<gpu::ComputeBackend*> seen{&backend};
    for (const SourceOptions* s : sources) {
        gpu::ComputeBackend* b = s->backend.get();
        if (!b || std::find(seen.begin(), seen.end(), b) != seen.end()) continue;
        seen.push_back(b);
        for (auto& w : b->takeWarnings())
            warnings.push_back(std::move(w));
    }
}

// a - b as doubles, for the histogram of differences: the backend has no subtraction, and this
// is one cheap pass over a chunk already in memory.
void differences(const gpu::StridedView& a, gpu::Scalar ta, const gpu::StridedView& b, gpu::Scalar tb,
                 uint64_t len, std::vector<double>& out)
{
    out.resize(len);
    for (uint64_t i = 0; i < len; ++i)
        out[i] =
            gpu::toDouble(ta, a.base + i * a.elementSize) - gpu::toDouble(tb, b.base + i * b.elementSize);
}

} // namespace

StatsResult computeStats(const std::string& path, const AnalyzeOptions& options, gpu::ComputeBackend& backend,
                         const ProgressSink& progress, const CancelToken& cancel)
{
    const layout::OpenedTag in =
        layout::openTag(path, options.source.tag, openingObserver(progress, cancel, "the checkpoint"));
    return computeStats(in, options, backend, progress, cancel);
}

namespace {

StatsResult computeStatsOnce(const layout::OpenedTag& in, const AnalyzeOptions& options,
                             gpu::ComputeBackend& backend, const ProgressSink& progress,
                             const CancelToken& cancel)
{
    const TensorSet set = tagTensors(in.checkpoint, *in, options.source);
    uint64_t total = 0, done = 0;
    for (const auto& t : set.tensors)
        total += t.tensor.nbytes;
    StatsResult r;
    r.source = set.label;
    r.device = backend.name() + ": " + backend.device();
    std::vector<uint8_t> buf;
    for (const auto& t : set.tensors) {
        TensorStats out;
        out.name = t.tensor.name;
        out.dtype = t.tensor.dtype;
        out.shape = t.tensor.shape;
        if (!t.aliasOf.empty()) {
            out.aliasOf = t.aliasOf;
            r.tensors.push_back(std::move(out));
            continue;
        }
        const auto type = scalarOf(t.tensor.dtype);
        // Tensors read in chunks (every consolidated one) get their histogram in a second pass,
        // binned over the range the first pass found: the same bins as over the whole tensor.
        const bool chunkedHistogram = options.histogramBins > 0 && !t.direct;
        gpu::ValueRange range;
        chunks(t, buf, cancel, [&](const gpu::StridedView& v, uint64_t len) {
            if (len) out.stats.merge(backend.stats(v, *type));
            if (len && chunkedHistogram) range.merge(gpu::valueRange(v, *type, options.histogramLog10));
            done += len * v.elementSize;
            if (progress)
                progress({int(total ? done * 1000 / total : 1000), "stats " + t.tensor.name, done, total});
        });
        if (options.histogramBins > 0 && t.direct) {
            const uint32_t es = torch::elementSize(t.tensor.dtype);
            out.histogram =
                backend.histogram(gpu::StridedView{t.direct, es, {int64_t(t.tensor.nbytes / es)}, {1}, 0},
                                  *type, options.histogramBins, options.histogramLog10, 0, 0);
        } else if (chunkedHistogram) {
            gpu::Histogram h = emptyHistogram(options.histogramBins, options.histogramLog10, range.bounds());
            chunks(t, buf, cancel, [&](const gpu::StridedView& v, uint64_t len) {
                if (len)
                    addHistogram(h, backend.histogram(v, *type, options.histogramBins, h.log10, h.lo, h.hi));
            });
            out.histogram = std::move(h);
        }
        r.tensors.push_back(std::move(out));
    }
    r.skipped = set.skipped;
    r.warnings = set.warnings;
    addBackendWarnings(r.warnings, backend, {&options.source});
    return r;
}

} // namespace

const char* statusName(DiffStatus s)
{
    switch (s) {
    case DiffStatus::Identical:
        return "identical";
    case DiffStatus::Changed:
        return "changed";
    case DiffStatus::OnlyInA:
        return "only_a";
    case DiffStatus::OnlyInB:
        return "only_b";
    case DiffStatus::ShapeOrDTypeChanged:
        return "shape_or_dtype";
    case DiffStatus::DTypeChanged:
        return "dtype_changed";
    }
    return "?";
}

DiffTotals totalsOf(const std::vector<TensorDiff>& tensors)
{
    DiffTotals t;
    for (const auto& d : tensors) {
        if (!d.tiedTo.empty()) continue; // a listed alias: its tensor is counted
        t.compared += d.compared;
        switch (d.status) {
        case DiffStatus::Identical:
            ++t.identical;
            break;
        case DiffStatus::Changed:
            ++t.changed;
            break;
        case DiffStatus::OnlyInA:
            ++t.onlyA;
            break;
        case DiffStatus::OnlyInB:
            ++t.onlyB;
            break;
        case DiffStatus::ShapeOrDTypeChanged:
            ++t.shapeOrDType;
            break;
        case DiffStatus::DTypeChanged:
            ++t.dtypeChanged;
            break;
        }
        if (d.compared) t.maxAbsDiff = std::max(t.maxAbsDiff, d.diff.maxAbsDiff);
    }
    return t;
}

bool valuesIdentical(const TensorDiff& t)
{
    const gpu::DiffStats& d = t.diff;
    return d.nanMismatch == 0 && d.maxAbsDiff == 0 && (!t.bitwiseKnown || d.bitwiseEqual == d.count);
}

std::vector<TensorDiff> comparedTensors(const DiffResult& r)
{
    std::vector<TensorDiff> out;
    std::copy_if(r.tensors.begin(), r.tensors.end(), std::back_inserter(out),
                 [](const TensorDiff& t) { return t.compared; });
    return out;
}

std::vector<std::string> namesWithStatus(const DiffResult& r, DiffStatus status)
{
    std::vector<std::string> out;
    for (const auto& t : r.tensors)
        if (t.status == status) out.push_back(t.name);
    return out;
}

std::vector<DiffChange> shapeChanges(const DiffResult& r)
{
    std::vector<DiffChange> out;
    for (const auto& t : r.tensors)
        if (t.status == DiffStatus::ShapeOrDTypeChanged || t.status == DiffStatus::DTypeChanged)
            out.push_back({t.name, {t.dtypeA, t.shapeA}, {t.dtypeB, t.shapeB}});
    return out;
}

DiffSummary summaryOf(const DiffResult& r)
{
    DiffSummary s;
    for (const auto& t : r.tensors) {
        s.onlyA += t.status == DiffStatus::OnlyInA;
        s.onlyB += t.status == DiffStatus::OnlyInB;
        s.changed += t.status == DiffStatus::ShapeOrDTypeChanged || t.status == DiffStatus::DTypeChanged;
        if (!t.compared) continue;
        valuesIdentical(t) ? ++s.identical : ++s.different;
        s.maxAbsDiff = std::max(s.maxAbsDiff, t.diff.maxAbsDiff);
    }
    s.compared = s.identical + s.different;
    return s;
}

namespace {

// One tensor of both sides, compared chunk by chunk: the difference statistics always, each
// side's statistics and the three histograms when asked. Histograms need a range first, so
// they take a second pass; A and B share theirs so that they overlay bin for bin.
class PairComparer
{
public:
    PairComparer(const DiffOptions& o, gpu::ComputeBackend& backend, const CancelToken& cancel)
        : m_options(o), m_backend(backend), m_cancel(cancel)
    {
    }

    template <typename OnChunk>
    void compare(const SourceTensor& ta, const SourceTensor& tb, TensorDiff& d, OnChunk onChunk)
    {
        const gpu::Scalar typeA = *scalarOf(ta.tensor.dtype), typeB = *scalarOf(tb.tensor.dtype);
        const int bins = m_options.histogramBins;
        gpu::ValueRange rangeAB, rangeD;
        forEachChunk(ta, tb, [&](const gpu::StridedView& va, const gpu::StridedView& vb, uint64_t len) {
            d.diff.merge(m_backend.diff(va, typeA, vb, typeB));
            if (m_options.sideStats) {
                d.statsA.merge(m_backend.stats(va, typeA));
                d.statsB.merge(m_backend.stats(vb, typeB));
            }
            if (bins > 0) {
                rangeAB.merge(gpu::valueRange(va, typeA, false));
                rangeAB.merge(gpu::valueRange(vb, typeB, false));
                differences(va, typeA, vb, typeB, len, m_delta);
                rangeD.merge(gpu::valueRange(deltaView(len), gpu::Scalar::F64, false));
            }
            onChunk(len);
        });
        d.compared = true;
        d.sideStats = m_options.sideStats;
        if (bins <= 0) return;
        gpu::Histogram ha = emptyHistogram(bins, false, rangeAB.bounds()), hb = ha,
                       hd = emptyHistogram(bins, false, rangeD.bounds());
        forEachChunk(ta, tb, [&](const gpu::StridedView& va, const gpu::StridedView& vb, uint64_t len) {
            addHistogram(ha, m_backend.histogram(va, typeA, bins, false, ha.lo, ha.hi));
            addHistogram(hb, m_backend.histogram(vb, typeB, bins, false, hb.lo, hb.hi));
            differences(va, typeA, vb, typeB, len, m_delta);
            addHistogram(hd,
                         m_backend.histogram(deltaView(len), gpu::Scalar::F64, bins, false, hd.lo, hd.hi));
        });
        d.histA = std::move(ha);
        d.histB = std::move(hb);
        d.histDiff = std::move(hd);
    }

private:
    template <typename Fn> void forEachChunk(const SourceTensor& ta, const SourceTensor& tb, Fn fn)
    {
        const uint32_t ea = torch::elementSize(ta.tensor.dtype), eb = torch::elementSize(tb.tensor.dtype);
        const uint64_t n = ta.tensor.nbytes / ea, per = kChunk / std::max(ea, eb);
        for (uint64_t first = 0; first < n; first += per) {
            m_cancel.throwIfCancelled();
            const uint64_t len = std::min(per, n - first);
            if (inPlaceChunk(ta, ea, tb, eb, first, len, fn)) continue;
            fn(chunkView(ta, ea, first, len, m_bufA), chunkView(tb, eb, first, len, m_bufB), len);
        }
    }

    // Where element `pos` of a tensor of n elements lies in a mapped file, and how many follow
    // it there; nullptr when it must be filled.
    static const uint8_t* inPlaceAt(const SourceTensor& t, uint32_t es, uint64_t pos, uint64_t n,
                                    uint64_t* run)
    {
        if (t.direct) return *run = n - pos, t.direct + pos * es;
        return t.inPlace ? t.inPlace(pos, run) : nullptr;
    }

    // Elements [first, first + len) of both sides read where they lie in the mapped files, in
    // runs contiguous on both sides (a ZeRO tag's pieces per rank): no copy into a staging
    // buffer, whose fresh pages cost more than the comparison (zeroing a new page in a VM runs
    // at ~1 GB/s), and each input byte read once. The pages read go afterwards, as fill lets
    // them go. False, with nothing done, when a part of either side must be filled.
    template <typename Fn>
    bool inPlaceChunk(const SourceTensor& ta, uint32_t ea, const SourceTensor& tb, uint32_t eb,
                      uint64_t first, uint64_t len, Fn& fn)
    {
        if ((!ta.direct && !ta.inPlace) || (!tb.direct && !tb.inPlace)) return false;
        const uint64_t n = ta.tensor.nbytes / ea, end = first + len;
        m_runs.clear();
        for (uint64_t pos = first; pos < end;) {
            uint64_t ra = 0, rb = 0;
            const uint8_t* pa = inPlaceAt(ta, ea, pos, n, &ra);
            const uint8_t* pb = inPlaceAt(tb, eb, pos, n, &rb);
            if (!pa || !pb || !ra || !rb) return false;
            const uint64_t run = std::min({ra, rb, end - pos});
            m_runs.push_back({pa, pb, run});
            pos += run;
        }
        uint64_t pos = first;
        for (const Run& r : m_runs) {
            fn(gpu::StridedView{r.a, ea, {int64_t(r.n)}, {1}, 0},
               gpu::StridedView{r.b, eb, {int64_t(r.n)}, {1}, 0}, r.n);
            if (ta.releaseInPlace) ta.releaseInPlace(pos, r.n);
            if (tb.releaseInPlace) tb.releaseInPlace(pos, r.n);
            pos += r.n;
        }
        return true;
    }

    gpu::StridedView deltaView(uint64_t len) const
    {
        return {reinterpret_cast<const uint8_t*>(m_delta.data()), 8, {int64_t(len)}, {1}, 0};
    }

    const DiffOptions& m_options;
    gpu::ComputeBackend& m_backend;
    const CancelToken& m_cancel;
    std::vector<uint8_t> m_bufA, m_bufB;
    std::vector<double> m_delta;
    struct Run
    {
        const uint8_t *a, *b;
        uint64_t n;
    };
    std::vector<Run> m_runs;
};

} // namespace

TensorSet diffTensors(const std::string& path, const SourceOptions& options, bool moments)
{
    return diffTensors(layout::openTag(path, options.tag, options.opening), options, moments);
}

TensorSet diffTensors(const layout::OpenedTag& in, const SourceOptions& options, bool moments)
{
    const layout::Tag& tag = *in;
    TensorSet set = tagTensors(in.checkpoint, tag, options);
    if (!moments) return set;
    layout::Tag m;
    m.name = tag.name;
    m.dir = tag.dir;
    m.params = layout::momentTensors(tag); // exportDtype none: moments are compared as stored
    if (m.params.empty()) {
        set.warnings.push_back("no optimizer moments (exp_avg, exp_avg_sq) to compare");
        return set;
    }
    SourceOptions o = options;
    o.dtype.reset();
    o.excludeFrozen = false;
    o.all = false;
    TensorSet ms = tagTensors(in.checkpoint, m, o);
    for (auto& t : ms.tensors)
        set.tensors.push_back(std::move(t));
    for (auto& s : ms.skipped)
        set.skipped.push_back(std::move(s));
    set.keepAlive = std::make_shared<std::pair<std::shared_ptr<void>, std::shared_ptr<void>>>(
        std::move(set.keepAlive), std::move(ms.keepAlive));
    return set;
}

namespace {

// The tensors of A and B of one name compared: status and numbers.
TensorDiff diffPair(const SourceTensor& ta, const SourceTensor& tb, PairComparer& comparer,
                    std::vector<std::string>& warnings, const std::function<void(uint64_t)>& onElements)
{
    TensorDiff d;
    d.name = ta.tensor.name;
    d.dtypeA = ta.tensor.dtype;
    d.shapeA = ta.tensor.shape;
    d.dtypeB = tb.tensor.dtype;
    d.shapeB = tb.tensor.shape;
    d.bitwiseKnown = ta.tensor.dtype == tb.tensor.dtype;
    const bool sameShape = ta.tensor.shape == tb.tensor.shape;
    const bool comparable = scalarOf(ta.tensor.dtype) && scalarOf(tb.tensor.dtype);
    if (sameShape && !comparable)
        warnings.push_back(d.name + ": " + std::string(torch::name(ta.tensor.dtype)) +
                           " has no values to compare");
    if (sameShape && comparable) comparer.compare(ta, tb, d, onElements);
    if (!sameShape || (!d.bitwiseKnown && !comparable))
        d.status = DiffStatus::ShapeOrDTypeChanged;
    else if (!d.bitwiseKnown)
        d.status = DiffStatus::DTypeChanged; // compared, the numbers beside the change
    else if (!comparable)
        d.status = DiffStatus::Changed; // not known to be identical, and said so above
    else
        d.status = d.diff.nanMismatch == 0 && d.diff.maxAbsDiff == 0 && d.diff.bitwiseEqual == d.diff.count
                       ? DiffStatus::Identical
                       : DiffStatus::Changed;
    return d;
}

TensorDiff onlyIn(const SourceTensor& t, DiffStatus status)
{
    TensorDiff d;
    d.name = t.tensor.name;
    d.status = status;
    (status == DiffStatus::OnlyInA ? d.dtypeA : d.dtypeB) = t.tensor.dtype;
    (status == DiffStatus::OnlyInA ? d.shapeA : d.shapeB) = t.tensor.shape;
    return d;
}

// What reading each side found (no moments, a tag's own warnings), each naming its side, once.
void sideWarnings(const TensorSet& sa, const TensorSet& sb, std::vector<std::string>& warnings)
{
    for (const TensorSet* s : {&sa, &sb})
        for (const auto& w : s->warnings)
            if (std::string t = s->label + ": " + w;
                std::find(warnings.begin(), warnings.end(), t) == warnings.end())
                warnings.push_back(std::move(t));
}

} // namespace

DiffResult computeDiff(const std::string& a, const std::string& b, const DiffOptions& options,
                       gpu::ComputeBackend& backend, const ProgressSink& progress, const CancelToken& cancel,
                       const DiffSink& onTensor)
{
    const layout::OpenedTag ia = layout::openTag(a, options.a.tag, openingObserver(progress, cancel, "A"));
    cancel.throwIfCancelled();
    const layout::OpenedTag ib = layout::openTag(b, options.b.tag, openingObserver(progress, cancel, "B"));
    DiffResult r = computeDiff(ia, ib, options, backend, progress, cancel, onTensor);
    r.a.path = a;
    r.b.path = b;
    return r;
}

namespace {

DiffResult computeDiffOnce(const layout::OpenedTag& a, const layout::OpenedTag& b, const DiffOptions& options,
                           gpu::ComputeBackend& backend, const ProgressSink& progress,
                           const CancelToken& cancel, const DiffSink& onTensor)
{
    const TensorSet sa = diffTensors(a, options.a, options.moments);
    cancel.throwIfCancelled();
    const TensorSet sb = diffTensors(b, options.b, options.moments);
    std::map<std::string, const SourceTensor*> inB;
    for (const auto& t : sb.tensors)
        if (t.aliasOf.empty()) inB[t.tensor.name] = &t;
    uint64_t total = 0, done = 0;
    for (const auto& t : sa.tensors) {
        auto it = inB.find(t.tensor.name);
        if (t.aliasOf.empty() && it != inB.end() && it->second->tensor.shape == t.tensor.shape)
            total += t.tensor.nbytes;
    }

    DiffResult r;
    r.a = {a.root(), sa.label, sa.tag};
    r.b = {b.root(), sb.label, sb.tag};
    sideWarnings(sa, sb, r.warnings);
    r.device = backend.name() + ": " + backend.device();
    PairComparer comparer(options, backend, cancel);
    auto emit = [&](TensorDiff&& d) {
        if (onTensor) onTensor(d);
        r.tensors.push_back(std::move(d));
    };
    std::set<std::string> seenA;
    for (const auto& ta : sa.tensors) {
        if (!ta.aliasOf.empty()) { // compared once, as the tensor it ties to
            r.tied.push_back({ta.tensor.name, ta.aliasOf});
            continue;
        }
        seenA.insert(ta.tensor.name);
        auto it = inB.find(ta.tensor.name);
        if (it == inB.end()) {
            emit(onlyIn(ta, DiffStatus::OnlyInA));
            continue;
        }
        cancel.throwIfCancelled();
        const uint32_t ea = torch::elementSize(ta.tensor.dtype);
        emit(diffPair(ta, *it->second, comparer, r.warnings, [&](uint64_t len) {
            done += len * ea;
            if (progress)
                progress({int(total ? done * 1000 / total : 1000), "diff " + ta.tensor.name, done, total});
        }));
    }
    for (const auto& tb : sb.tensors)
        if (tb.aliasOf.empty() && !seenA.count(tb.tensor.name)) emit(onlyIn(tb, DiffStatus::OnlyInB));
    addBackendWarnings(r.warnings, backend, {&options.a, &options.b});
    return r;
}

} // namespace

std::string diffRowsJson(const std::vector<DiffRow>& rows)
{
    nlohmann::ordered_json out = nlohmann::ordered_json::array();
    for (const DiffRow& r : rows) {
        nlohmann::ordered_json o{{"name", r.name}, {"status", statusName(r.status)}};
        for (const auto& [key, value] : r.numbers)
            o[key] =
                value && std::isfinite(*value) ? nlohmann::ordered_json(*value) : nlohmann::ordered_json();
        out.push_back(std::move(o));
    }
    return out.dump(4, ' ', false, nlohmann::ordered_json::error_handler_t::replace) + "\n";
}

// A device whose result the self-check caught wrong: the whole job again on the CPU.
StatsResult computeStats(const layout::OpenedTag& in, const AnalyzeOptions& options,
                         gpu::ComputeBackend& backend, const ProgressSink& progress,
                         const CancelToken& cancel)
{
    return gpu::runOnCpuIfWrong([&](bool cpuOnly) {
        if (!cpuOnly) return computeStatsOnce(in, options, backend, progress, cancel);
        AnalyzeOptions cpu = options;
        cpu.source.backend = nullptr;
        return computeStatsOnce(in, cpu, gpu::cpuBackend(), progress, cancel);
    });
}

DiffResult computeDiff(const layout::OpenedTag& a, const layout::OpenedTag& b, const DiffOptions& options,
                       gpu::ComputeBackend& backend, const ProgressSink& progress, const CancelToken& cancel,
                       const DiffSink& onTensor)
{
    return gpu::runOnCpuIfWrong([&](bool cpuOnly) {
        if (!cpuOnly) return computeDiffOnce(a, b, options, backend, progress, cancel, onTensor);
        DiffOptions cpu = options;
        cpu.a.backend = cpu.b.backend = nullptr;
        return computeDiffOnce(a, b, cpu, gpu::cpuBackend(), progress, cancel, onTensor);
    });
}

} // namespace ckpt::ops
