// A device's results checked against the CPU oracle while a job runs, and the contracts by which
// the two must agree (shared with the parity suites, tests/gpu_parity*).
#include "compute_backend.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

namespace ckpt::gpu {

namespace {

// Floating sums: both NaN, equal (infinities included), or within a relative 1e-9. The device
// reduces in another order than the CPU (a tree of per-element merges against 4096-element
// blocks), which moves fp64 sums by ~1e-15 relative per level; 1e-9 leaves room for cancellation
// in m2 and dot products of long tensors while any real fault (a dropped chunk, a wrong element)
// is far outside it.
bool close(double a, double b, double scale = 0)
{
    if (a == b || (std::isnan(a) && std::isnan(b))) return true;
    if (!std::isfinite(a) || !std::isfinite(b)) return false;
    return std::fabs(a - b) <= 1e-9 * std::max({1e-300, std::fabs(a), std::fabs(b), scale});
}

// Exact values compared as values (-0.0 equals 0.0: which of two equal zeros a minimum keeps
// depends on order) and NaN equal to NaN.
bool same(double a, double b)
{
    return a == b || (std::isnan(a) && std::isnan(b));
}

bool fail(std::string* why, const std::string& what)
{
    if (why) *why = what;
    return false;
}

std::string pair(double a, double b)
{
    char buf[96];
    std::snprintf(buf, sizeof buf, " (device %.17g, cpu %.17g)", a, b);
    return buf;
}

} // namespace

bool agree(const Stats& d, const Stats& c, std::string* why)
{
    if (d.count != c.count || d.zeros != c.zeros || d.nans != c.nans || d.infs != c.infs)
        return fail(why, "stats counts");
    if (!same(d.min, c.min) || !same(d.max, c.max) || !same(d.absmax, c.absmax))
        return fail(why, "stats min/max/absmax" + pair(d.max, c.max));
    // A mean near 0 (±x data) is measured against the data's size, its root mean square: 1e-17
    // against an exact 0 is rounding, not a fault.
    const double rms = c.valid() ? std::sqrt(c.sumsq / double(c.valid())) : 0;
    if (!close(d.mean, c.mean, std::isfinite(rms) ? rms : 0))
        return fail(why, "stats mean" + pair(d.mean, c.mean));
    if (!close(d.std(), c.std())) return fail(why, "stats std" + pair(d.std(), c.std()));
    if (!close(d.l2(), c.l2())) return fail(why, "stats l2" + pair(d.l2(), c.l2()));
    return true;
}

bool agree(const DiffStats& d, const DiffStats& c, std::string* why)
{
    if (d.count != c.count || d.bitwiseEqual != c.bitwiseEqual || d.nanMismatch != c.nanMismatch)
        return fail(why, "diff counts");
    if (!same(d.maxAbsDiff, c.maxAbsDiff))
        return fail(why, "diff max |a-b|" + pair(d.maxAbsDiff, c.maxAbsDiff));
    const double dotScale = std::sqrt(c.sumSqA) * std::sqrt(c.sumSqB); // |a.b| <= ||a|| ||b||
    if (!close(d.sumSqDiff, c.sumSqDiff) || !close(d.sumSqA, c.sumSqA) || !close(d.sumSqB, c.sumSqB) ||
        !close(d.dot, c.dot, std::isfinite(dotScale) ? dotScale : 0))
        return fail(why, "diff sums" + pair(d.sumSqDiff, c.sumSqDiff));
    return true;
}

// Bins are exact where both sides evaluate the same arithmetic. A log10 histogram on a device
// uses the device's log10, which may differ from the host's in the last place and so move an
// element that lies on a bin edge: a few such moves are allowed there, nothing else.
bool agree(const Histogram& d, const Histogram& c, std::string* why)
{
    if (d.bins.size() != c.bins.size() || !same(d.lo, c.lo) || !same(d.hi, c.hi) || d.log10 != c.log10)
        return fail(why, "histogram range");
    if (d.zeros != c.zeros || d.nonFinite != c.nonFinite) return fail(why, "histogram zeros/non-finite");
    uint64_t moved = 0, total = 0;
    for (size_t i = 0; i < d.bins.size(); ++i) {
        moved += d.bins[i] > c.bins[i] ? d.bins[i] - c.bins[i] : c.bins[i] - d.bins[i];
        total += c.bins[i];
    }
    const uint64_t allowed = d.log10 ? 2 + total / 1000000 : 0;
    if (moved > allowed) return fail(why, "histogram bins (" + std::to_string(moved) + " counts moved)");
    return true;
}

uint64_t selfCheckEvery()
{
    const char* v = std::getenv("CKPT_GPU_VERIFY");
    if (!v || !*v || std::strcmp(v, "sample") == 0) return 16;
    if (std::strcmp(v, "full") == 0) return 1;
    if (std::strcmp(v, "off") == 0) return 0;
    return 16;
}

namespace {

constexpr uint64_t kTail = 4096; // elements of every cast and gather compared at their end

const char* opName(Op op)
{
    switch (op) {
    case Op::Gather:
        return "gather";
    case Op::Cast:
        return "cast";
    case Op::Stats:
        return "stats";
    case Op::Histogram:
        return "histogram";
    case Op::Diff:
        return "diff";
    }
    return "?";
}

class SelfChecked final : public ComputeBackend
{
public:
    SelfChecked(std::shared_ptr<ComputeBackend> primary, uint64_t every)
        : m_primary(std::move(primary)), m_every(every)
    {
    }

