// The parity suite: a backend built from the shared kernels against the CPU oracle, over every
// operation x every dtype x the size classes where kernels break (0, 1, odd, one element past a
// staging buffer), unaligned bases and offsets, strided and broadcast views, and the values
// where devices drift (NaN with payloads and either sign, infinities, subnormals, -0.0).
// Exact where the definition is exact (casts, gathers, counts, minima, maxima, bins);
// floating sums within agree()'s stated tolerance. Plain C++ (no Qt): gpu_parity runs it on a
// GPU machine that has no Qt, gpu_parity_host in CI on the shared kernels' host build.
#pragma once

#include "compute_backend.h"
#include "kernels/elements.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace parity {

using namespace ckpt::gpu;

struct Tally
{
    int passed = 0, failed = 0;
    void check(bool ok, const std::string& what)
    {
        (ok ? passed : failed)++;
        if (!ok) std::printf("FAIL %s\n", what.c_str());
    }
};

constexpr Scalar kAll[] = {
    Scalar::F64,        Scalar::F32,        Scalar::F16,    Scalar::BF16, Scalar::F8E4M3FN, Scalar::F8E5M2,
    Scalar::F8E4M3FNUZ, Scalar::F8E5M2FNUZ, Scalar::F8E8M0, Scalar::I64,  Scalar::I32,      Scalar::I16,
    Scalar::I8,         Scalar::U8,         Scalar::U16,    Scalar::U32,  Scalar::U64,      Scalar::Bool};
constexpr Scalar kFloats[] = {Scalar::F64, Scalar::F32, Scalar::F16, Scalar::BF16};

inline const char* nameOf(Scalar s)
{
    static const char* names[] = {"f64",        "f32",        "f16",    "bf16", "f8e4m3fn", "f8e5m2",
                                  "f8e4m3fnuz", "f8e5m2fnuz", "f8e8m0", "i64",  "i32",      "i16",
                                  "i8",         "u8",         "u16",    "u32",  "u64",      "bool"};
    return names[int(s)];
}

// The bit patterns devices get wrong, per floating type: NaN with a payload (positive, negative,
// signalling), both infinities, the smallest subnormal, -0.0, the largest finite.
inline std::vector<uint64_t> specials(Scalar t)
{
    switch (t) {
    case Scalar::F64:
        return {0x7FF8000000000123ull, 0xFFF4000000000001ull, 0x7FF0000000000000ull, 0xFFF0000000000000ull,
                0x0000000000000001ull, 0x8000000000000000ull, 0x7FEFFFFFFFFFFFFFull};
    case Scalar::F32:
        return {0x7FC00001u, 0xFFA00000u, 0x7F800000u, 0xFF800000u, 0x00000001u, 0x80000000u, 0x7F7FFFFFu};
    case Scalar::F16:
        return {0x7E01u, 0xFE55u, 0x7C00u, 0xFC00u, 0x0001u, 0x8000u, 0x7BFFu};
    case Scalar::BF16:
        return {0x7FC1u, 0xFF81u, 0x7F80u, 0xFF80u, 0x0001u, 0x8000u, 0x7F7Fu};
    default:
        return {};
    }
}

// n elements of type t: normal values (floating types), random bits (integers, float8, whose
// 256 patterns hold every special), the specials spread through it.
inline std::vector<uint8_t> sample(Scalar t, uint64_t n, uint32_t seed, uint64_t pad = 0)
{
    const uint32_t es = scalarSize(t);
    std::vector<uint8_t> b(pad + n * es);
    std::mt19937_64 rng(seed);
    std::normal_distribution<float> nd(0.5f, 3.0f);
    for (uint64_t i = 0; i < n; ++i) {
        uint8_t* p = b.data() + pad + i * es;
        if (t == Scalar::F64 || t == Scalar::F32 || t == Scalar::F16 || t == Scalar::BF16) {
            const float f = nd(rng);
            kernels::castOne(Scalar::F32, t, reinterpret_cast<const uint8_t*>(&f), p);
        } else if (t == Scalar::Bool) {
            *p = uint8_t(rng() & 1);
        } else {
            const uint64_t r = rng();
            std::memcpy(p, &r, es);
        }
    }
    const auto sp = specials(t);
    for (size_t k = 0; k < sp.size() && n; ++k)
        std::memcpy(b.data() + pad + (k * 97 % n) * es, &sp[k], es);
    return b;
}

inline std::string label(const char* op, Scalar t, uint64_t n, const std::string& how = "")
{
    return std::string(op) + " " + nameOf(t) + " n=" + std::to_string(n) + how;
}

inline bool sameHistogram(const Histogram& a, const Histogram& b, bool exact)
{
    if (!exact) return agree(a, b);
    return a.bins == b.bins && a.zeros == b.zeros && a.nonFinite == b.nonFinite && a.lo == b.lo &&
           a.hi == b.hi;
}

