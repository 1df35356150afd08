// The GPU path without a GPU: the shared kernel source compiled for the host (what gpu/cuda
// compiles with nvcc) runs real jobs, the drift bugs the review found between the CPU and CUDA
// copies stay fixed, and the self-check catches a device's wrong result, warns once and makes
// the job's output the CPU's, byte for byte.
#include "cast.h"
#include "compute_backend.h"
#include "kernels/host_backend.h"
#include "ops/analyze.h"
#include "ops/consolidate.h"
#include "testutil.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>
#include <atomic>
#include <cmath>
#include <cstring>
#include <map>
#include <numeric>

using namespace ckpt;
using gpu::Scalar;

namespace {

template <typename T> std::vector<uint8_t> bytesOf(const std::vector<T>& v)
{
    std::vector<uint8_t> b(v.size() * sizeof(T));
    std::memcpy(b.data(), v.data(), b.size());
    return b;
}

gpu::StridedView view(const std::vector<uint8_t>& b, Scalar t)
{
    const uint32_t es = gpu::scalarSize(t);
    return {b.data(), es, {int64_t(b.size() / es)}, {1}, 0};
}

// A device that answers through the shared kernels but gets call number `badCall` of one
// operation wrong, in the way a broken kernel would: one element in the middle of a cast's
// output, a mean, a count, a bin.
class WrongOnce final : public gpu::ComputeBackend
{
public:
    WrongOnce(gpu::Op op, int badCall) : m_op(op), m_bad(badCall), m_dut(gpu::makeHostKernelBackend(1u << 20))
    {
    }

    std::string name() const override { return "cuda"; }
    std::string device() const override { return "a device with a wrong kernel"; }
    bool supports(gpu::Op op, Scalar t) const override { return m_dut->supports(op, t); }
    void gather(const gpu::StridedView& v, uint64_t f, uint64_t n, uint8_t* d) override
    {
        m_dut->gather(v, f, n, d);
        if (hit(gpu::Op::Gather) && n) d[n / 2 * v.elementSize] ^= 1;
    }
    void cast(Scalar a, Scalar b, const uint8_t* s, uint8_t* d, uint64_t n) override
    {
        m_dut->cast(a, b, s, d, n);
        if (hit(gpu::Op::Cast) && n) d[n / 2 * gpu::scalarSize(b)] ^= 1;
    }
    gpu::Stats stats(const gpu::StridedView& v, Scalar t) override
    {
        auto s = m_dut->stats(v, t);
        if (hit(gpu::Op::Stats)) s.mean += 1e-6 * (1 + std::fabs(s.mean));
        return s;
    }
    gpu::Histogram histogram(const gpu::StridedView& v, Scalar t, int bins, bool lg, double lo,
                             double hi) override
    {
        auto h = m_dut->histogram(v, t, bins, lg, lo, hi);
        if (hit(gpu::Op::Histogram)) ++h.bins[0];
        return h;
    }
    gpu::DiffStats diff(const gpu::StridedView& a, Scalar ta, const gpu::StridedView& b, Scalar tb) override
    {
        auto d = m_dut->diff(a, ta, b, tb);
        if (hit(gpu::Op::Diff)) ++d.bitwiseEqual;
        return d;
    }

    std::atomic<int> calls{0};

private:
    bool hit(gpu::Op op)
    {
        if (op != m_op) return false;
        return calls.fetch_add(1) == m_bad;
    }

    gpu::Op m_op;
    int m_bad;
    std::shared_ptr<gpu::ComputeBackend> m_dut;
};

// What a device-made backend is in the product: self-checked, falling back on device errors.
std::shared_ptr<gpu::ComputeBackend> asDevice(std::shared_ptr<gpu::ComputeBackend> device, uint64_t every)
{
    return gpu::withCpuFallback(gpu::selfChecked(std::move(device), every));
}

// Every file below `dir`, by relative path, with its bytes.
std::map<QString, QByteArray> filesOf(const QString& dir)
{
    std::map<QString, QByteArray> out;
    QDirIterator it(dir, QDir::Files | QDir::Hidden, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString p = it.next();
        QFile f(p);
        if (f.open(QIODevice::ReadOnly)) out[QDir(dir).relativeFilePath(p)] = f.readAll();
    }
    return out;
}

size_t countContaining(const std::vector<std::string>& list, const char* what)
{
    return size_t(std::count_if(list.begin(), list.end(),
                                [&](const std::string& w) { return w.find(what) != std::string::npos; }));
}

} // namespace

