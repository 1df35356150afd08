// The CPU compute backend, the oracle: casts bit for bit against what PyTorch's .to() recorded,
// statistics, histograms and diffs against naive references written here
// from the definitions, on random and adversarial data of every element type.
#include "cast.h"
#include "compute_backend.h"
#include "ops/analyze.h"
#include "ops/tensor_source.h"
#include "testutil.h"

#include <QTest>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <stdexcept>
#include <unistd.h>

using namespace ckpt;
using gpu::Scalar;

namespace {

// A device that fails on every call, as a CUDA device does when it vanishes mid-job.
class FailingBackend final : public gpu::ComputeBackend
{
public:
    std::string name() const override { return "cuda"; }
    std::string device() const override { return "a device that fails"; }
    void gather(const gpu::StridedView&, uint64_t, uint64_t, uint8_t*) override { fail(); }
    void cast(Scalar, Scalar, const uint8_t*, uint8_t*, uint64_t) override { fail(); }
    gpu::Stats stats(const gpu::StridedView&, Scalar) override { fail(); }
    gpu::Histogram histogram(const gpu::StridedView&, Scalar, int, bool, double, double) override { fail(); }
    gpu::DiffStats diff(const gpu::StridedView&, Scalar, const gpu::StridedView&, Scalar) override { fail(); }
    bool supports(gpu::Op op, Scalar t) const override { return gpu::cpuDefines(op, t); }

private:
    [[noreturn]] static void fail() { throw gpu::BackendError("device lost"); }
};

// A job's backend that runs on the CPU and counts what it was asked to do, from any thread;
// `casts` says whether it claims casts as its own.
class CountingBackend final : public gpu::ComputeBackend
{
public:
    explicit CountingBackend(bool claimsCasts) : m_casts(claimsCasts) {}
    std::string name() const override { return "counting"; }
    std::string device() const override { return "the CPU, counted"; }
    bool supports(gpu::Op op, Scalar t) const override
    {
        return (op != gpu::Op::Cast || m_casts) && gpu::cpuDefines(op, t);
    }
    void gather(const gpu::StridedView& v, uint64_t f, uint64_t n, uint8_t* d) override
    {
        ++gathers;
        gpu::cpuBackend().gather(v, f, n, d);
    }
    void cast(Scalar a, Scalar b, const uint8_t* s, uint8_t* d, uint64_t n) override
    {
        ++casts;
        gpu::cpuBackend().cast(a, b, s, d, n);
    }
    gpu::Stats stats(const gpu::StridedView& v, Scalar t) override { return gpu::cpuBackend().stats(v, t); }
    gpu::Histogram histogram(const gpu::StridedView& v, Scalar t, int n, bool lg, double lo,
                             double hi) override
    {
        return gpu::cpuBackend().histogram(v, t, n, lg, lo, hi);
    }
    gpu::DiffStats diff(const gpu::StridedView& a, Scalar ta, const gpu::StridedView& b, Scalar tb) override
    {
        return gpu::cpuBackend().diff(a, ta, b, tb);
    }