// The reductions of one view on both backends.
inline void reductions(Tally& tally, ComputeBackend& dut, ComputeBackend& cpu, const StridedView& v, Scalar t,
                       const std::string& what, bool exactBins)
{
    std::string why;
    const bool ok = agree(dut.stats(v, t), cpu.stats(v, t), &why); // before `why` is read
    tally.check(ok, "stats " + what + ": " + why);
    for (bool lg : {false, true}) {
        const Histogram a = dut.histogram(v, t, 16, lg, 0, 0), b = cpu.histogram(v, t, 16, lg, 0, 0);
        tally.check(sameHistogram(a, b, exactBins), std::string(lg ? "log10 " : "") + "histogram " + what);
    }
}

// `staging`: the bytes one staged buffer of `dut` holds, so sizes cross it by one element.
inline Tally run(ComputeBackend& dut, uint64_t staging, bool exactBins)
{
    Tally tally;
    ComputeBackend& cpu = cpuBackend();
    for (Scalar t : kAll) {
        const uint32_t es = scalarSize(t);
        for (uint64_t n : {uint64_t(0), uint64_t(1), uint64_t(7), uint64_t(4099), staging / es + 1}) {
            // pad 1: every element at an odd address, and the view starts 3 elements in
            const uint64_t pad = 1, skip = n > 3 ? 3 : 0;
            const auto a = sample(t, n, uint32_t(n * 31 + es), pad);
            const StridedView contiguous{a.data() + pad, es, {int64_t(n)}, {1}, 0};
            const StridedView offset{a.data() + pad, es, {int64_t(n - skip)}, {1}, int64_t(skip)};
            reductions(tally, dut, cpu, contiguous, t, label("", t, n), exactBins);
            reductions(tally, dut, cpu, offset, t, label("", t, n, " unaligned+offset"), exactBins);

            // a second tensor: the first with every 5th element redrawn, so some pairs differ
            auto b = a;
            const auto other = sample(t, n, uint32_t(n * 17 + 5), pad);
            for (uint64_t i = 0; i < n; i += 5)
                std::memcpy(b.data() + pad + i * es, other.data() + pad + i * es, es);
            const StridedView vb{b.data() + pad, es, {int64_t(n)}, {1}, 0};
            std::string why;
            bool ok = agree(dut.diff(contiguous, t, vb, t), cpu.diff(contiguous, t, vb, t), &why);
            tally.check(ok, label("diff", t, n) + ": " + why);
            // across dtypes: each side widened to f64
            const Scalar u = t == Scalar::F32 ? Scalar::BF16 : Scalar::F32;
            const auto c = sample(u, n, uint32_t(n + 3));
            const StridedView vc{c.data(), scalarSize(u), {int64_t(n)}, {1}, 0};
            ok = agree(dut.diff(contiguous, t, vc, u), cpu.diff(contiguous, t, vc, u), &why);
            tally.check(ok, label("diff", t, n, std::string(" vs ") + nameOf(u)) + ": " + why);

            if (!kernels::castable(t)) continue;
            for (Scalar to : kFloats) {
                const uint32_t ts = scalarSize(to);
                // the output one byte off its alignment too
                std::vector<uint8_t> x(n * ts + 1), y(n * ts + 1);
                dut.cast(t, to, a.data() + pad, x.data() + 1, n);
                cpu.cast(t, to, a.data() + pad, y.data() + 1, n);
                tally.check(x == y, label("cast", t, n, std::string(" -> ") + nameOf(to)));
            }
        }
        // Strided views: a transpose, a broadcast (stride 0) and a column slice, gathered and reduced.
        const int64_t rows = 37, cols = 29;
        const auto m = sample(t, uint64_t(rows * cols), 11u + es);
        const StridedView views[] = {
            {m.data(), es, {cols, rows}, {1, cols}, 0},       // transpose
            {m.data(), es, {5, rows, cols}, {0, cols, 1}, 0}, // broadcast over a new leading dim
            {m.data(), es, {rows, 7}, {cols, 2}, 3},          // every second column from the 4th
        };
        const char* kinds[] = {" transposed", " broadcast", " sliced"};
        for (int k = 0; k < 3; ++k) {
            const StridedView& v = views[k];
            const uint64_t n = v.numel();
            reductions(tally, dut, cpu, v, t, label("", t, n, kinds[k]), exactBins);
            std::vector<uint8_t> x(n * es), y(n * es);
            dut.gather(v, 0, n, x.data());
            cpu.gather(v, 0, n, y.data());
            tally.check(x == y, label("gather", t, n, kinds[k]));
            // a range that starts mid-row
            dut.gather(v, 13, n - 20, x.data());
            cpu.gather(v, 13, n - 20, y.data());
            tally.check(x == y, label("gather from 13", t, n, kinds[k]));
        }
    }
    return tally;
}

} // namespace parity
