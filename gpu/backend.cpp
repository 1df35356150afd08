#include "compute_backend.h"

#ifdef CKPT_WITH_CUDA
#include "cuda/cuda_backend.h"
#endif

#include <atomic>
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
    uint64_t hash(const uint8_t* p, uint64_t n) override
    {
        uint64_t h = 0;
        run([&](ComputeBackend& b) { h = b.hash(p, n); });
        return h;
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

std::shared_ptr<ComputeBackend> makeBackend(Device want, std::string* reason)
{
    std::shared_ptr<ComputeBackend> cpu(&cpuBackend(), [](ComputeBackend*) {});
    if (want == Device::Cpu) {
        if (reason) *reason = "cpu: " + cpuBackend().device() + " (requested)";
        return cpu;
    }
#ifdef CKPT_WITH_CUDA
    std::string why;
    std::shared_ptr<ComputeBackend> cuda;
    try {
        cuda = makeCudaBackend(&why);
    } catch (const BackendError& e) {
        why = e.what();
    }
    if (cuda) {
        if (reason) *reason = why;
        return withCpuFallback(cuda);
    }
    if (want == Device::Cuda) throw BackendError("--device cuda: " + why);
    if (reason) *reason = "cpu: " + cpuBackend().device() + " (" + why + ")";
    return cpu;
#else
    if (want == Device::Cuda)
        throw BackendError("--device cuda: this build has no CUDA backend (CKPT_CUDA=OFF or no toolkit)");
    if (reason) *reason = "cpu: " + cpuBackend().device() + " (built without CUDA)";
    return cpu;
#endif
}

} // namespace ckpt::gpu