    std::atomic<int> gathers{0}, casts{0};

private:
    bool m_casts;
};

// Every tensor of a set, filled through its own fill().
std::vector<std::vector<uint8_t>> filled(const ops::TensorSet& set)
{
    std::vector<std::vector<uint8_t>> out;
    for (const auto& t : set.tensors) {
        if (!t.tensor.fill) continue;
        out.emplace_back(t.tensor.nbytes);
        t.tensor.fill(0, t.tensor.nbytes, out.back().data());
    }
    return out;
}

// What the calling code writes to stderr (fd 2) while fn runs.
template <typename Fn> std::string stderrOf(Fn fn)
{
    std::fflush(stderr);
    FILE* capture = std::tmpfile();
    const int saved = ::dup(2);
    ::dup2(::fileno(capture), 2);
    fn();
    std::fflush(stderr);
    ::dup2(saved, 2);
    ::close(saved);
    std::string text(size_t(std::ftell(capture)), '\0');
    std::rewind(capture);
    text.resize(std::fread(text.data(), 1, text.size(), capture));
    std::fclose(capture);
    return text;
}

gpu::StridedView view(const std::vector<uint8_t>& b, Scalar t)
{
    const uint32_t es = gpu::scalarSize(t);
    return {b.data(), es, {int64_t(b.size() / es)}, {1}, 0};
}

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T>& v)
{
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

// Naive two-pass reference in long double over the decoded values.
struct Naive
{
    uint64_t count = 0, zeros = 0, nans = 0, infs = 0;
    long double min = INFINITY, max = -INFINITY, mean = 0, var = 0, absmax = 0, sumsq = 0;
};

Naive naive(const std::vector<uint8_t>& b, Scalar t)
{
    Naive r;
    const uint32_t es = gpu::scalarSize(t);
    std::vector<long double> v;
    for (size_t i = 0; i < b.size(); i += es) {
        const double x = gpu::toDouble(t, b.data() + i);
        ++r.count;
        if (std::isnan(x)) {
            ++r.nans;
            continue;
        }
        r.infs += std::isinf(x);
        r.zeros += x == 0;
        v.push_back(x);
    }
    if (v.empty()) return r;
    long double s = 0;
    for (auto x : v)
        s += x, r.min = std::min(r.min, x), r.max = std::max(r.max, x),
                r.absmax = std::max(r.absmax, std::fabs(x)), r.sumsq += x * x;
    r.mean = s / v.size();
    long double ss = 0;
    for (auto x : v)
        ss += (x - r.mean) * (x - r.mean);
    r.var = v.size() > 1 ? ss / (v.size() - 1) : NAN;
    return r;
}

bool close(double a, long double b, double rel = 1e-9)
{
    if (std::isnan(a) && std::isnan(double(b))) return true;
    if (std::isinf(a) || std::isinf(double(b))) return a == double(b);
    return std::fabs(a - double(b)) <= rel * std::max(1.0L, std::fabs(b));
}

// Random bytes decoded as `t`, plus the adversarial values every float type should meet.
std::vector<uint8_t> sample(Scalar t, size_t n, uint32_t seed)
{
    std::mt19937_64 rng(seed);
    std::vector<uint8_t> b(n * gpu::scalarSize(t));
    if (t == Scalar::F32 || t == Scalar::F64) {
        std::normal_distribution<double> nd(3.0, 2.0);
        const double special[] = {NAN,    INFINITY, -INFINITY, -0.0,   0.0,
                                  1e-310, 5e-324,   1e30,      -1e-30, 1e8 + 0.5};
        for (size_t i = 0; i < n; ++i) {
            const double x = i < std::size(special) ? special[i] : nd(rng);
            if (t == Scalar::F32) {
                const float f = float(x);
                std::memcpy(b.data() + i * 4, &f, 4);
            } else {
                std::memcpy(b.data() + i * 8, &x, 8);
            }
        }
    } else {
        for (auto& x : b)
            x = uint8_t(rng());
        if (t == Scalar::Bool)
            for (auto& x : b)
                x &= 1;
    }
    return b;
}

} // namespace

class TestCompute : public QObject
{
    Q_OBJECT
private slots:
    void castsMatchPyTorch_data()
    {
        QTest::addColumn<QString>("from");
        QTest::addColumn<QString>("to");
        for (const char* pair : {"f16:f16_to_f32", "bf16:bf16_to_f32", "f32:f32_to_f16", "f32:f32_to_bf16",
                                 "f64:f64_to_f32", "f64:f64_to_f16", "f64:f64_to_bf16"}) {
            const QStringList p = QString(pair).split(':');
            QTest::newRow(pair) << p[0] << p[1];
        }
    }
    void castsMatchPyTorch()
    {
        QFETCH(QString, from);
        QFETCH(QString, to);
        const auto f = torch::TorchFile::open(testutil::dataDir() + "/casts/casts.pt");
        const torch::Tensor* src = f->tensor(from.toStdString());
        const torch::Tensor* want = f->tensor(to.toStdString());
        QVERIFY(src && want);
        const auto in = testutil::contiguousBytes(*f, *src), expect = testutil::contiguousBytes(*f, *want);
        std::vector<uint8_t> out(expect.size());
        gpu::cpuBackend().cast(*ops::scalarOf(src->dtype), *ops::scalarOf(want->dtype), in.data(), out.data(),
                               src->numel());
        size_t bad = 0;
        for (size_t i = 0; i < out.size(); ++i)
            bad += out[i] != expect[i];
        QCOMPARE(bad, size_t(0));
    }

