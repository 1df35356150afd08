#include "cast.h"
#include "compute_backend.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>

// Hot loops get an AVX2 clone on x86-64 (picked at load time); other CPUs run the baseline.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define CKPT_WIDE_SIMD __attribute__((target_clones("default", "avx2")))
#else
#define CKPT_WIDE_SIMD
#endif

// Hand-written AVX2/FMA kernels (x86-64 with GCC or clang), used when the CPU has them.
#if defined(__x86_64__) && defined(__GNUC__)
#define CKPT_X86_KERNELS 1
#include <cpuid.h>
#include <immintrin.h>
#else
#define CKPT_X86_KERNELS 0
#endif

namespace ckpt::gpu {

uint64_t numelOf(const std::vector<int64_t>& shape)
{
    uint64_t n = 1;
    for (int64_t s : shape)
        n *= uint64_t(s);
    return n;
}

bool isContiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride)
{
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] == 1) continue;
        if (stride[i] != expected) return false;
        expected *= shape[i];
    }
    return true;
}

uint64_t StridedView::numel() const
{
    return numelOf(shape);
}

bool StridedView::contiguous() const
{
    return isContiguous(shape, stride);
}

double Stats::std() const
{
    const uint64_t n = valid();
    return n > 1 ? std::sqrt(m2 / double(n - 1)) : std::numeric_limits<double>::quiet_NaN();
}

double Stats::l2() const
{
    return std::sqrt(sumsq);
}

void Stats::merge(const Stats& o)
{
    const uint64_t na = valid(), nb = o.valid();
    if (nb) {
        if (!na) {
            min = o.min, max = o.max, mean = o.mean, m2 = o.m2;
        } else if (!std::isfinite(mean) || !std::isfinite(o.mean)) {
            // An infinity on either side: the mean is the infinities' sum (NaN when both signs
            // occur) and M2 is NaN, whichever order parts merge in. Chan's delta of two equal
            // infinities would be NaN instead.
            mean += o.mean;
            m2 = std::numeric_limits<double>::quiet_NaN();
            min = std::min(min, o.min);
            max = std::max(max, o.max);
        } else {
            // Chan et al.: combine two (mean, M2) pairs without cancellation.
            const double n = double(na + nb), delta = o.mean - mean;
            mean += delta * double(nb) / n;
            m2 += o.m2 + delta * delta * double(na) * double(nb) / n;
            min = std::min(min, o.min);
            max = std::max(max, o.max);
        }
        absmax = std::max(absmax, o.absmax);
    }
    count += o.count, zeros += o.zeros, nans += o.nans, infs += o.infs;
    sumsq += o.sumsq;
}

double DiffStats::l2Diff() const
{
    return std::sqrt(sumSqDiff);
}

double DiffStats::relL2() const
{
    return sumSqA > 0 ? std::sqrt(sumSqDiff / sumSqA) : (sumSqDiff > 0 ? INFINITY : 0.0);
}

double DiffStats::cosine() const
{
    return sumSqA > 0 && sumSqB > 0 ? dot / (std::sqrt(sumSqA) * std::sqrt(sumSqB))
                                    : std::numeric_limits<double>::quiet_NaN();
}

void DiffStats::merge(const DiffStats& o)
{
    count += o.count, bitwiseEqual += o.bitwiseEqual, nanMismatch += o.nanMismatch;
    maxAbsDiff = std::max(maxAbsDiff, o.maxAbsDiff);
    sumSqDiff += o.sumSqDiff, sumSqA += o.sumSqA, sumSqB += o.sumSqB, dot += o.dot;
}

namespace {

// float8 and e8m0 decoding tables, built once from the shared definition (kernels/elements.h).
struct Fp8Tables
{
    double e4m3fn[256], e5m2[256], e4m3fnuz[256], e5m2fnuz[256], e8m0[256];

