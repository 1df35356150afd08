#include "ops/analyze.h"

#include "ops/inspect.h"

#include <cmath>
#include <map>
#include <ostream>
#include <tuple>

namespace ckpt::ops {

using nlohmann::ordered_json;

namespace {

constexpr uint64_t kChunk = 64u << 20;

// JSON has no NaN/Inf: write them as strings, as Python's json would not (it writes NaN);
// a string keeps the document valid for every parser.
ordered_json num(double v)
{
    if (std::isfinite(v)) return v;
    return std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf";
}

// Calls fn(view) for consecutive element ranges of a tensor: in place when its bytes lie
// contiguous in a mapped file, else through a bounded staging buffer.
template <typename Fn>
void chunks(const SourceTensor& t, std::vector<uint8_t>& buf, const CancelToken& cancel, Fn fn)
{
    const uint32_t es = torch::elementSize(t.tensor.dtype);
    const uint64_t n = t.tensor.nbytes / es;
    const uint64_t per = kChunk / es;
    for (uint64_t first = 0; first < n || (n == 0 && first == 0); first += per) {
        cancel.throwIfCancelled();
        const uint64_t len = std::min(per, n - first);
        const uint8_t* p;
        if (t.direct) {
            p = t.direct + first * es;
        } else {
            buf.resize(len * es);
            if (len) t.tensor.fill(first * es, len * es, buf.data());
            p = buf.data();
        }
        fn(gpu::StridedView{p, es, {int64_t(len)}, {1}, 0}, len);
        if (n == 0) break;
    }
}

ordered_json shapeJson(const torch::OutTensor& t)
{
    return {{"dtype", torch::name(t.dtype)}, {"shape", t.shape}};
}

ordered_json histogramJson(const gpu::Histogram& h)
{
    return {{"lo", h.lo},     {"hi", h.hi},       {"log10", h.log10},
            {"bins", h.bins}, {"zeros", h.zeros}, {"non_finite", h.nonFinite}};
}

// What went wrong in the backends without failing the job (a device replaced by the CPU).
void addBackendWarnings(ordered_json& warnings, gpu::ComputeBackend& backend, const AnalyzeOptions& options)
{
    for (auto& w : backend.takeWarnings())
        warnings.push_back(std::move(w));
    if (options.source.backend && options.source.backend.get() != &backend)
        for (auto& w : options.source.backend->takeWarnings())
            warnings.push_back(std::move(w));
}

} // namespace

ordered_json computeStats(const std::string& path, const AnalyzeOptions& options,
                          gpu::ComputeBackend& backend, const ProgressSink& progress,
                          const CancelToken& cancel)
{
    const TensorSet set = anyTensors(path, options.source);
    uint64_t total = 0, done = 0;
    for (const auto& t : set.tensors)
        total += t.tensor.nbytes;
    ordered_json doc;
    doc["source"] = set.label;
    doc["device"] = backend.name() + ": " + backend.device();
    ordered_json tensors = ordered_json::array();
    std::vector<uint8_t> buf;
    for (const auto& t : set.tensors) {
        if (!t.aliasOf.empty()) {
            tensors.push_back({{"name", t.tensor.name}, {"alias_of", t.aliasOf}});
            continue;
        }
        const auto type = scalarOf(t.tensor.dtype);
        // Tensors read in chunks (every consolidated one) get their histogram in a second pass,
        // binned over the range the first pass found: the same bins as over the whole tensor.
        const bool chunkedHistogram = options.histogramBins > 0 && !t.direct;
        gpu::ValueRange range;
        gpu::Stats s;
        chunks(t, buf, cancel, [&](const gpu::StridedView& v, uint64_t len) {
            if (len) s.merge(backend.stats(v, *type));
            if (len && chunkedHistogram) range.merge(gpu::valueRange(v, *type, options.histogramLog10));
            done += len * v.elementSize;
            if (progress)
                progress({int(total ? done * 1000 / total : 1000), "stats " + t.tensor.name, done, total});
        });
        ordered_json j{{"name", t.tensor.name},
                       {"dtype", torch::name(t.tensor.dtype)},
                       {"shape", t.tensor.shape},
                       {"count", s.count}};
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
        if (options.histogramBins > 0 && t.direct) {
            const uint32_t es = torch::elementSize(t.tensor.dtype);
            const auto h =
                backend.histogram(gpu::StridedView{t.direct, es, {int64_t(t.tensor.nbytes / es)}, {1}, 0},
                                  *type, options.histogramBins, options.histogramLog10, 0, 0);
            j["histogram"] = histogramJson(h);
        } else if (chunkedHistogram) {
            gpu::Histogram h;
            h.log10 = options.histogramLog10;
            std::tie(h.lo, h.hi) = range.bounds();
            h.bins.assign(size_t(options.histogramBins), 0);
            chunks(t, buf, cancel, [&](const gpu::StridedView& v, uint64_t len) {
                if (!len) return;
                const auto part = backend.histogram(v, *type, options.histogramBins, h.log10, h.lo, h.hi);
                for (size_t i = 0; i < h.bins.size() && i < part.bins.size(); ++i)
                    h.bins[i] += part.bins[i];
                h.zeros += part.zeros;
                h.nonFinite += part.nonFinite;
            });
            j["histogram"] = histogramJson(h);
        }
        tensors.push_back(std::move(j));
    }
    doc["tensors"] = std::move(tensors);
    doc["skipped"] = set.skipped;
    doc["warnings"] = set.warnings;
    addBackendWarnings(doc["warnings"], backend, options);
    return doc;
}

ordered_json computeDiff(const std::string& a, const std::string& b, const AnalyzeOptions& options,
                         gpu::ComputeBackend& backend, const ProgressSink& progress,
                         const CancelToken& cancel)
{
    const TensorSet sa = anyTensors(a, options.source);
    const TensorSet sb = anyTensors(b, options.source);
    std::map<std::string, const SourceTensor*> inB;
    for (const auto& t : sb.tensors)
        if (t.aliasOf.empty()) inB[t.tensor.name] = &t;
    uint64_t total = 0, done = 0;
    for (const auto& t : sa.tensors)
        if (t.aliasOf.empty() && inB.count(t.tensor.name)) total += t.tensor.nbytes;

    ordered_json doc;
    doc["a"] = sa.label;
    doc["b"] = sb.label;
    doc["device"] = backend.name() + ": " + backend.device();
    ordered_json tensors = ordered_json::array(), onlyA = ordered_json::array(),
                 onlyB = ordered_json::array(), changed = ordered_json::array();
    uint64_t identical = 0, different = 0;
    double worst = 0;
    std::vector<uint8_t> bufA, bufB;
    std::map<std::string, bool> seenA;
    for (const auto& ta : sa.tensors) {
        if (!ta.aliasOf.empty()) continue;
        seenA[ta.tensor.name] = true;
        auto it = inB.find(ta.tensor.name);
        if (it == inB.end()) {
            onlyA.push_back(ta.tensor.name);
            continue;
        }
        const SourceTensor& tb = *it->second;
        if (ta.tensor.shape != tb.tensor.shape || ta.tensor.dtype != tb.tensor.dtype) {
            changed.push_back(
                {{"name", ta.tensor.name}, {"a", shapeJson(ta.tensor)}, {"b", shapeJson(tb.tensor)}});
            if (ta.tensor.shape != tb.tensor.shape) continue; // values are not comparable
        }
        const auto typeA = scalarOf(ta.tensor.dtype), typeB = scalarOf(tb.tensor.dtype);
        const uint32_t ea = torch::elementSize(ta.tensor.dtype), eb = torch::elementSize(tb.tensor.dtype);
        const uint64_t n = ta.tensor.nbytes / ea, per = kChunk / std::max(ea, eb);
        gpu::DiffStats d;
        for (uint64_t first = 0; first < n; first += per) {
            cancel.throwIfCancelled();
            const uint64_t len = std::min(per, n - first);
            auto view = [&](const SourceTensor& t, uint32_t es, std::vector<uint8_t>& buf) {
                if (t.direct) return gpu::StridedView{t.direct + first * es, es, {int64_t(len)}, {1}, 0};
                buf.resize(len * es);
                t.tensor.fill(first * es, len * es, buf.data());
                return gpu::StridedView{buf.data(), es, {int64_t(len)}, {1}, 0};
            };
            d.merge(backend.diff(view(ta, ea, bufA), *typeA, view(tb, eb, bufB), *typeB));
            done += len * ea;
            if (progress)
                progress({int(total ? done * 1000 / total : 1000), "diff " + ta.tensor.name, done, total});
        }
        const bool same =
            d.nanMismatch == 0 && d.maxAbsDiff == 0 && (typeA != typeB || d.bitwiseEqual == d.count);
        same ? ++identical : ++different;
        worst = std::max(worst, d.maxAbsDiff);
        tensors.push_back(
            {{"name", ta.tensor.name},
             {"count", d.count},
             {"identical", same},
             {"max_abs_diff", num(d.maxAbsDiff)},
             {"l2_diff", num(d.l2Diff())},
             {"rel_l2", num(d.relL2())},
             {"cosine", num(d.cosine())},
             {"bitwise_equal", typeA == typeB ? ordered_json(d.bitwiseEqual) : ordered_json(nullptr)},
             {"nan_mismatch", d.nanMismatch}});
    }
    for (const auto& tb : sb.tensors)
        if (tb.aliasOf.empty() && !seenA.count(tb.tensor.name)) onlyB.push_back(tb.tensor.name);
    doc["tensors"] = std::move(tensors);
    doc["only_a"] = std::move(onlyA);
    doc["only_b"] = std::move(onlyB);
    doc["changed"] = std::move(changed);
    doc["totals"] = {{"compared", identical + different},
                     {"identical", identical},
                     {"different", different},
                     {"only_a", doc["only_a"].size()},
                     {"only_b", doc["only_b"].size()},
                     {"changed", doc["changed"].size()},
                     {"max_abs_diff", num(worst)}};
    doc["warnings"] = ordered_json::array();
    addBackendWarnings(doc["warnings"], backend, options);
    return doc;
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
} // namespace

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
        std::string name = t["name"].get<std::string>();
        if (name.size() > 44) name = "..." + name.substr(name.size() - 41);
        std::snprintf(
            line, sizeof line, "%-44s %-9s %12s %12s %12s %12s %10llu %6llu %6llu\n", name.c_str(),
            t["dtype"].get<std::string>().c_str(), fmt(t["min"]).c_str(), fmt(t["max"]).c_str(),
            fmt(t["mean"]).c_str(), fmt(t["std"]).c_str(), (unsigned long long)t["zeros"].get<uint64_t>(),
            (unsigned long long)t["nans"].get<uint64_t>(), (unsigned long long)t["infs"].get<uint64_t>());
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
        std::string name = t["name"].get<std::string>();
        if (name.size() > 44) name = "..." + name.substr(name.size() - 41);
        const std::string eq = t["identical"].get<bool>() ? "identical"
                               : t["bitwise_equal"].is_null()
                                   ? "-"
                                   : std::to_string(t["bitwise_equal"].get<uint64_t>()) + "/" +
                                         std::to_string(t["count"].get<uint64_t>());
        std::snprintf(line, sizeof line, "%-44s %12s %12s %12s %10s\n", name.c_str(),
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

} // namespace ckpt::ops
