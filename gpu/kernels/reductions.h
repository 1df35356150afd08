// What the shared kernels reduce to, and the element functions that feed the reductions: plain
// value types with an associative merge, so any device may reduce them in any tree (Thrust's
// per-thread, warp and block reductions on CUDA; its threads on the host) and get the same
// counts, minima and maxima exactly and the same sums to rounding.
#pragma once

#include "compute_backend.h"
#include "kernels/elements.h"

#include <cmath>

namespace ckpt::gpu::kernels {

// Moments of the non-NaN elements: mean and M2 over the finite ones, merged pairwise (Chan et
// al.), and the infinities counted apart, so that the result follows one definition whatever
// the reduction order: with an infinity the mean is that infinity (NaN when both signs occur)
// and M2 is NaN, as torch.mean and torch.std give.
struct Moments
{
    unsigned long long count = 0, zeros = 0, nans = 0, posInf = 0, negInf = 0, finite = 0;
    double mean = 0, m2 = 0, sumsq = 0;
    double min = infinity(), max = -infinity(), absmax = 0;
};

CKPT_HOST_DEVICE inline Moments momentsOf(double x)
{
    Moments m;
    m.count = 1;
    if (isNan(x)) {
        m.nans = 1;
        return m;
    }
    m.zeros = x == 0;
    if (isInf(x)) {
        (x > 0 ? m.posInf : m.negInf) = 1;
    } else {
        m.finite = 1;
        m.mean = x;
    }
    m.sumsq = x * x;
    m.min = m.max = x;
    m.absmax = doubleOf(bitsOf(x) & 0x7FFFFFFFFFFFFFFFull); // |-0.0| is +0.0
    return m;
}

CKPT_HOST_DEVICE inline Moments merge(const Moments& a, const Moments& b)
{
    Moments r;
    r.count = a.count + b.count, r.zeros = a.zeros + b.zeros, r.nans = a.nans + b.nans;
    r.posInf = a.posInf + b.posInf, r.negInf = a.negInf + b.negInf;
    r.finite = a.finite + b.finite;
    if (!a.finite || !b.finite) {
        r.mean = a.finite ? a.mean : b.mean;
        r.m2 = a.finite ? a.m2 : b.m2;
    } else {
        const double n = double(r.finite), delta = b.mean - a.mean;
        r.mean = a.mean + delta * (double(b.finite) / n);
        r.m2 = a.m2 + b.m2 + delta * delta * (double(a.finite) * double(b.finite) / n);
    }
    r.sumsq = a.sumsq + b.sumsq;
    r.min = b.min < a.min ? b.min : a.min;
    r.max = b.max > a.max ? b.max : a.max;
    r.absmax = b.absmax > a.absmax ? b.absmax : a.absmax;
    return r;
}

// The backend's Stats, by the definition above.
inline Stats toStats(const Moments& m)
{
    Stats s;
    s.count = m.count, s.zeros = m.zeros, s.nans = m.nans, s.infs = m.posInf + m.negInf;
    if (s.valid() == 0) return s;
    s.min = m.min, s.max = m.max, s.absmax = m.absmax, s.sumsq = m.sumsq;
    if (m.posInf && m.negInf)
        s.mean = quietNan();
    else if (m.posInf || m.negInf)
        s.mean = m.posInf ? infinity() : -infinity();
    else
        s.mean = m.mean;
    s.m2 = (s.infs || !isFinite(m.m2)) ? quietNan() : m.m2;
    return s;
}

// One pair of elements of a comparison (see DiffStats): counted always, summed when neither is
// NaN. `same` says whether their bytes are equal (meaningful only for one dtype on both sides).
struct DiffAcc
{
    unsigned long long count = 0, equal = 0, nanMismatch = 0;
    double maxAbs = 0, sumSqDiff = 0, sumSqA = 0, sumSqB = 0, dot = 0;
};

CKPT_HOST_DEVICE inline DiffAcc diffOf(double x, double y, bool same)
{
    DiffAcc d;
    d.count = 1;
    d.equal = same;
    const bool nx = isNan(x), ny = isNan(y);
    if (nx || ny) {
        d.nanMismatch = nx != ny;
        return d;
    }
    const double dd = x - y;
    d.maxAbs = dd < 0 ? -dd : dd;
    d.sumSqDiff = dd * dd, d.sumSqA = x * x, d.sumSqB = y * y, d.dot = x * y;
    return d;
}

CKPT_HOST_DEVICE inline DiffAcc merge(const DiffAcc& a, const DiffAcc& b)
{
    DiffAcc r;
    r.count = a.count + b.count, r.equal = a.equal + b.equal, r.nanMismatch = a.nanMismatch + b.nanMismatch;
    // NaN-safe max: a difference of two infinities of one sign is NaN and must not win
    r.maxAbs = b.maxAbs > a.maxAbs ? b.maxAbs : a.maxAbs;
    r.sumSqDiff = a.sumSqDiff + b.sumSqDiff, r.sumSqA = a.sumSqA + b.sumSqA, r.sumSqB = a.sumSqB + b.sumSqB;
    r.dot = a.dot + b.dot;
    return r;
}

inline DiffStats toDiffStats(const DiffAcc& d)
{
    DiffStats s;
    s.count = d.count, s.bitwiseEqual = d.equal, s.nanMismatch = d.nanMismatch, s.maxAbsDiff = d.maxAbs;
    s.sumSqDiff = d.sumSqDiff, s.sumSqA = d.sumSqA, s.sumSqB = d.sumSqB, s.dot = d.dot;
    return s;
}

CKPT_HOST_DEVICE inline bool sameBytes(const uint8_t* p, const uint8_t* q, uint32_t size)
{
    for (uint32_t k = 0; k < size; ++k)
        if (p[k] != q[k]) return false;
    return true;
}

// The bin of one element of a histogram over [lo, hi] with `bins` bins (scale = bins / (hi -
// lo)), or -1 outside it; -2 for a non-finite element, -3 for a zero of a log10 histogram.
CKPT_HOST_DEVICE inline long long binOf(double x, bool log10, double lo, double hi, double scale, int bins)
{
    if (!isFinite(x)) return -2;
    if (log10) {
        if (x == 0) return -3;
        x = ::log10(x < 0 ? -x : x);
    }
    if (!(x >= lo && x <= hi)) return -1;
    const double f = (x - lo) * scale;
    if (f <= 0) return 0;
    return f >= double(bins - 1) ? bins - 1 : (long long)f;
}

} // namespace ckpt::gpu::kernels