    Fp8Tables()
    {
        for (int i = 0; i < 256; ++i) {
            const auto v = uint8_t(i);
            e4m3fn[i] = kernels::toDouble(Scalar::F8E4M3FN, &v);
            e5m2[i] = kernels::toDouble(Scalar::F8E5M2, &v);
            e4m3fnuz[i] = kernels::toDouble(Scalar::F8E4M3FNUZ, &v);
            e5m2fnuz[i] = kernels::toDouble(Scalar::F8E5M2FNUZ, &v);
            e8m0[i] = kernels::toDouble(Scalar::F8E8M0, &v);
        }
    }
};

const Fp8Tables& fp8()
{
    static const Fp8Tables t;
    return t;
}

template <typename T> T ld(const uint8_t* p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

int threadCount()
{
    static const int n = std::max(1u, std::thread::hardware_concurrency());
    return n;
}

// Runs fn(begin, end, part) over [0, n) split into up to threadCount() contiguous parts, in
// parallel; results are merged by the caller in part order, so the outcome is deterministic.
void parallelFor(uint64_t n, uint64_t minPerThread, const std::function<void(uint64_t, uint64_t, int)>& fn,
                 int& parts)
{
    parts = int(std::clamp<uint64_t>(n / std::max<uint64_t>(minPerThread, 1), 1, uint64_t(threadCount())));
    if (parts == 1) {
        fn(0, n, 0);
        return;
    }
    // An exception escaping a std::thread calls std::terminate: each worker catches, the first
    // one is kept and rethrown here after every worker has finished with the caller's data.
    std::exception_ptr first;
    std::mutex firstMutex;
    auto keep = [&](std::exception_ptr e) {
        std::lock_guard<std::mutex> lock(firstMutex);
        if (!first) first = std::move(e);
    };
    std::vector<std::thread> pool;
    pool.reserve(size_t(parts));
    for (int p = 0; p < parts; ++p) {
        try {
            pool.emplace_back([&, p] {
                try {
                    fn(n * uint64_t(p) / uint64_t(parts), n * uint64_t(p + 1) / uint64_t(parts), p);
                } catch (...) {
                    keep(std::current_exception());
                }
            });
        } catch (...) { // no thread to be had: the parts already started must still be joined
            keep(std::current_exception());
            break;
        }
    }
    for (auto& t : pool)
        t.join();
    if (first) std::rethrow_exception(first);
}

// Stats of one block with a shift (the block's first non-NaN value) so sums stay small.
template <typename Load> Stats blockStats(const uint8_t* p, uint64_t n, uint32_t es, Load load)
{
    Stats s;
    s.count = n;
    double shift = 0, sum = 0, sumsq = 0, mn = INFINITY, mx = -INFINITY, amax = 0, sq = 0;
    bool haveShift = false;
    uint64_t valid = 0;
    for (uint64_t i = 0; i < n; ++i) {
        const double x = load(p + i * es);
        if (std::isnan(x)) {
            ++s.nans;
            continue;
        }
        if (std::isinf(x)) ++s.infs;
        if (x == 0) ++s.zeros;
        if (!haveShift && std::isfinite(x)) shift = x, haveShift = true;
        const double d = x - shift;
        sum += d;
        sumsq += d * d;
        sq += x * x;
        mn = std::min(mn, x);
        mx = std::max(mx, x);
        amax = std::max(amax, std::fabs(x));
        ++valid;
    }
    if (valid) {
        s.min = mn, s.max = mx, s.absmax = amax, s.sumsq = sq;
        s.mean = shift + sum / double(valid);
        s.m2 = std::max(0.0, sumsq - sum * sum / double(valid));
        if (!std::isfinite(s.mean) || !std::isfinite(s.m2)) { // infinities: let them show
            s.mean = shift + sum / double(valid);
            s.m2 = std::numeric_limits<double>::quiet_NaN();
        }
    }
    return s;
}

// float32 blocks, the common case made fast. Pass 1 (float lanes, vectorisable): NaN/Inf/zero
// counts and min/max/absmax. Pass 2, only when the block has no NaN or Inf: the shifted fp64
// sums as an fp64 SIMD reduction. Blocks with NaN/Inf take the general
// path. Same definition as blockStats: shift = the block's first value, sums in fp64.
template <typename Load> Stats blockStats(const uint8_t* p, uint64_t n, uint32_t es, Load load);

#if CKPT_X86_KERNELS
bool haveAvx2();
// The fp64 sums of blockStatsF32 with AVX2 + FMA: two sets of accumulators (the single chain
// per sum that the vectoriser makes is latency-bound at about one element per cycle).
[[gnu::target("avx2,fma")]] void avx2StatsSums(const float* p, uint64_t n, double shift, double& sum,
                                               double& sumsq, double& sq)
{
    __m256d s0 = _mm256_setzero_pd(), s1 = s0, q0 = s0, q1 = s0, x0 = s0, x1 = s0;
    const __m256d sh = _mm256_set1_pd(shift);
    uint64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256d a = _mm256_cvtps_pd(_mm_loadu_ps(p + i)), b = _mm256_cvtps_pd(_mm_loadu_ps(p + i + 4));
        const __m256d da = _mm256_sub_pd(a, sh), db = _mm256_sub_pd(b, sh);
        s0 = _mm256_add_pd(s0, da), s1 = _mm256_add_pd(s1, db);
        q0 = _mm256_fmadd_pd(da, da, q0), q1 = _mm256_fmadd_pd(db, db, q1);
        x0 = _mm256_fmadd_pd(a, a, x0), x1 = _mm256_fmadd_pd(b, b, x1);
    }
    alignas(32) double v[3][4];
    _mm256_store_pd(v[0], _mm256_add_pd(s0, s1));
    _mm256_store_pd(v[1], _mm256_add_pd(q0, q1));
    _mm256_store_pd(v[2], _mm256_add_pd(x0, x1));
    sum = (v[0][0] + v[0][1]) + (v[0][2] + v[0][3]);
    sumsq = (v[1][0] + v[1][1]) + (v[1][2] + v[1][3]);
    sq = (v[2][0] + v[2][1]) + (v[2][2] + v[2][3]);
    for (; i < n; ++i) {
        const double x = p[i], d = x - shift;
        sum += d, sumsq += d * d, sq += x * x;
    }
}
#endif

CKPT_WIDE_SIMD Stats blockStatsF32(const float* p, uint64_t n)
{
    // On the bits, so every step is an integer lane operation the compiler vectorises: a float's
    // order is its sign-magnitude bits mapped to two's complement.
    const auto* u = reinterpret_cast<const uint32_t*>(p);
    uint32_t nans = 0, infs = 0, zeros = 0, amaxBits = 0;
    int32_t kmin = INT32_MAX, kmax = INT32_MIN;
#pragma omp simd reduction(+ : nans, infs, zeros) reduction(min : kmin) reduction(max : kmax, amaxBits)
    for (uint64_t i = 0; i < n; ++i) {
        const uint32_t b = u[i], a = b & 0x7FFFFFFFu;
        nans += a > 0x7F800000u;
        infs += a == 0x7F800000u;
        zeros += a == 0;
        const int32_t k = int32_t(b) ^ ((int32_t(b) >> 31) & 0x7FFFFFFF);
        kmin = k < kmin ? k : kmin;
        kmax = k > kmax ? k : kmax;
        amaxBits = a > amaxBits ? a : amaxBits;
    }
    auto fromKey = [](int32_t k) {
        const uint32_t b = uint32_t(k ^ ((k >> 31) & 0x7FFFFFFF));
        float f;
        std::memcpy(&f, &b, 4);
        return f;
    };
    float amax;
    std::memcpy(&amax, &amaxBits, 4);
    const float mn = fromKey(kmin), mx = fromKey(kmax);
    if (nans || infs)
        return blockStats(reinterpret_cast<const uint8_t*>(p), n, 4,
                          [](const uint8_t* q) { return double(ld<float>(q)); });
    Stats s;
    s.count = n;
    s.zeros = zeros;
    if (!n) return s;
    const double shift = p[0];
    double sum = 0, sumsq = 0, sq = 0;
#if CKPT_X86_KERNELS
    if (haveAvx2()) {
        avx2StatsSums(p, n, shift, sum, sumsq, sq);
    } else
#endif
    {
        // An explicit SIMD reduction: vector lanes accumulate in fp64 and are added at the end.
#pragma omp simd reduction(+ : sum, sumsq, sq)
        for (uint64_t i = 0; i < n; ++i) {
            const double x = p[i], d = x - shift;
            sum += d;
            sumsq += d * d;
            sq += x * x;
        }
    }
    s.min = mn, s.max = mx, s.absmax = amax, s.sumsq = sq;
    s.mean = shift + sum / double(n);
    s.m2 = std::max(0.0, sumsq - sum * sum / double(n));
    return s;
}

template <typename Fn> auto withLoader(Scalar t, Fn fn)
{
    const auto& f8 = fp8();
    switch (t) {
    case Scalar::F64:
        return fn([](const uint8_t* p) { return ld<double>(p); });
    case Scalar::F32:
        return fn([](const uint8_t* p) { return double(ld<float>(p)); });
    case Scalar::F16:
        return fn([](const uint8_t* p) { return double(halfToFloat(ld<uint16_t>(p))); });
    case Scalar::BF16:
        return fn([](const uint8_t* p) { return double(bfloat16ToFloat(ld<uint16_t>(p))); });
    case Scalar::F8E4M3FN:
        return fn([&f8](const uint8_t* p) { return f8.e4m3fn[*p]; });
    case Scalar::F8E5M2:
        return fn([&f8](const uint8_t* p) { return f8.e5m2[*p]; });
    case Scalar::F8E4M3FNUZ:
        return fn([&f8](const uint8_t* p) { return f8.e4m3fnuz[*p]; });
    case Scalar::F8E5M2FNUZ:
        return fn([&f8](const uint8_t* p) { return f8.e5m2fnuz[*p]; });
    case Scalar::F8E8M0:
        return fn([&f8](const uint8_t* p) { return f8.e8m0[*p]; });
    case Scalar::I64:
        return fn([](const uint8_t* p) { return double(ld<int64_t>(p)); });
    case Scalar::I32:
        return fn([](const uint8_t* p) { return double(ld<int32_t>(p)); });
    case Scalar::I16:
        return fn([](const uint8_t* p) { return double(ld<int16_t>(p)); });
    case Scalar::I8:
        return fn([](const uint8_t* p) { return double(ld<int8_t>(p)); });
    case Scalar::U8:
        return fn([](const uint8_t* p) { return double(*p); });
    case Scalar::U16:
        return fn([](const uint8_t* p) { return double(ld<uint16_t>(p)); });
    case Scalar::U32:
        return fn([](const uint8_t* p) { return double(ld<uint32_t>(p)); });
    case Scalar::U64:
        return fn([](const uint8_t* p) { return double(ld<uint64_t>(p)); });
    case Scalar::Bool:
        return fn([](const uint8_t* p) { return *p ? 1.0 : 0.0; });
    }
    return fn([](const uint8_t*) { return 0.0; });
}

constexpr uint64_t kBlock = 4096;     // elements per stats block: the shift granularity
constexpr uint64_t kStage = 1u << 22; // elements gathered at a time from strided inputs

// Whether two elements of `size` bytes are the same bits: fixed-size loads the compiler inlines
// (a memcmp call per element was a third of a diff's time).
inline bool sameBits(const uint8_t* p, const uint8_t* q, uint32_t size)
{
    switch (size) {
    case 8: {
        uint64_t u, v;
        std::memcpy(&u, p, 8), std::memcpy(&v, q, 8);
        return u == v;
    }
    case 4: {
        uint32_t u, v;
        std::memcpy(&u, p, 4), std::memcpy(&v, q, 4);
        return u == v;
    }
    case 2: {
        uint16_t u, v;
        std::memcpy(&u, p, 2), std::memcpy(&v, q, 2);
        return u == v;
    }
    default:
        return std::memcmp(p, q, size) == 0;
    }
}

// The fast diff of same-type floating arrays (F64, F32, F16, BF16): one pass over both inputs,
// in blocks of kDiffBlock elements. Per block, the bitwise-equal count on the raw words and the
// fp64 sums (products of two floats are exact in fp64) in independent vector lanes, then added
// to the running totals block after block. A block whose sums come out non-finite holds a NaN
// or an infinity (x * x of one is NaN or inf; finite floats cannot overflow fp64) or overflows
// in fp64 (huge doubles): it is recomputed by the element-wise reference loop, so NaN pairs,
// nanMismatch and inf - inf are exactly as defined there. Reduction order: lanes, then blocks in
// order; equal to the reference loop within fp64 rounding (relative ~1e-15 on these sums) and
// bit-exact for max |a-b| and the counts.
constexpr uint64_t kDiffBlock = 2048;

// The element-wise reference loop, any two types: what every kernel's result is defined by.
template <typename LA, typename LB>
[[gnu::noinline]] void diffElements(const uint8_t* pa, uint32_t ea, LA la, const uint8_t* pb, uint32_t eb,
                                    LB lb, bool sameType, uint64_t begin, uint64_t end, DiffStats& acc)
{
    for (uint64_t i = begin; i < end; ++i) {
        const double x = la(pa + i * ea), y = lb(pb + i * eb);
        ++acc.count;
        if (sameType && sameBits(pa + i * ea, pb + i * eb, ea)) ++acc.bitwiseEqual;
        if (std::isnan(x) || std::isnan(y)) {
            if (std::isnan(x) != std::isnan(y)) ++acc.nanMismatch;
            continue;
        }
        const double dd = x - y;
        acc.maxAbsDiff = std::max(acc.maxAbsDiff, std::fabs(dd));
        acc.sumSqDiff += dd * dd, acc.sumSqA += x * x, acc.sumSqB += y * y, acc.dot += x * y;
    }
}

// One block's sums, added to the totals only when all are finite.
struct DiffBlock
{
    uint64_t equal = 0;
    double mx = 0, sd = 0, sa = 0, sb = 0, dot = 0;