class TestGpuKernels : public QObject
{
    Q_OBJECT

private slots:
    // The review's item 1: two equal infinities are equal, so a tensor whose l2 is +inf on both
    // sides agrees; a real difference still does not.
    void contractTreatsEqualInfinitiesAsEqual()
    {
        gpu::Stats a;
        a.count = 3, a.infs = 1, a.min = 1, a.max = INFINITY, a.absmax = INFINITY;
        a.mean = INFINITY, a.m2 = NAN, a.sumsq = INFINITY;
        gpu::Stats b = a;
        std::string why;
        QVERIFY2(gpu::agree(a, b, &why), why.c_str());
        b.sumsq = 4;
        QVERIFY(!gpu::agree(a, b, &why));
        QVERIFY(why.find("l2") != std::string::npos);
    }

    // A mean that is 0 on the CPU (±x data) and 1e-17 on a device is rounding against the data's
    // size, not a fault; a mean off by a part in a million of it is one.
    void contractMeasuresAMeanNearZeroByTheData()
    {
        gpu::Stats cpu;
        cpu.count = 4, cpu.min = -3, cpu.max = 3, cpu.absmax = 3, cpu.mean = 0, cpu.m2 = 36, cpu.sumsq = 36;
        gpu::Stats dev = cpu;
        dev.mean = 1e-17;
        std::string why;
        QVERIFY2(gpu::agree(dev, cpu, &why), why.c_str());
        dev.mean = 3e-6;
        QVERIFY(!gpu::agree(dev, cpu, &why));
    }

