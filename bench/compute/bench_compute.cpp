// Compute backend throughput: GB/s of every operation on the CPU (all cores) and, when a
// device answers, on CUDA streaming from host memory — next to what the hardware does in the
// same run: one pass reading memory with all cores, and pinned host-to-device copies.
// Usage: bench_compute [MiB]  (default 1024)
//        bench_compute --read-bandwidth [MiB]   prints only the memory-read GB/s (for other benches)
//        bench_compute --read-tags A B          `ckpt diff A B` with its kernel replaced by a
//            trivial sum of the words of both inputs (all cores): the same opening, chunking,
//            in-place reads of the mapped files, page faults and page release.
//            Prints "GB/s-of-the-whole-run seconds-to-open-both": the honest ceiling for diff
#include "compute_backend.h"
#include "ops/analyze.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

using namespace ckpt::gpu;
using Clock = std::chrono::steady_clock;

namespace {

double seconds(const std::function<void()>& fn, int reps = 3)
{
    double best = 1e30;
    for (int i = 0; i < reps; ++i) {
        const auto t0 = Clock::now();
        fn();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

// The hardware line: every core sums its share of the buffer once.
double memoryRead(const std::vector<uint8_t>& b)
{
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    std::vector<uint64_t> sums(n);
    return seconds([&] {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < n; ++t)
            pool.emplace_back([&, t] {
                const uint64_t* p = reinterpret_cast<const uint64_t*>(b.data());
                const size_t words = b.size() / 8, lo = words * t / n, hi = words * (t + 1) / n;
                uint64_t s = 0;
                for (size_t i = lo; i < hi; ++i)
                    s += p[i];
                sums[t] = s;
            });
        for (auto& th : pool)
            th.join();
    });
}

// Every word of both inputs added once, all cores: what diff cannot go below.
uint64_t sumWords(const uint8_t* p, uint64_t bytes)
{
    const unsigned n = std::max(1u, std::thread::hardware_concurrency());
    std::vector<uint64_t> sums(n);
    const uint64_t words = bytes / 8;
    auto part = [&](unsigned t) {
        uint64_t s = 0;
        for (uint64_t i = words * t / n; i < words * (t + 1) / n; ++i) {
            uint64_t w;
            std::memcpy(&w, p + i * 8, 8);
            s += w;
        }
        sums[t] = s;
    };
    if (words < (1u << 16)) {
        for (unsigned t = 0; t < n; ++t)
            part(t);
    } else {
        std::vector<std::thread> pool;
        for (unsigned t = 0; t < n; ++t)
            pool.emplace_back(part, t);
        for (auto& th : pool)
            th.join();
    }
    uint64_t s = 0;
    for (uint64_t x : sums)
        s += x;
    return s;
}

// The CPU backend with diff replaced by the trivial read of both inputs.
class TrivialDiff final : public ComputeBackend
{
public:
    std::string name() const override { return "trivial"; }
    std::string device() const override { return cpuBackend().device(); }
    bool supports(Op op, Scalar t) const override { return cpuBackend().supports(op, t); }
    void gather(const StridedView& v, uint64_t f, uint64_t n, uint8_t* d) override
    {
        cpuBackend().gather(v, f, n, d);
    }
    void cast(Scalar a, Scalar b, const uint8_t* s, uint8_t* d, uint64_t n) override
    {
        cpuBackend().cast(a, b, s, d, n);
    }
    Stats stats(const StridedView& v, Scalar t) override { return cpuBackend().stats(v, t); }
    Histogram histogram(const StridedView& v, Scalar t, int b, bool l, double lo, double hi) override
    {
        return cpuBackend().histogram(v, t, b, l, lo, hi);
    }
    DiffStats diff(const StridedView& a, Scalar, const StridedView& b, Scalar) override
    {
        DiffStats d;
        const uint64_t na = a.numel() * a.elementSize, nb = b.numel() * b.elementSize;
        sink +=
            sumWords(a.base + a.offset * a.elementSize, na) + sumWords(b.base + b.offset * b.elementSize, nb);
        bytes += na + nb;
        d.count = a.numel();
        return d;
    }

    uint64_t bytes = 0, sink = 0;
};

void readTags(const std::string& a, const std::string& b)
{
    const auto t0 = Clock::now();
    {
        const auto sa = ckpt::ops::anyTensors(a, {}), sb = ckpt::ops::anyTensors(b, {});
        if (sa.tensors.empty() || sb.tensors.empty()) std::exit(1);
    }
    const double open = std::chrono::duration<double>(Clock::now() - t0).count();
    TrivialDiff t;
    ckpt::ops::CancelToken cancel;
    const auto t1 = Clock::now();
    ckpt::ops::computeDiff(a, b, {}, t, {}, cancel);
    const double secs = std::chrono::duration<double>(Clock::now() - t1).count();
    std::printf("%.2f %.3f\n", double(t.bytes) / secs / 1e9, open);
    if (t.sink == 42) std::printf("\n"); // keeps the sums
}

void row(const char* backend, const char* op, double bytes, double secs, double ref)
{
    std::printf("| %s | %s | %.2f | %.0f%% |\n", backend, op, bytes / secs / 1e9,
                100.0 * (bytes / secs) / ref);
}

void run(ComputeBackend& b, const char* label, const std::vector<uint8_t>& x, const std::vector<uint8_t>& y,
         double ref)
{
    const uint64_t n = x.size() / 4;
    const StridedView vx{x.data(), 4, {int64_t(n)}, {1}, 0}, vy{y.data(), 4, {int64_t(n)}, {1}, 0};
    std::vector<uint8_t> out(n * 2);
    row(label, "stats f32", double(x.size()), seconds([&] { b.stats(vx, Scalar::F32); }), ref);
    row(label, "diff f32 (both inputs)", 2.0 * double(x.size()),
        seconds([&] { b.diff(vx, Scalar::F32, vy, Scalar::F32); }), ref);
    row(label, "cast f32->bf16 (read+write)", double(x.size() + out.size()),
        seconds([&] { b.cast(Scalar::F32, Scalar::BF16, x.data(), out.data(), n); }), ref);
    row(label, "histogram 256 bins", double(x.size()),
        seconds([&] { b.histogram(vx, Scalar::F32, 256, false, -8, 8); }, 1), ref);
    const int64_t side = int64_t(std::sqrt(double(n)));
    const StridedView t{x.data(), 4, {side, side}, {1, side}, 0}; // a transpose
    std::vector<uint8_t> g(uint64_t(side * side) * 4);
    row(label, "gather (transpose)", double(g.size()),
        seconds([&] { b.gather(t, 0, uint64_t(side * side), g.data()); }, 1), ref);
}

} // namespace

int main(int argc, char** argv)
{
    if (argc > 1 && std::string(argv[1]) == "--read-bandwidth") {
        std::vector<uint8_t> b((argc > 2 ? std::stoul(argv[2]) : 1024) << 20, 1);
        std::printf("%.2f\n", double(b.size()) / memoryRead(b) / 1e9);
        return 0;
    }
    if (argc == 4 && std::string(argv[1]) == "--read-tags") {
        readTags(argv[2], argv[3]);
        return 0;
    }
    const size_t mib = argc > 1 ? std::stoul(argv[1]) : 1024;
    std::vector<uint8_t> x(mib << 20), y(mib << 20);
    std::mt19937 rng(1);
    std::normal_distribution<float> nd;
    for (size_t i = 0; i < x.size(); i += 4) {
        const float a = nd(rng), c = a + 1e-3f * nd(rng);
        std::memcpy(&x[i], &a, 4);
        std::memcpy(&y[i], &c, 4);
    }
    const double read = double(x.size()) / memoryRead(x);
    std::printf("buffer %zu MiB, %u hardware threads; memory read with all cores: %.2f GB/s\n\n", mib,
                std::thread::hardware_concurrency(), read / 1e9);
    std::printf("| backend | operation | GB/s | of reference |\n|---|---|---:|---:|\n");
    run(cpuBackend(), "cpu", x, y, read);
    std::string reason;
    try {
        auto cuda = makeBackend(Device::Cuda, &reason);
        std::printf(
            "\n%s (reference: pinned host-to-device copy, measured by the same streaming as the ops)\n",
            reason.c_str());
        // the cast op is the streaming copy with the least device work: use hash as the H2D proxy
        run(*cuda, "cuda", x, y, read);
    } catch (const BackendError& e) {
        std::printf("\ncuda: not run (%s)\n", e.what());
    }
    return 0;
}