    bool addTo(DiffStats& acc, uint64_t n) const
    {
        if (!std::isfinite(sd) || !std::isfinite(sa) || !std::isfinite(sb) || !std::isfinite(dot))
            return false;
        acc.count += n, acc.bitwiseEqual += equal;
        acc.maxAbsDiff = std::max(acc.maxAbsDiff, mx);
        acc.sumSqDiff += sd, acc.sumSqA += sa, acc.sumSqB += sb, acc.dot += dot;
        return true;
    }
};

// A word type and its value as a double.
struct F64Words
{
    using Word = uint64_t;
    static double value(Word w) { return std::bit_cast<double>(w); }
};
struct F32Words
{
    using Word = uint32_t;
    static double value(Word w) { return double(std::bit_cast<float>(w)); }
};
struct BF16Words
{
    using Word = uint16_t;
    static double value(Word w) { return double(std::bit_cast<float>(uint32_t(w) << 16)); }
};
struct F16Words
{
    using Word = uint16_t;
    static double value(Word h) { return double(kernels::halfToFloat(h)); }
};

// The portable block: loops the compiler vectorises (any x86-64, other CPUs). n <= kDiffBlock.
template <typename L>
[[gnu::always_inline]] inline DiffBlock diffBlockPortable(const typename L::Word* a,
                                                          const typename L::Word* b, uint64_t n)
{
    using W = typename L::Word;
    W eq = 0; // n <= kDiffBlock fits every word type
#pragma omp simd reduction(+ : eq)
    for (uint64_t i = 0; i < n; ++i)
        eq += W(a[i] == b[i]);
    DiffBlock r;
    r.equal = eq;
    double mx = 0, sd = 0, sa = 0, sb = 0, dot = 0;
#pragma omp simd reduction(+ : sd, sa, sb, dot) reduction(max : mx)
    for (uint64_t i = 0; i < n; ++i) {
        const double x = L::value(a[i]), y = L::value(b[i]), d = x - y, ad = std::fabs(d);
        mx = ad > mx ? ad : mx;
        sd += d * d, sa += x * x, sb += y * y, dot += x * y;
    }
    r.mx = mx, r.sd = sd, r.sa = sa, r.sb = sb, r.dot = dot;
    return r;
}

// Elements [0, n) of two same-type arrays aligned to their word, block by block; `block` gives
// a block's sums over its first `len` elements and says how many it took (a multiple of its
// vector step); the rest of the block and every non-finite block go through the reference loop.
template <typename L, typename Block>
[[gnu::always_inline]] inline void diffSameType(const uint8_t* pa, const uint8_t* pb, uint64_t n,
                                                DiffStats& acc, Block block)
{
    using W = typename L::Word;
    const auto* a = reinterpret_cast<const W*>(pa);
    const auto* b = reinterpret_cast<const W*>(pb);
    const auto load = [](const uint8_t* p) { return L::value(ld<W>(p)); };
    for (uint64_t first = 0; first < n; first += kDiffBlock) {
        const uint64_t len = std::min(kDiffBlock, n - first);
        DiffBlock r;
        const uint64_t took = block(a + first, b + first, len, r);
        if (!r.addTo(acc, took)) {
            diffElements(pa, sizeof(W), load, pb, sizeof(W), load, true, first, first + len, acc);
        } else if (took < len) {
            diffElements(pa, sizeof(W), load, pb, sizeof(W), load, true, first + took, first + len, acc);
        }
    }
}

template <typename L>
uint64_t portableBlock(const typename L::Word* a, const typename L::Word* b, uint64_t n, DiffBlock& r)
{
    r = diffBlockPortable<L>(a, b, n);
    return n;
}

CKPT_WIDE_SIMD void diffF64(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<F64Words>(a, b, n, acc, [](auto&&... x) { return portableBlock<F64Words>(x...); });
}
CKPT_WIDE_SIMD void diffF32(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<F32Words>(a, b, n, acc, [](auto&&... x) { return portableBlock<F32Words>(x...); });
}
CKPT_WIDE_SIMD void diffBF16(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<BF16Words>(a, b, n, acc, [](auto&&... x) { return portableBlock<BF16Words>(x...); });
}
CKPT_WIDE_SIMD void diffF16(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<F16Words>(a, b, n, acc, [](auto&&... x) { return portableBlock<F16Words>(x...); });
}

#if CKPT_X86_KERNELS
// AVX2 + FMA (+ F16C for half): the same blocks written out, two sets of accumulators so the
// FMA chains overlap. Chosen at run time when the CPU has them.
#define CKPT_AVX2 gnu::target("avx2,fma,f16c")

// Two sets of the four sums (eight FMA chains in flight) and one running max |a-b|: eleven
// registers with the sign mask, so that nothing spills (a spilled accumulator turned the loop
// into a store-to-load chain, half the speed).
struct Avx2Sums
{
    __m256d sd, sa, sb, dot;
};

[[CKPT_AVX2, gnu::always_inline]] inline void avx2Zero(Avx2Sums& s)
{
    s.sd = s.sa = s.sb = s.dot = _mm256_setzero_pd();
}

[[CKPT_AVX2, gnu::always_inline]] inline void avx2Add(Avx2Sums& s, __m256d& mx, __m256d x, __m256d y)
{
    const __m256d d = _mm256_sub_pd(x, y);
    mx = _mm256_max_pd(mx, _mm256_andnot_pd(_mm256_set1_pd(-0.0), d));
    s.sd = _mm256_fmadd_pd(d, d, s.sd);
    s.sa = _mm256_fmadd_pd(x, x, s.sa);
    s.sb = _mm256_fmadd_pd(y, y, s.sb);
    s.dot = _mm256_fmadd_pd(x, y, s.dot);
}

// Eight floats as two halves of doubles, into the two sets of sums.
[[CKPT_AVX2, gnu::always_inline]] inline void avx2Add8(Avx2Sums& s0, Avx2Sums& s1, __m256d& mx, __m256 x,
                                                       __m256 y)
{
    avx2Add(s0, mx, _mm256_cvtps_pd(_mm256_castps256_ps128(x)), _mm256_cvtps_pd(_mm256_castps256_ps128(y)));
    avx2Add(s1, mx, _mm256_cvtps_pd(_mm256_extractf128_ps(x, 1)),
            _mm256_cvtps_pd(_mm256_extractf128_ps(y, 1)));
}

[[CKPT_AVX2, gnu::always_inline]] inline double avx2Sum(__m256d v)
{
    const __m128d h = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

[[CKPT_AVX2, gnu::always_inline]] inline double avx2Max(__m256d v)
{
    const __m128d h = _mm_max_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_max_sd(h, _mm_unpackhi_pd(h, h)));
}

[[CKPT_AVX2, gnu::always_inline]] inline void avx2Finish(const Avx2Sums& s0, const Avx2Sums& s1, __m256d mx,
                                                         DiffBlock& r)
{
    r.mx = avx2Max(mx);
    r.sd = avx2Sum(_mm256_add_pd(s0.sd, s1.sd));
    r.sa = avx2Sum(_mm256_add_pd(s0.sa, s1.sa));
    r.sb = avx2Sum(_mm256_add_pd(s0.sb, s1.sb));
    r.dot = avx2Sum(_mm256_add_pd(s0.dot, s1.dot));
}

// Bitwise-equal words of a compare, counted in a general register (popcount of the byte mask
// over bytes per word): keeps a vector register free.
[[CKPT_AVX2, gnu::always_inline]] inline uint64_t avx2Equal(__m256i cmp, int bytesPerWord)
{
    return uint64_t(__builtin_popcount(uint32_t(_mm256_movemask_epi8(cmp)))) / uint64_t(bytesPerWord);
}

[[CKPT_AVX2]] uint64_t avx2BlockF32(const uint32_t* a, const uint32_t* b, uint64_t n, DiffBlock& r)
{
    Avx2Sums s0, s1;
    avx2Zero(s0), avx2Zero(s1);
    __m256d mx = _mm256_setzero_pd();
    uint64_t eq = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
        const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
        eq += uint64_t(
            __builtin_popcount(uint32_t(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(x, y))))));
        avx2Add8(s0, s1, mx, _mm256_castsi256_ps(x), _mm256_castsi256_ps(y));
    }
    avx2Finish(s0, s1, mx, r);
    r.equal = eq;
    return i;
}