    void float8DecodingMatchesPyTorch()
    {
        const auto f = torch::TorchFile::open(testutil::dataDir() + "/casts/casts.pt");
        for (const char* name :
             {"float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz", "float8_e8m0fnu"}) {
            const torch::Tensor* src = f->tensor(name);
            const torch::Tensor* want = f->tensor(std::string(name) + "_to_f32");
            QVERIFY(src && want);
            const auto in = testutil::contiguousBytes(*f, *src),
                       expect = testutil::contiguousBytes(*f, *want);
            for (size_t i = 0; i < 256; ++i) {
                float e;
                std::memcpy(&e, expect.data() + i * 4, 4);
                const double got = gpu::toDouble(*ops::scalarOf(src->dtype), in.data() + i);
                QVERIFY2((std::isnan(e) && std::isnan(got)) || float(got) == e,
                         (std::string(name) + " byte " + std::to_string(i)).c_str());
            }
        }
    }

    void statsAgainstNaive_data()
    {
        QTest::addColumn<int>("type");
        QTest::addColumn<int>("n");
        const std::pair<const char*, Scalar> types[] = {{"f64", Scalar::F64},
                                                        {"f32", Scalar::F32},
                                                        {"f16", Scalar::F16},
                                                        {"bf16", Scalar::BF16},
                                                        {"f8e4m3fn", Scalar::F8E4M3FN},
                                                        {"f8e5m2", Scalar::F8E5M2},
                                                        {"f8e4m3fnuz", Scalar::F8E4M3FNUZ},
                                                        {"f8e5m2fnuz", Scalar::F8E5M2FNUZ},
                                                        {"f8e8m0", Scalar::F8E8M0},
                                                        {"i64", Scalar::I64},
                                                        {"i32", Scalar::I32},
                                                        {"i16", Scalar::I16},
                                                        {"i8", Scalar::I8},
                                                        {"u8", Scalar::U8},
                                                        {"u16", Scalar::U16},
                                                        {"u32", Scalar::U32},
                                                        {"u64", Scalar::U64},
                                                        {"bool", Scalar::Bool}};
        for (const auto& [name, t] : types)
            for (int n : {0, 1, 7, 4096, 100003})
                QTest::newRow((std::string(name) + "/" + std::to_string(n)).c_str()) << int(t) << n;
    }
    void statsAgainstNaive()
    {
        QFETCH(int, type);
        QFETCH(int, n);
        const Scalar t = Scalar(type);
        const auto b = sample(t, size_t(n), uint32_t(type * 7 + n));
        const gpu::Stats s = gpu::cpuBackend().stats(view(b, t), t);
        const Naive r = naive(b, t);
        QCOMPARE(s.count, r.count);
        QCOMPARE(s.nans, r.nans);
        QCOMPARE(s.infs, r.infs);
        QCOMPARE(s.zeros, r.zeros);
        if (s.valid() == 0) return;
        QVERIFY(close(s.min, r.min, 0));
        QVERIFY(close(s.max, r.max, 0));
        QVERIFY(close(s.absmax, r.absmax, 0));
        if (r.infs == 0) {
            QVERIFY2(close(s.mean, r.mean),
                     (std::to_string(s.mean) + " vs " + std::to_string(double(r.mean))).c_str());
            if (s.valid() > 1) QVERIFY(close(s.std() * s.std(), r.var, 1e-8));
            QVERIFY(close(s.l2() * s.l2(), r.sumsq, 1e-8));
        }
    }

    void statsStayStableUnderLargeOffsets()
    {
        // 1e9 + tiny noise: a naive sum-of-squares in fp64 loses the variance entirely.
        std::vector<double> v(1 << 20);
        std::mt19937_64 rng(5);
        std::uniform_real_distribution<double> u(-1e-3, 1e-3);
        for (auto& x : v)
            x = 1e9 + u(rng);
        const auto b = bytesOf(v);
        const gpu::Stats s = gpu::cpuBackend().stats(view(b, Scalar::F64), Scalar::F64);
        const Naive r = naive(b, Scalar::F64);
        QVERIFY(close(s.std() * s.std(), r.var, 1e-6));
    }