    std::string name() const override { return m_primary->name(); }
    std::string device() const override { return m_primary->device(); }
    bool supports(Op op, Scalar t) const override { return m_primary->supports(op, t); }

    void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) override
    {
        m_primary->gather(v, first, count, dst);
        if (m_every == 0) return;
        const uint64_t es = v.elementSize;
        const uint64_t from = sampled(Op::Gather) ? 0 : count - std::min(count, kTail);
        std::vector<uint8_t> want((count - from) * es);
        cpuBackend().gather(v, first + from, count - from, want.data());
        if (!want.empty() && std::memcmp(want.data(), dst + from * es, want.size()) != 0)
            wrong(Op::Gather, "bytes differ");
    }

    void cast(Scalar a, Scalar b, const uint8_t* src, uint8_t* dst, uint64_t count) override
    {
        m_primary->cast(a, b, src, dst, count);
        if (m_every == 0) return;
        const uint64_t fs = scalarSize(a), ts = scalarSize(b);
        const uint64_t from = sampled(Op::Cast) ? 0 : count - std::min(count, kTail);
        std::vector<uint8_t> want((count - from) * ts);
        cpuBackend().cast(a, b, src + from * fs, want.data(), count - from);
        if (!want.empty() && std::memcmp(want.data(), dst + from * ts, want.size()) != 0)
            wrong(Op::Cast, "bytes differ");
    }

    Stats stats(const StridedView& v, Scalar t) override
    {
        Stats s = m_primary->stats(v, t);
        std::string why;
        if (sampled(Op::Stats) && !agree(s, cpuBackend().stats(v, t), &why)) wrong(Op::Stats, why);
        return s;
    }

    Histogram histogram(const StridedView& v, Scalar t, int bins, bool lg, double lo, double hi) override
    {
        Histogram h = m_primary->histogram(v, t, bins, lg, lo, hi);
        std::string why;
        if (sampled(Op::Histogram) && !agree(h, cpuBackend().histogram(v, t, bins, lg, lo, hi), &why))
            wrong(Op::Histogram, why);
        return h;
    }

    DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) override
    {
        DiffStats d = m_primary->diff(a, ta, b, tb);
        std::string why;
        if (sampled(Op::Diff) && !agree(d, cpuBackend().diff(a, ta, b, tb), &why)) wrong(Op::Diff, why);
        return d;
    }

    std::vector<std::string> takeWarnings() override { return m_primary->takeWarnings(); }

private:
    // Call k of an operation (counted from 0, per operation) is checked when k % every == 0.
    bool sampled(Op op)
    {
        if (m_every == 0) return false;
        return m_calls[int(op)].fetch_add(1) % m_every == 0;
    }

    [[noreturn]] void wrong(Op op, const std::string& what)
    {
        throw SelfCheckFailed("the GPU (" + m_primary->device() + ") gave a wrong " + opName(op) +
                              " result (" + what + ") that the CPU's recomputation caught");
    }

    std::shared_ptr<ComputeBackend> m_primary;
    uint64_t m_every;
    std::atomic<uint64_t> m_calls[6] = {};
};

} // namespace

std::shared_ptr<ComputeBackend> selfChecked(std::shared_ptr<ComputeBackend> primary, uint64_t every)
{
    return std::make_shared<SelfChecked>(std::move(primary), every);
}

} // namespace ckpt::gpu