// The two 16-bit floating types differ only in how eight words widen to floats.
template <bool BFloat16>
[[CKPT_AVX2]] uint64_t avx2Block16(const uint16_t* a, const uint16_t* b, uint64_t n, DiffBlock& r)
{
    Avx2Sums s0, s1;
    avx2Zero(s0), avx2Zero(s1);
    __m256d mx = _mm256_setzero_pd();
    const __m256i zero = _mm256_setzero_si256();
    uint64_t eq = 0, i = 0;
    for (; i + 16 <= n; i += 16) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
        const __m256i y = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
        eq += avx2Equal(_mm256_cmpeq_epi16(x, y), 2);
        if constexpr (BFloat16) {
            // bf16 << 16 is the float; the interleaved order does not matter to sums
            avx2Add8(s0, s1, mx, _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, x)),
                     _mm256_castsi256_ps(_mm256_unpacklo_epi16(zero, y)));
            avx2Add8(s0, s1, mx, _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, x)),
                     _mm256_castsi256_ps(_mm256_unpackhi_epi16(zero, y)));
        } else {
            // F16C's conversion is exact (every half is a float), as halfToFloat
            avx2Add8(s0, s1, mx, _mm256_cvtph_ps(_mm256_castsi256_si128(x)),
                     _mm256_cvtph_ps(_mm256_castsi256_si128(y)));
            avx2Add8(s0, s1, mx, _mm256_cvtph_ps(_mm256_extracti128_si256(x, 1)),
                     _mm256_cvtph_ps(_mm256_extracti128_si256(y, 1)));
        }
    }
    avx2Finish(s0, s1, mx, r);
    r.equal = eq;
    return i;
}

