// CUDA against the CPU oracle, as a plain executable (no Qt), so it runs on a GPU host that has
// no Qt. Bit-exact for casts, hashes and counts; relative 1e-12 for fp64 reductions (block
// partials merge in the same order, only the order inside a CUDA block may differ).
// Without CUDA or without a device it says why and exits 0.
#include "compute_backend.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

using namespace ckpt::gpu;

namespace {

int passed = 0, failed = 0;

void check(bool ok, const std::string& what)
{
    (ok ? passed : failed)++;
    if (!ok) std::printf("FAIL %s\n", what.c_str());
}

bool rel(double a, double b, double tol)
{
    if (std::isnan(a) && std::isnan(b)) return true;
    return std::fabs(a - b) <= tol * std::max(1.0, std::fabs(b));
}

std::vector<uint8_t> randomFloats(size_t n, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> nd(0.5f, 3.0f);
    std::vector<float> v(n);
    for (auto& x : v)
        x = nd(rng);
    const float special[] = {NAN, INFINITY, -INFINITY, -0.0f, 1e-45f, 65520.0f, 3.0e38f};
    for (size_t i = 0; i < std::size(special) && i < n; ++i)
        v[i * 97 % n] = special[i];
    std::vector<uint8_t> b(n * 4);
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

} // namespace

int main()
{
    if (!cudaBuilt()) {
        std::printf("gpu_parity: skipped: this build has no CUDA backend (CKPT_CUDA=OFF or no toolkit)\n");
        return 0;
    }
    std::string reason;
    std::shared_ptr<ComputeBackend> cuda;
    try {
        cuda = makeBackend(Device::Cuda, &reason);
    } catch (const BackendError& e) {
        std::printf("gpu_parity: skipped: %s\n", e.what());
        return 0;
    }
    ComputeBackend& cpu = cpuBackend();
    std::printf("gpu_parity: %s vs %s\n", cuda->device().c_str(), cpu.device().c_str());

    for (size_t n :
         {size_t(1), size_t(4095), size_t(1) << 20, (size_t(1) << 26) + 3}) { // last one: > one staging chunk
        const auto f32 = randomFloats(n, uint32_t(n));
        const StridedView v{f32.data(), 4, {int64_t(n)}, {1}, 0};
        for (Scalar to : {Scalar::F16, Scalar::BF16, Scalar::F64}) {
            std::vector<uint8_t> a(n * scalarSize(to)), b(a.size());
            cpu.cast(Scalar::F32, to, f32.data(), a.data(), n);
            cuda->cast(Scalar::F32, to, f32.data(), b.data(), n);
            check(a == b, "cast f32 -> " + std::to_string(int(to)) + " n=" + std::to_string(n));
            std::vector<uint8_t> back(n * 4), back2(n * 4);
            cpu.cast(to, Scalar::F32, a.data(), back.data(), n);
            cuda->cast(to, Scalar::F32, a.data(), back2.data(), n);
            check(back == back2, "cast back to f32 n=" + std::to_string(n));
        }
        check(cpu.hash(f32.data(), f32.size()) == cuda->hash(f32.data(), f32.size()),
              "hash n=" + std::to_string(n));
        const Stats s1 = cpu.stats(v, Scalar::F32), s2 = cuda->stats(v, Scalar::F32);
        check(s1.count == s2.count && s1.nans == s2.nans && s1.infs == s2.infs && s1.zeros == s2.zeros,
              "stats counts");
        check(s1.min == s2.min && s1.max == s2.max && s1.absmax == s2.absmax, "stats min/max");
        check(rel(s1.mean, s2.mean, 1e-12) && rel(s1.std(), s2.std(), 1e-12) && rel(s1.l2(), s2.l2(), 1e-12),
              "stats mean/std/l2 n=" + std::to_string(n));
        auto other = randomFloats(n, uint32_t(n + 1));
        const StridedView w{other.data(), 4, {int64_t(n)}, {1}, 0};
        const DiffStats d1 = cpu.diff(v, Scalar::F32, w, Scalar::F32),
                        d2 = cuda->diff(v, Scalar::F32, w, Scalar::F32);
        check(d1.count == d2.count && d1.bitwiseEqual == d2.bitwiseEqual &&
                  d1.nanMismatch == d2.nanMismatch && d1.maxAbsDiff == d2.maxAbsDiff,
              "diff counts");
        check(rel(d1.l2Diff(), d2.l2Diff(), 1e-9) && rel(d1.cosine(), d2.cosine(), 1e-9),
              "diff sums n=" + std::to_string(n));
    }
    // strided input through the staging path
    const auto f32 = randomFloats(64 * 33, 3);
    const StridedView t{f32.data(), 4, {33, 64}, {1, 33}, 0};
    const Stats a = cpu.stats(t, Scalar::F32), b = cuda->stats(t, Scalar::F32);
    check(a.count == b.count && rel(a.mean, b.mean, 1e-12), "strided stats");
    std::printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