    void stridedEqualsGathered()
    {
        std::vector<float> base(12 * 7);
        for (size_t i = 0; i < base.size(); ++i)
            base[i] = float(i) * 0.5f - 7;
        const auto b = bytesOf(base);
        gpu::StridedView tv{b.data(), 4, {7, 6}, {1, 14}, 1}; // a transposed, sliced view
        std::vector<uint8_t> g(7 * 6 * 4);
        gpu::cpuBackend().gather(tv, 0, 42, g.data());
        const auto a = gpu::cpuBackend().stats(tv, Scalar::F32),
                   c = gpu::cpuBackend().stats(view(g, Scalar::F32), Scalar::F32);
        QCOMPARE(a.count, c.count);
        QCOMPARE(a.mean, c.mean);
        QCOMPARE(a.min, c.min);
        QCOMPARE(a.max, c.max);
    }

    void histogram()
    {
        std::vector<float> v = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, NAN, INFINITY};
        const auto b = bytesOf(v);
        const auto h = gpu::cpuBackend().histogram(view(b, Scalar::F32), Scalar::F32, 5, false, 0, 0);
        QCOMPARE(h.lo, 0.0);
        QCOMPARE(h.hi, 9.0);
        QCOMPARE(h.nonFinite, uint64_t(2));
        QCOMPARE(h.bins, (std::vector<uint64_t>{2, 2, 2, 2, 2}));
        std::vector<float> w = {0.001f, 0.01f, 0.1f, 1, 10, 100, 0, -1000};
        const auto bw = bytesOf(w);
        const auto hl = gpu::cpuBackend().histogram(view(bw, Scalar::F32), Scalar::F32, 6, true, 0, 0);
        QCOMPARE(hl.zeros, uint64_t(1));
        QVERIFY(std::fabs(hl.lo + 3) < 1e-6 && std::fabs(hl.hi - 3) < 1e-6);
        uint64_t sum = 0;
        for (auto c : hl.bins)
            sum += c;
        QCOMPARE(sum, uint64_t(7));
    }

    void diffAgainstNaive()
    {
        std::mt19937_64 rng(9);
        std::normal_distribution<float> nd;
        std::vector<float> a(300001), c(a.size());
        for (size_t i = 0; i < a.size(); ++i)
            a[i] = nd(rng), c[i] = i % 3 ? a[i] : a[i] + 1e-3f;
        a[5] = NAN, c[5] = NAN; // both NaN: skipped, not a mismatch
        c[7] = NAN;             // one NaN: a mismatch
        const auto ba = bytesOf(a), bc = bytesOf(c);
        const auto d =
            gpu::cpuBackend().diff(view(ba, Scalar::F32), Scalar::F32, view(bc, Scalar::F32), Scalar::F32);
        long double sd = 0, sa = 0, sc = 0, dot = 0, mx = 0;
        uint64_t eq = 0;
        for (size_t i = 0; i < a.size(); ++i) {
            eq += std::memcmp(&a[i], &c[i], 4) == 0;
            if (std::isnan(a[i]) || std::isnan(c[i])) continue;
            const long double x = a[i], y = c[i];
            sd += (x - y) * (x - y), sa += x * x, sc += y * y, dot += x * y,
                mx = std::max(mx, std::fabs(x - y));
        }
        QCOMPARE(d.count, uint64_t(a.size()));
        QCOMPARE(d.bitwiseEqual, eq);
        QCOMPARE(d.nanMismatch, uint64_t(1));
        QVERIFY(close(d.maxAbsDiff, mx, 0));
        QVERIFY(close(d.l2Diff(), std::sqrt(sd), 1e-9));
        QVERIFY(close(d.cosine(), dot / std::sqrt(sa * sc), 1e-12));
        QVERIFY(close(d.relL2(), std::sqrt(sd / sa), 1e-9));
    }

    // The fused same-type kernels (AVX2 where the CPU has it, else the portable blocks): every
    // float type, lengths that end mid-vector and mid-block, blocks with NaN and infinities
    // (recomputed by the reference loop), and a misaligned start (the reference loop alone),
    // against a long double reference written from the definition.
    void diffFastPathsMatchReference_data()
    {
        QTest::addColumn<int>("type");
        QTest::addColumn<bool>("special");
        QTest::addColumn<int>("misalign");
        for (Scalar t : {Scalar::F64, Scalar::F32, Scalar::F16, Scalar::BF16})
            for (bool special : {false, true})
                for (int mis : {0, 1}) {
                    const std::string name = std::to_string(int(t)) + (special ? " special" : " finite") +
                                             (mis ? " misaligned" : "");
                    QTest::newRow(name.c_str()) << int(t) << special << mis;
                }
    }

    void diffFastPathsMatchReference()
    {
        QFETCH(int, type);
        QFETCH(bool, special);
        QFETCH(int, misalign);
        const auto t = Scalar(type);
        const uint32_t es = gpu::scalarSize(t);
        const size_t n = 3 * 2048 + 16 * 5 + 7;
        std::mt19937_64 rng(uint64_t(type) * 7 + special);
        std::normal_distribution<double> nd;
        std::vector<double> x(n), y(n);
        for (size_t i = 0; i < n; ++i)
            x[i] = nd(rng), y[i] = i % 3 ? x[i] + 1e-2 * nd(rng) : x[i];
        if (special) {
            x[100] = y[100] = NAN;           // both NaN: skipped
            x[2100] = NAN;                   // one NaN: a mismatch
            x[4200] = y[4200] = INFINITY;    // inf - inf: NaN difference
            y[4300] = -INFINITY;             // an infinite difference
            x[n - 2] = -0.0, y[n - 2] = 0.0; // equal values, different bits, in the tail
        }
        // Encoded through the backend's own cast, with `misalign` spare bytes in front.
        std::vector<uint8_t> ba(n * es + 1), bb(n * es + 1);
        gpu::castElements(Scalar::F64, t, reinterpret_cast<const uint8_t*>(x.data()), ba.data() + misalign,
                          n);
        gpu::castElements(Scalar::F64, t, reinterpret_cast<const uint8_t*>(y.data()), bb.data() + misalign,
                          n);
        const gpu::StridedView va{ba.data() + misalign, es, {int64_t(n)}, {1}, 0},
            vb{bb.data() + misalign, es, {int64_t(n)}, {1}, 0};
        const auto d = gpu::cpuBackend().diff(va, t, vb, t);
        uint64_t eq = 0, nanMismatch = 0;
        long double sd = 0, sa = 0, sb = 0, dot = 0;
        double mx = 0;
        for (size_t i = 0; i < n; ++i) {
            const uint8_t *p = va.base + i * es, *q = vb.base + i * es;
            eq += std::memcmp(p, q, es) == 0;
            const double u = gpu::toDouble(t, p), v = gpu::toDouble(t, q);
            if (std::isnan(u) || std::isnan(v)) {
                nanMismatch += std::isnan(u) != std::isnan(v);
                continue;
            }
            const double dd = u - v;
            mx = std::max(mx, std::fabs(dd));
            sd += (long double)dd * dd, sa += (long double)u * u, sb += (long double)v * v,
                dot += (long double)u * v;
        }
        QCOMPARE(d.count, uint64_t(n));
        QCOMPARE(d.bitwiseEqual, eq);
        QCOMPARE(d.nanMismatch, nanMismatch);
        QCOMPARE(d.maxAbsDiff, mx);
        QVERIFY(close(d.sumSqDiff, sd, 1e-12));
        QVERIFY(close(d.sumSqA, sa, 1e-12));
        QVERIFY(close(d.sumSqB, sb, 1e-12));
        QVERIFY(close(d.dot, dot, 1e-12));
        if (special) QVERIFY(std::isnan(d.sumSqDiff) || std::isinf(d.sumSqDiff));
    }

    // castElements throws for an output type it cannot write; in a worker thread of parallelFor
    // that used to end the process (std::terminate) instead of reaching the caller.
    void workerExceptionsReachTheCaller()
    {
        const uint64_t n = 8u << 20; // several parts of parallelFor's 1 Mi-element minimum
        std::vector<uint8_t> src(n * 4), dst(n * 4);
        QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                                 gpu::cpuBackend().cast(Scalar::F32, Scalar::I32, src.data(), dst.data(), n));
        // the backend is still usable afterwards: 1.5f in every element comes out as bf16 0x3FC0
        // in every element, first and last (every part of the parallel loop ran)
        const float v = 1.5f;
        for (uint64_t i = 0; i < n; ++i)
            std::memcpy(src.data() + i * 4, &v, 4);
        std::fill(dst.begin(), dst.end(), uint8_t(0xAB));
        gpu::cpuBackend().cast(Scalar::F32, Scalar::BF16, src.data(), dst.data(), n);
        for (const uint64_t i : {uint64_t(0), n / 2, n - 1}) {
            uint16_t w = 0;
            std::memcpy(&w, dst.data() + i * 2, 2);
            QCOMPARE(w, uint16_t(0x3FC0));
        }
        QCOMPARE(dst[n * 2], uint8_t(0xAB)); // and nothing past the n bf16 elements
    }

    // The fallback used to print to stderr from library code; the interface promises a
    // warnings channel, and an operation's result carries what comes through it.
    void cudaFallbackWarnsThroughTheChannel()
    {
        auto backend = gpu::withCpuFallback(std::make_shared<FailingBackend>());
        const auto b = bytesOf(std::vector<float>{1, 2, 3, 4});
        gpu::Stats s;
        QCOMPARE(stderrOf([&] { s = backend->stats(view(b, Scalar::F32), Scalar::F32); }), std::string());
        QCOMPARE(s.count, uint64_t(4));
        QCOMPARE(s.mean, 2.5);
        QCOMPARE(backend->name(), std::string("cpu"));
        const auto warnings = backend->takeWarnings();
        QCOMPARE(warnings.size(), size_t(1));
        QVERIFY2(warnings[0].find("device lost") != std::string::npos &&
                     warnings[0].find("CPU") != std::string::npos,
                 warnings[0].c_str());
        QVERIFY(backend->takeWarnings().empty()); // said once

        auto fresh = gpu::withCpuFallback(std::make_shared<FailingBackend>());
        ops::AnalyzeOptions o;
        o.source.backend = fresh;
        const auto doc =
            ops::computeStats(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt", o, *fresh, {}, {});
        auto deviceLost = [](const std::vector<std::string>& list) {
            return std::count_if(list.begin(), list.end(),
                                 [](const auto& w) { return w.find("device lost") != std::string::npos; });
        };
        QCOMPARE(deviceLost(doc.warnings), 1);
        ops::DiffOptions d;
        d.a = d.b = o.source;
        const auto diff = ops::computeDiff(testutil::dataDir() + "/torch/torch-2.x/state_dict.pt",
                                           testutil::dataDir() + "/torch/torch-1.13/state_dict.pt", d,
                                           *gpu::withCpuFallback(std::make_shared<FailingBackend>()), {}, {});
        QCOMPARE(deviceLost(diff.warnings), 1);
    }

    // --histogram was skipped for every tensor not lying contiguous in a mapped file: all of a
    // DeepSpeed checkpoint's. Chunked, it must give the bins one histogram over the whole
    // tensor gives.
    void histogramOfConsolidatedTensors()
    {
        const std::string path = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        for (const bool log10 : {false, true}) {
            ops::AnalyzeOptions o;
            o.histogramBins = 7;
            o.histogramLog10 = log10;
            const auto doc = ops::computeStats(path, o, gpu::cpuBackend(), {}, {});
            const ops::TensorSet set = ops::anyTensors(path, o.source);
            size_t checked = 0, indirect = 0;
            for (const auto& t : doc.tensors) {
                if (!t.aliasOf.empty()) continue;
                QVERIFY2(t.histogram, t.name.c_str());
                const auto it =
                    std::find_if(set.tensors.begin(), set.tensors.end(),
                                 [&](const ops::SourceTensor& s) { return s.tensor.name == t.name; });
                QVERIFY(it != set.tensors.end());
                indirect += !it->direct;
                std::vector<uint8_t> whole(it->tensor.nbytes);
                it->tensor.fill(0, whole.size(), whole.data());
                const Scalar type = *ops::scalarOf(it->tensor.dtype);
                const auto h = gpu::cpuBackend().histogram(view(whole, type), type, 7, log10, 0, 0);
                const auto& got = *t.histogram;
                QCOMPARE(got.bins, h.bins);
                QCOMPARE(got.lo, h.lo);
                QCOMPARE(got.hi, h.hi);
                QCOMPARE(got.zeros, h.zeros);
                QCOMPARE(got.nonFinite, h.nonFinite);
                ++checked;
            }
            QVERIFY(checked > 5);
            QVERIFY(indirect > 5); // most cross partitions or are cast: read chunk by chunk
        }

        // Parts binned over the merged range add up to the whole, whatever the cut.
        std::mt19937 rng(7);
        std::normal_distribution<float> normal(0.f, 3.f);
        std::vector<float> x(10000);
        for (auto& v : x)
            v = normal(rng);
        x[10] = 0, x[20] = INFINITY, x[30] = NAN;
        const auto all = bytesOf(x);
        for (const bool log10 : {false, true}) {
            const auto whole =
                gpu::cpuBackend().histogram(view(all, Scalar::F32), Scalar::F32, 9, log10, 0, 0);
            const std::vector<size_t> cuts{0, 17, 5000, 9999, 10000};
            gpu::ValueRange range;
            for (size_t i = 0; i + 1 < cuts.size(); ++i)
                range.merge(
                    gpu::valueRange({all.data() + cuts[i] * 4, 4, {int64_t(cuts[i + 1] - cuts[i])}, {1}, 0},
                                    Scalar::F32, log10));
            const auto [lo, hi] = range.bounds();
            QCOMPARE(lo, whole.lo);
            QCOMPARE(hi, whole.hi);
            std::vector<uint64_t> bins(9, 0);
            for (size_t i = 0; i + 1 < cuts.size(); ++i) {
                const auto part = gpu::cpuBackend().histogram(
                    {all.data() + cuts[i] * 4, 4, {int64_t(cuts[i + 1] - cuts[i])}, {1}, 0}, Scalar::F32, 9,
                    log10, lo, hi);
                for (size_t b = 0; b < bins.size(); ++b)
                    bins[b] += part.bins[b];
            }
            QCOMPARE(bins, whole.bins);
        }
    }

    // The consolidation reader gathered on the CPU whatever backend the job was given. It now
    // asks the job's backend for every step the backend supports, and runs the rest on the CPU,
    // with the same bytes either way.
    void readerRunsOnTheJobsBackend()
    {
        const std::string path = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        ops::SourceOptions o;
        o.dtype = torch::DType::BFloat16; // masters are fp32: every tensor is cast
        const auto reference = filled(ops::anyTensors(path, o));
        for (const bool claimsCasts : {true, false}) {
            auto counting = std::make_shared<CountingBackend>(claimsCasts);
            o.backend = counting;
            QVERIFY(filled(ops::anyTensors(path, o)) == reference);
            QVERIFY(counting->gathers > 5);
            if (claimsCasts)
                QVERIFY(counting->casts > 5);
            else
                QCOMPARE(counting->casts.load(), 0);
        }
    }

    void supportsSaysWhatRunsWhere()
    {
        gpu::ComputeBackend& cpu = gpu::cpuBackend();
        for (const auto op : {gpu::Op::Gather, gpu::Op::Stats, gpu::Op::Histogram, gpu::Op::Diff})
            for (const auto t : {Scalar::F32, Scalar::BF16, Scalar::I64, Scalar::F8E4M3FN, Scalar::Bool})
                QVERIFY(cpu.supports(op, t));
        for (const auto t : {Scalar::F64, Scalar::F32, Scalar::F16, Scalar::BF16})
            QVERIFY(cpu.supports(gpu::Op::Cast, t));
        for (const auto t : {Scalar::I64, Scalar::F8E5M2, Scalar::U8, Scalar::Bool})
            QVERIFY(!cpu.supports(gpu::Op::Cast, t));
        // The fallback wrapper answers for the device it currently runs on.
        auto wrapped = gpu::withCpuFallback(std::make_shared<CountingBackend>(false));
        QVERIFY(!wrapped->supports(gpu::Op::Cast, Scalar::F32));
    }

    void backendChoice()
    {
        std::string reason;
        auto cpu = gpu::makeBackend(gpu::Device::Cpu, &reason);
        QCOMPARE(cpu->name(), std::string("cpu"));
        QVERIFY(reason.rfind("cpu:", 0) == 0);
        auto any = gpu::makeBackend(gpu::Device::Auto, &reason);
        QVERIFY(!reason.empty());
        // Plain words: a machine with no driver is not told its driver is too old.
        QVERIFY2(reason.find("insufficient") == std::string::npos, reason.c_str());
        if (any->name() == "cpu")
            QVERIFY_THROWS_EXCEPTION(gpu::BackendError, gpu::makeBackend(gpu::Device::Cuda, &reason));
    }
};

QTEST_APPLESS_MAIN(TestCompute)
#include "tst_compute.moc"