[[CKPT_AVX2]] uint64_t avx2BlockF64(const uint64_t* a, const uint64_t* b, uint64_t n, DiffBlock& r)
{
    Avx2Sums s0, s1;
    avx2Zero(s0), avx2Zero(s1);
    __m256d mx = _mm256_setzero_pd();
    uint64_t eq = 0, i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256i x0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i));
        const __m256i y0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i));
        const __m256i x1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a + i + 4));
        const __m256i y1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(b + i + 4));
        eq += avx2Equal(_mm256_cmpeq_epi64(x0, y0), 8) + avx2Equal(_mm256_cmpeq_epi64(x1, y1), 8);
        avx2Add(s0, mx, _mm256_castsi256_pd(x0), _mm256_castsi256_pd(y0));
        avx2Add(s1, mx, _mm256_castsi256_pd(x1), _mm256_castsi256_pd(y1));
    }
    avx2Finish(s0, s1, mx, r);
    r.equal = eq;
    return i;
}

[[CKPT_AVX2]] void avx2DiffF64(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<F64Words>(a, b, n, acc, avx2BlockF64);
}
[[CKPT_AVX2]] void avx2DiffF32(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<F32Words>(a, b, n, acc, avx2BlockF32);
}
[[CKPT_AVX2]] void avx2DiffBF16(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<BF16Words>(a, b, n, acc, avx2Block16<true>);
}
[[CKPT_AVX2]] void avx2DiffF16(const uint8_t* a, const uint8_t* b, uint64_t n, DiffStats& acc)
{
    diffSameType<F16Words>(a, b, n, acc, avx2Block16<false>);
}

