#include "compute_backend.h"

#ifdef CKPT_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <utility>

namespace ckpt::gpu {

bool cudaBuilt()
{
#ifdef CKPT_WITH_CUDA
    return true;
#else
    return false;
#endif
}

bool cpuDefines(Op op, Scalar type)
{
    if (op != Op::Cast) return true;
    return type == Scalar::F64 || type == Scalar::F32 || type == Scalar::F16 || type == Scalar::BF16;
}

namespace {

// Runs on CUDA until the device fails, then on the CPU for the rest of the job this backend was
// made for (each job makes its own), saying so once through the warnings channel: a vanished
// device costs speed, not the job.
class FallbackBackend final : public ComputeBackend
{
public:
    explicit FallbackBackend(std::shared_ptr<ComputeBackend> cuda) : m_cuda(std::move(cuda)) {}

    std::string name() const override { return active().name(); }
    std::string device() const override { return active().device(); }
    bool supports(Op op, Scalar t) const override { return active().supports(op, t); }
    void gather(const StridedView& v, uint64_t f, uint64_t n, uint8_t* d) override
    {
        run([&](ComputeBackend& b) { b.gather(v, f, n, d); });
    }
    void cast(Scalar a, Scalar b, const uint8_t* s, uint8_t* d, uint64_t n) override
    {
        run([&](ComputeBackend& x) { x.cast(a, b, s, d, n); });
    }
    Stats stats(const StridedView& v, Scalar t) override
    {
        Stats s;
        run([&](ComputeBackend& b) { s = b.stats(v, t); });
        return s;
    }
    Histogram histogram(const StridedView& v, Scalar t, int bins, bool lg, double lo, double hi) override
    {
        Histogram h;
        run([&](ComputeBackend& b) { h = b.histogram(v, t, bins, lg, lo, hi); });
        return h;
    }
    DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) override
    {
        DiffStats d;
        run([&](ComputeBackend& x) { d = x.diff(a, ta, b, tb); });
        return d;
    }
    std::vector<std::string> takeWarnings() override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        return std::exchange(m_warnings, {});
    }

private:
    ComputeBackend& active() const { return m_failed ? cpuBackend() : *m_cuda; }

    template <typename Fn> void run(Fn fn)
    {
        if (!m_failed) {
            try {
                fn(*m_cuda);
                return;
            } catch (const BackendError& e) {
                std::lock_guard<std::mutex> lock(m_mutex);
                if (!m_failed) m_warnings.push_back(std::string(e.what()) + "; continuing on the CPU");
                m_failed = true;
            }
        }
        fn(cpuBackend());
    }

    std::shared_ptr<ComputeBackend> m_cuda;
    std::atomic<bool> m_failed{false};
    std::mutex m_mutex;
    std::vector<std::string> m_warnings;
};

} // namespace

std::shared_ptr<ComputeBackend> withCpuFallback(std::shared_ptr<ComputeBackend> primary)
{
    return std::make_shared<FallbackBackend>(std::move(primary));
}

const DeviceProbe& probeDevices()
{
    static const DeviceProbe probe = [] {
        DeviceProbe p;
#ifdef CKPT_WITH_CUDA
        p.cudaBuilt = true;
        probeCuda(p);
#else
        p.reason = "built without CUDA";
#endif
        return p;
    }();
    return probe;
}

std::string autoChoice()
{
    // No operation is listed as faster on a GPU: bench/RESULTS.md holds no GPU measurement yet.
    // When one shows an operation and size where the GPU wins, Auto picks it there, and this
    // says so.
    const DeviceProbe& p = probeDevices();
    const std::string cpu = "cpu: " + cpuBackend().device();
    if (p.devices == 0) return cpu + " (" + p.reason + ")";
    return cpu + " (auto: " + p.name +
           " is there, but no measurement has shown it faster than the CPU for checkpoint work, whose data "
           "lies in host memory; --device cuda uses it)";
}

std::shared_ptr<ComputeBackend> makeBackend(Device want, std::string* reason)
{
    std::shared_ptr<ComputeBackend> cpu(&cpuBackend(), [](ComputeBackend*) {});
    if (want == Device::Cpu) {
        if (reason) *reason = "cpu: " + cpuBackend().device() + " (requested)";
        return cpu;
    }
    if (want == Device::Auto) {
        if (reason) *reason = autoChoice();
        return cpu;
    }
#ifdef CKPT_WITH_CUDA
    const DeviceProbe& p = probeDevices();
    if (p.devices == 0) throw BackendError("--device cuda: " + p.reason);
    int device = 0;
    if (const char* env = std::getenv("CKPT_CUDA_DEVICE"); env && *env) {
        char* end = nullptr;
        const long d = std::strtol(env, &end, 10);
        if (*end || d < 0 || d >= p.devices)
            throw BackendError("--device cuda: CKPT_CUDA_DEVICE=" + std::string(env) +
                               " is not a device number (" + std::to_string(p.devices) + " found)");
        device = int(d);
    }
    std::shared_ptr<ComputeBackend> cuda = makeCudaBackend(device);
    if (reason) *reason = "cuda: " + cuda->device() + " (requested)";
    return withCpuFallback(selfChecked(std::move(cuda), selfCheckEvery()));
#else
    throw BackendError("--device cuda: this build has no CUDA backend (CKPT_CUDA=OFF or no toolkit)");
#endif
}

} // namespace ckpt::gpu