    // A split export casts on the CPU whatever device it is given: a redo could not take back
    // the units this process committed before a wrong result was caught.
    void splitExportCastsOnTheCpu()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        QTemporaryDir tmp;
        ops::ConsolidateOptions o;
        o.dtype = torch::DType::BFloat16;
        o.shard = ops::parseShard("0/1");
        auto wrong = std::make_shared<WrongOnce>(gpu::Op::Cast, 0);
        o.backend = asDevice(wrong, 16);
        const auto r = ops::consolidate(ck, (tmp.path() + "/out").toStdString(), o, {}, {});
        QCOMPARE(wrong->calls.load(), 0);
        QVERIFY(!r.warnings.empty());
        QVERIFY2(r.warnings.front().find("casts on the CPU") != std::string::npos,
                 r.warnings.front().c_str());
    }

    // The review's item 2: std of a part holding an infinity was NaN on the CPU and 0 in CUDA;
    // and on the CPU two parts each holding +inf merged to a NaN mean. One definition now (as
    // torch: mean +inf, std NaN; both signs: mean NaN), on the oracle and the shared kernels.
    void infinitiesFollowOneDefinition()
    {
        const auto kernels = gpu::makeHostKernelBackend(4096); // parts of 1024 floats
        std::vector<float> x(10000, 1.5f);
        x[5] = 2.5f;
        x[100] = INFINITY, x[5000] = INFINITY; // in different 4096-element blocks of the oracle
        const auto b = bytesOf(x);
        for (gpu::ComputeBackend* backend : {&gpu::cpuBackend(), kernels.get()}) {
            const gpu::Stats s = backend->stats(view(b, Scalar::F32), Scalar::F32);
            QCOMPARE(s.infs, uint64_t(2));
            QVERIFY2(std::isinf(s.mean) && s.mean > 0, backend->name().c_str());
            QVERIFY(std::isnan(s.std()));
            QVERIFY(std::isinf(s.l2()));
            QCOMPARE(s.max, double(INFINITY));
        }
        x[7000] = -INFINITY;
        const auto c = bytesOf(x);
        for (gpu::ComputeBackend* backend : {&gpu::cpuBackend(), kernels.get()}) {
            const gpu::Stats s = backend->stats(view(c, Scalar::F32), Scalar::F32);
            QVERIFY(std::isnan(s.mean));
            QVERIFY(std::isnan(s.std()));
            QCOMPARE(s.min, -double(INFINITY));
        }
    }

    // The review's item 3: NaN sign and payload through the half conversions, which NVIDIA's
    // intrinsics canonicalise. The shared bit-level functions keep them, as x86's F16C and
    // torch's .to() do, on the oracle and the shared kernels alike.
    void nanPayloadsSurviveCasts()
    {
        const auto kernels = gpu::makeHostKernelBackend();
        const std::vector<uint16_t> half{0xFE55, 0x7E01};
        const std::vector<uint32_t> wantFloat{0xFFCAA000u, 0x7FC02000u};
        const std::vector<uint32_t> floats{0xFFA00001u, 0x7FC00001u};
        const std::vector<uint16_t> wantHalf{0xFF00, 0x7E00};
        const std::vector<uint16_t> wantBf16{0xFFFF, 0xFFFF}; // torch's vectorised .to(): every NaN 0xFFFF
        for (gpu::ComputeBackend* backend : {&gpu::cpuBackend(), kernels.get()}) {
            std::vector<uint32_t> f(2);
            backend->cast(Scalar::F16, Scalar::F32, reinterpret_cast<const uint8_t*>(half.data()),
                          reinterpret_cast<uint8_t*>(f.data()), 2);
            QCOMPARE(f, wantFloat);
            std::vector<uint16_t> h(2), bf(2);
            backend->cast(Scalar::F32, Scalar::F16, reinterpret_cast<const uint8_t*>(floats.data()),
                          reinterpret_cast<uint8_t*>(h.data()), 2);
            QCOMPARE(h, wantHalf);
            backend->cast(Scalar::F32, Scalar::BF16, reinterpret_cast<const uint8_t*>(floats.data()),
                          reinterpret_cast<uint8_t*>(bf.data()), 2);
            QCOMPARE(bf, wantBf16);
        }
    }

    // Found by the parity suite: a histogram of one value that lo + 1 cannot move (|x| >= 2^53)
    // had hi == lo and binned through a NaN index. Its one element is in a bin now, everywhere.
    void oneHugeValueHasABin()
    {
        const auto kernels = gpu::makeHostKernelBackend();
        const auto b = bytesOf(std::vector<int64_t>{int64_t(1) << 62});
        for (gpu::ComputeBackend* backend : {&gpu::cpuBackend(), kernels.get()}) {
            const auto h = backend->histogram(view(b, Scalar::I64), Scalar::I64, 8, false, 0, 0);
            QVERIFY(h.lo < h.hi);
            QCOMPARE(std::accumulate(h.bins.begin(), h.bins.end(), uint64_t(0)), uint64_t(1));
        }
    }

    // The self-check, operation by operation: a wrong result in a checked call is one
    // SelfCheckFailed naming the operation; a cast's or gather's tail is checked on every call.
    void selfCheckCatchesEachOperation()
    {
        std::vector<float> x(50000);
        for (size_t i = 0; i < x.size(); ++i)
            x[i] = float(i % 97) * 0.25f - 3;
        const auto b = bytesOf(x);
        const auto v = view(b, Scalar::F32);
        std::vector<uint8_t> out(x.size() * 4); // room for a gather of the floats
        const auto expectCaught = [&](gpu::Op op, const char* name, auto call) {
            auto device = std::make_shared<WrongOnce>(op, 0);
            auto checked = gpu::selfChecked(device, 16);
            try {
                call(*checked);
                QFAIL(name);
            } catch (const gpu::SelfCheckFailed& e) {
                QVERIFY2(std::string(e.what()).find(std::string("wrong ") + name) != std::string::npos,
                         e.what());
                QVERIFY(std::string(e.what()).find("CPU's recomputation caught") != std::string::npos);
            }
        };
        expectCaught(gpu::Op::Cast, "cast", [&](gpu::ComputeBackend& c) {
            c.cast(Scalar::F32, Scalar::BF16, b.data(), out.data(), x.size());
        });
        expectCaught(gpu::Op::Gather, "gather",
                     [&](gpu::ComputeBackend& c) { c.gather(v, 0, x.size(), out.data()); });
        expectCaught(gpu::Op::Stats, "stats", [&](gpu::ComputeBackend& c) { c.stats(v, Scalar::F32); });
        expectCaught(gpu::Op::Histogram, "histogram",
                     [&](gpu::ComputeBackend& c) { c.histogram(v, Scalar::F32, 10, false, 0, 0); });
        expectCaught(gpu::Op::Diff, "diff",
                     [&](gpu::ComputeBackend& c) { c.diff(v, Scalar::F32, v, Scalar::F32); });

        // Sampling: call 3 of 16 is not recomputed in full, but a cast's last elements always are.
        auto quiet = std::make_shared<WrongOnce>(gpu::Op::Stats, 3);
        auto sampled = gpu::selfChecked(quiet, 16);
        for (int i = 0; i < 5; ++i)
            sampled->stats(v, Scalar::F32);
        QCOMPARE(quiet->calls.load(), 5);
        auto tailOnly = std::make_shared<WrongOnce>(gpu::Op::Cast, 3);
        auto checked = gpu::selfChecked(tailOnly, 16);
        for (int i = 0; i < 3; ++i)
            checked->cast(Scalar::F32, Scalar::BF16, b.data(), out.data(), 5000); // middle = 2500 > the tail
        QVERIFY_THROWS_EXCEPTION(gpu::SelfCheckFailed,
                                 checked->cast(Scalar::F32, Scalar::BF16, b.data(), out.data(), 3000));
    }

    // An export whose device casts one chunk wrong: the self-check catches it, the whole export
    // is redone on the CPU, one warning says so, and the files are the CPU's byte for byte. With
    // a device that is right, the shared kernels' export is the CPU's too.
    void wrongDeviceExportIsRedoneOnTheCpu()
    {
        const std::string ck = testutil::dataDir() + "/deepspeed/zero2_bf16_w2";
        QTemporaryDir tmp;
        ops::ConsolidateOptions o;
        o.dtype = torch::DType::BFloat16; // fp32 masters: every tensor is cast
        const QString cpuOut = tmp.path() + "/cpu", okOut = tmp.path() + "/ok", badOut = tmp.path() + "/bad";
        const auto cpu = ops::consolidate(ck, cpuOut.toStdString(), o, {}, {});
        QVERIFY(cpu.tensors > 5);

        o.backend = asDevice(gpu::makeHostKernelBackend(1u << 20), 1);
        const auto ok = ops::consolidate(ck, okOut.toStdString(), o, {}, {});
        QVERIFY(ok.warnings == cpu.warnings);
        QVERIFY(filesOf(okOut) == filesOf(cpuOut));

        auto wrong = std::make_shared<WrongOnce>(gpu::Op::Cast, 0);
        o.backend = asDevice(wrong, 16);
        const auto redone = ops::consolidate(ck, badOut.toStdString(), o, {}, {});
        QVERIFY(wrong->calls.load() > 0);
        QCOMPARE(countContaining(redone.warnings, "wrong cast"), size_t(1));
        QVERIFY2(redone.warnings.front().find("the job was redone on the CPU") != std::string::npos,
                 redone.warnings.front().c_str());
        const auto want = filesOf(cpuOut);
        QVERIFY(!want.empty());
        QVERIFY(filesOf(badOut) == want); // nothing of the first attempt left beside them
        QCOMPARE(redone.files.size(), cpu.files.size());
    }

    // Statistics and a comparison on a wrong device: the CPU's numbers, one warning.
    void wrongDeviceStatsAndDiffAreTheCpus()
    {
        const std::string a = testutil::dataDir() + "/torch/torch-2.x/state_dict.pt";
        const std::string b = testutil::dataDir() + "/torch/torch-1.13/state_dict.pt";
        ops::AnalyzeOptions o;
        o.histogramBins = 8;
        const auto cpu = ops::computeStats(a, o, gpu::cpuBackend(), {}, {});
        auto wrong = asDevice(std::make_shared<WrongOnce>(gpu::Op::Stats, 0), 16);
        const auto got = ops::computeStats(a, o, *wrong, {}, {});
        QCOMPARE(countContaining(got.warnings, "wrong stats"), size_t(1));
        QCOMPARE(got.tensors.size(), cpu.tensors.size());
        for (size_t i = 0; i < cpu.tensors.size(); ++i) {
            QCOMPARE(got.tensors[i].stats.count, cpu.tensors[i].stats.count);
            QVERIFY(got.tensors[i].stats.mean == cpu.tensors[i].stats.mean ||
                    (std::isnan(got.tensors[i].stats.mean) && std::isnan(cpu.tensors[i].stats.mean)));
        }
        QVERIFY(ops::toJson(got).dump() != std::string()); // a whole document

        ops::DiffOptions d;
        const auto cpuDiff = ops::computeDiff(a, b, d, gpu::cpuBackend(), {}, {});
        auto wrongDiff = asDevice(std::make_shared<WrongOnce>(gpu::Op::Diff, 0), 16);
        const auto gotDiff = ops::computeDiff(a, b, d, *wrongDiff, {}, {});
        QCOMPARE(countContaining(gotDiff.warnings, "wrong diff"), size_t(1));
        QCOMPARE(gotDiff.tensors.size(), cpuDiff.tensors.size());
        for (size_t i = 0; i < cpuDiff.tensors.size(); ++i)
            QCOMPARE(gotDiff.tensors[i].diff.bitwiseEqual, cpuDiff.tensors[i].diff.bitwiseEqual);
    }

    // --device auto is the CPU until a GPU measurement says otherwise, and says why in words.
    void autoIsTheCpuAndSaysWhy()
    {
        std::string reason;
        auto b = gpu::makeBackend(gpu::Device::Auto, &reason);
        QCOMPARE(b->name(), std::string("cpu"));
        QCOMPARE(reason, gpu::autoChoice());
        QVERIFY2(reason.rfind("cpu: ", 0) == 0 && reason.find('(') != std::string::npos, reason.c_str());
        const gpu::DeviceProbe& p = gpu::probeDevices();
        QCOMPARE(p.cudaBuilt, gpu::cudaBuilt());
        if (p.devices == 0) QVERIFY(!p.reason.empty());
    }
};

QTEST_APPLESS_MAIN(TestGpuKernels)
#include "tst_gpu_kernels.moc"