bool haveAvx2()
{
    static const bool yes = [] {
        if (const char* off = std::getenv("CKPT_NO_AVX2"); off && *off && *off != '0') return false;
        __builtin_cpu_init();
        // F16C from CPUID leaf 1 (ECX bit 29): clang 14 has no "f16c" for __builtin_cpu_supports.
        unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
        const bool f16c = __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & (1u << 29));
        return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && f16c;
    }();
    return yes;
}
#endif

// The fused kernel for a same-type floating pair whose words are aligned, else nullptr.
using DiffKernel = void (*)(const uint8_t*, const uint8_t*, uint64_t, DiffStats&);
DiffKernel fastDiffKernel(Scalar ta, Scalar tb, const uint8_t* a, const uint8_t* b)
{
    if (ta != tb) return nullptr;
    const uint32_t es = scalarSize(ta);
    if (reinterpret_cast<uintptr_t>(a) % es || reinterpret_cast<uintptr_t>(b) % es) return nullptr;
#if CKPT_X86_KERNELS
    if (haveAvx2()) {
        switch (ta) {
        case Scalar::F64:
            return avx2DiffF64;
        case Scalar::F32:
            return avx2DiffF32;
        case Scalar::BF16:
            return avx2DiffBF16;
        case Scalar::F16:
            return avx2DiffF16;
        default:
            return nullptr;
        }
    }
#endif
    switch (ta) {
    case Scalar::F64:
        return diffF64;
    case Scalar::F32:
        return diffF32;
    case Scalar::BF16:
        return diffBF16;
    case Scalar::F16:
        return diffF16;
    default:
        return nullptr;
    }
}

class CpuBackend final : public ComputeBackend
{
public:
    std::string name() const override { return "cpu"; }
    std::string device() const override { return std::to_string(threadCount()) + " CPU threads"; }
    bool supports(Op op, Scalar type) const override { return cpuDefines(op, type); }

    void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) override
    {
        const uint64_t es = v.elementSize;
        if (count == 0) return;
        if (v.contiguous()) {
            std::memcpy(dst, v.base + (uint64_t(v.offset) + first) * es, count * es);
            return;
        }
        const size_t nd = v.shape.size();
        // Odometer over the index, starting at `first`; the innermost dimension is copied in
        // runs (one memcpy when its stride is 1, element by element otherwise).
        std::vector<int64_t> idx(nd, 0);
        uint64_t rest = first;
        for (size_t d = nd; d-- > 0;) {
            idx[d] = int64_t(rest % uint64_t(v.shape[d]));
            rest /= uint64_t(v.shape[d]);
        }
        const int64_t inner = v.shape[nd - 1];
        const int64_t innerStride = v.stride[nd - 1];
        uint64_t done = 0;
        while (done < count) {
            int64_t off = v.offset;
            for (size_t d = 0; d < nd; ++d)
                off += idx[d] * v.stride[d];
            const uint64_t run = std::min<uint64_t>(uint64_t(inner - idx[nd - 1]), count - done);
            const uint8_t* src = v.base + uint64_t(off) * es;
            if (innerStride == 1) {
                std::memcpy(dst + done * es, src, run * es);
            } else {
                for (uint64_t i = 0; i < run; ++i)
                    std::memcpy(dst + (done + i) * es, src + i * uint64_t(innerStride) * es, es);
            }
            done += run;
            idx[nd - 1] += int64_t(run);
            for (size_t d = nd - 1; d > 0 && idx[d] == v.shape[d]; --d) {
                idx[d] = 0;
                ++idx[d - 1];
            }
        }
    }

    void cast(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count) override
    {
        int parts = 0;
        const uint32_t fs = scalarSize(from), ts = scalarSize(to);
        parallelFor(
            count, 1 << 20,
            [&](uint64_t b, uint64_t e, int) { castElements(from, to, src + b * fs, dst + b * ts, e - b); },
            parts);
    }

    // Contiguous elements: blocks of kBlock, threads over block ranges, merged in order.
    Stats contiguousStats(const uint8_t* p, uint64_t n, Scalar t)
    {
        const uint32_t es = scalarSize(t);
        const uint64_t blocks = (n + kBlock - 1) / kBlock;
        std::vector<Stats> partial(static_cast<size_t>(threadCount()));
        int parts = 0;
        parallelFor(
            blocks, 64,
            [&](uint64_t b, uint64_t e, int part) {
                Stats acc;
                if (t == Scalar::F32 && reinterpret_cast<uintptr_t>(p) % alignof(float) == 0) {
                    for (uint64_t blk = b; blk < e; ++blk) {
                        const uint64_t first = blk * kBlock, len = std::min(kBlock, n - first);
                        acc.merge(blockStatsF32(reinterpret_cast<const float*>(p) + first, len));
                    }
                } else {
                    withLoader(t, [&](auto load) {
                        for (uint64_t blk = b; blk < e; ++blk) {
                            const uint64_t first = blk * kBlock, len = std::min(kBlock, n - first);
                            acc.merge(blockStats(p + first * es, len, es, load));
                        }
                        return 0;
                    });
                }
                partial[size_t(part)] = acc;
            },
            parts);
        Stats s;
        for (int i = 0; i < parts; ++i)
            s.merge(partial[size_t(i)]);
        return s;
    }

    // Strided inputs are gathered a stage at a time, then treated as contiguous.
    template <typename Fn> void staged(const StridedView& v, Fn fn)
    {
        const uint64_t n = v.numel();
        if (v.contiguous()) {
            fn(v.base + uint64_t(v.offset) * v.elementSize, n);
            return;
        }
        std::vector<uint8_t> buf(std::min(n, kStage) * v.elementSize);
        for (uint64_t first = 0; first < n; first += kStage) {
            const uint64_t len = std::min(kStage, n - first);
            gather(v, first, len, buf.data());
            fn(buf.data(), len);
        }
    }

    ValueRange range(const StridedView& v, Scalar t, bool log10)
    {
        ValueRange r;
        staged(v, [&](const uint8_t* p, uint64_t n) {
            withLoader(t, [&](auto load) {
                for (uint64_t i = 0; i < n; ++i) {
                    double x = load(p + i * v.elementSize);
                    if (!std::isfinite(x) || (log10 && x == 0)) continue;
                    if (log10) x = std::log10(std::fabs(x));
                    r.lo = std::min(r.lo, x), r.hi = std::max(r.hi, x);
                }
                return 0;
            });
        });
        return r;
    }

    Stats stats(const StridedView& v, Scalar t) override
    {
        Stats s;
        staged(v, [&](const uint8_t* p, uint64_t n) { s.merge(contiguousStats(p, n, t)); });
        return s;
    }

    Histogram histogram(const StridedView& v, Scalar t, int bins, bool log10, double lo, double hi) override
    {
        Histogram h;
        h.log10 = log10;
        h.bins.assign(size_t(std::max(bins, 1)), 0);
        if (!(lo < hi)) std::tie(lo, hi) = range(v, t, log10).bounds();
        h.lo = lo, h.hi = hi;
        const double scale = double(h.bins.size()) / (hi - lo);
        staged(v, [&](const uint8_t* p, uint64_t n) {
            withLoader(t, [&](auto load) {
                for (uint64_t i = 0; i < n; ++i) {
                    double x = load(p + i * v.elementSize);
                    if (!std::isfinite(x)) {
                        ++h.nonFinite;
                        continue;
                    }
                    if (log10) {
                        if (x == 0) {
                            ++h.zeros;
                            continue;
                        }
                        x = std::log10(std::fabs(x));
                    }
                    const double f = (x - lo) * scale;
                    const size_t b = f <= 0 ? 0 : std::min(h.bins.size() - 1, size_t(f));
                    if (x >= lo && x <= hi) ++h.bins[b];
                }
                return 0;
            });
        });
        return h;
    }

    DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) override
    {
        DiffStats d;
        const uint64_t n = a.numel();
        if (b.numel() != n) throw BackendError("diff: tensors have different element counts");
        const bool sameType = ta == tb;
        const uint32_t ea = scalarSize(ta), eb = scalarSize(tb);
        std::vector<uint8_t> bufA, bufB;
        for (uint64_t first = 0; first < n; first += kStage) {
            const uint64_t len = std::min(kStage, n - first);
            const uint8_t* pa = a.base + (uint64_t(a.offset) + first) * ea;
            const uint8_t* pb = b.base + (uint64_t(b.offset) + first) * eb;
            if (!a.contiguous()) bufA.resize(len * ea), gather(a, first, len, bufA.data()), pa = bufA.data();
            if (!b.contiguous()) bufB.resize(len * eb), gather(b, first, len, bufB.data()), pb = bufB.data();
            std::vector<DiffStats> partial(static_cast<size_t>(threadCount()));
            int parts = 0;
            const DiffKernel fast = fastDiffKernel(ta, tb, pa, pb);
            parallelFor(
                len, 1 << 16,
                [&](uint64_t s, uint64_t e, int part) {
                    DiffStats acc;
                    if (fast) {
                        fast(pa + s * ea, pb + s * eb, e - s, acc);
                    } else {
                        withLoader(ta, [&](auto la) {
                            return withLoader(tb, [&](auto lb) {
                                diffElements(pa, ea, la, pb, eb, lb, sameType, s, e, acc);
                                return 0;
                            });
                        });
                    }
                    partial[size_t(part)] = acc;
                },
                parts);
            for (int i = 0; i < parts; ++i)
                d.merge(partial[size_t(i)]);
        }
        return d;
    }
};

CpuBackend& theCpuBackend()
{
    static CpuBackend backend;
    return backend;
}

} // namespace

ComputeBackend& cpuBackend()
{
    return theCpuBackend();
}

void ValueRange::merge(const ValueRange& o)
{
    lo = std::min(lo, o.lo), hi = std::max(hi, o.hi);
}

std::pair<double, double> ValueRange::bounds() const
{
    const double l = std::isfinite(lo) ? lo : 0, h = std::isfinite(hi) ? hi : 1;
    if (l < h) return {l, h};
    // One value: a bin of width 1 above it, or of one ulp where l + 1 rounds back to l (|l| >=
    // 2^53), which would leave hi == lo and every bin index NaN.
    return {l, std::max(l + 1, std::nextafter(l, INFINITY))};
}

ValueRange valueRange(const StridedView& v, Scalar type, bool log10)
{
    return theCpuBackend().range(v, type, log10);
}

} // namespace ckpt::gpu
