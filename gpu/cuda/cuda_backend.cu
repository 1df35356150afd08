// The CUDA device of the shared kernels: memory, copies, a stream and the execution policy, and
// nothing else. Every operation's arithmetic and chunking is the shared source's
// (gpu/kernels/algorithms.h, kernel_backend.h), the same that CI runs on the host.
//
// Inputs live in host memory (mapped files): an upload copies into a pinned buffer and from it
// to device memory on the backend's stream; results come back through a pinned buffer too. All
// buffers, and the arena Thrust takes its temporary storage from, are allocated once per backend
// (per job), on the device chosen, after cudaSetDevice. Every CUDA call made while working is
// checked, and a failure becomes BackendError, never an abort; the destructors' frees are not
// (nothing is left to report them to).
#include "compute_backend.h"
#include "cuda/cuda_backend.h"
#include "kernels/kernel_backend.h"

#include <cuda_runtime.h>
#include <thrust/system/cuda/execution_policy.h>
#include <thrust/system_error.h>

#include <cstring>
#include <string>

namespace ckpt::gpu {

namespace {

[[noreturn]] void cudaFailed(cudaError_t err, const char* call, const char* file, int line)
{
    throw BackendError(std::string("CUDA: ") + call + " (" + file + ":" + std::to_string(line) +
                       "): " + cudaGetErrorString(err));
}

#define CKPT_CUDA_CHECK(call)                                                                                \
    do {                                                                                                     \
        const cudaError_t err_ = (call);                                                                     \
        if (err_ != cudaSuccess) cudaFailed(err_, #call, __FILE__, __LINE__);                                \
    } while (0)

constexpr uint64_t kStaging = 64u << 20;
constexpr uint64_t kArena = 64u << 20; // Thrust's temporary storage (reductions, reduce_by_key)

// Thrust's allocator: bump allocation in one arena made once; the offset returns to 0 when every
// block is given back (each algorithm call gives back its own before the next starts). A request
// the arena cannot hold is refused as BackendError (the job then continues on the CPU).
class Arena
{
public:
    using value_type = char;

    explicit Arena(char* base) : m_base(base) {}
    char* allocate(std::ptrdiff_t n)
    {
        const uint64_t size = (uint64_t(n) + 255) & ~uint64_t(255);
        if (m_used + size > kArena)
            throw BackendError("CUDA: a kernel asked for " + std::to_string(n) +
                               " bytes of temporary storage");
        char* p = m_base + m_used;
        m_used += size, ++m_live;
        return p;
    }
    void deallocate(char*, size_t)
    {
        if (--m_live == 0) m_used = 0;
    }

private:
    char* m_base;
    uint64_t m_used = 0;
    int m_live = 0;
};

class CudaDevice
{
public:
    static constexpr bool kHostResident = false;

    explicit CudaDevice(int device) : m_device(device)
    {
        CKPT_CUDA_CHECK(cudaSetDevice(device));
        cudaDeviceProp prop{};
        CKPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
        m_name = std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) +
                 ", device " + std::to_string(device) + ")";
        try {
            CKPT_CUDA_CHECK(cudaStreamCreateWithFlags(&m_stream, cudaStreamNonBlocking));
            CKPT_CUDA_CHECK(cudaHostAlloc(&m_pinned, kStaging, cudaHostAllocDefault));
            CKPT_CUDA_CHECK(cudaMalloc(&m_memory, 6 * kStaging + kArena));
        } catch (...) { // no destructor runs for a constructor that threw: free what was made
            release();
            throw;
        }
        m_arena = Arena(static_cast<char*>(m_memory) + 6 * kStaging);
    }
    ~CudaDevice() { release(); }
    CudaDevice(const CudaDevice&) = delete;
    CudaDevice& operator=(const CudaDevice&) = delete;

    auto exec() { return thrust::cuda::par_nosync(m_arena).on(m_stream); }
    std::string describe() const { return m_name; }
    uint64_t staging() const { return kStaging; }

    // Slots 0-2 are inputs, then two outputs, then the counters: six staging-sized areas.
    const uint8_t* upload(int slot, const uint8_t* p, uint64_t n)
    {
        bind();
        uint8_t* dev = area(slot);
        std::memcpy(m_pinned, p, n);
        CKPT_CUDA_CHECK(cudaMemcpyAsync(dev, m_pinned, n, cudaMemcpyHostToDevice, m_stream));
        // the pinned buffer is reused by the next upload
        CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream));
        return dev;
    }
    uint8_t* output(uint64_t, int slot = 0) { return area(3 + slot); }
    void download(uint8_t* dst, const uint8_t* src, uint64_t n)
    {
        bind();
        CKPT_CUDA_CHECK(cudaGetLastError());
        CKPT_CUDA_CHECK(cudaMemcpyAsync(m_pinned, src, n, cudaMemcpyDeviceToHost, m_stream));
        CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream));
        std::memcpy(dst, m_pinned, n);
    }
    unsigned long long* counters(size_t n)
    {
        bind();
        auto* c = reinterpret_cast<unsigned long long*>(area(5));
        CKPT_CUDA_CHECK(cudaMemsetAsync(c, 0, n * sizeof(unsigned long long), m_stream));
        return c;
    }

private:
    void release()
    {
        cudaSetDevice(m_device);
        if (m_stream) cudaStreamSynchronize(m_stream), cudaStreamDestroy(m_stream);
        if (m_memory) cudaFree(m_memory);
        if (m_pinned) cudaFreeHost(m_pinned);
    }
    // A job's workers are not the thread that made the backend: bind the device on each.
    void bind() { CKPT_CUDA_CHECK(cudaSetDevice(m_device)); }
    uint8_t* area(int i) { return static_cast<uint8_t*>(m_memory) + uint64_t(i) * kStaging; }

    int m_device;
    std::string m_name;
    cudaStream_t m_stream{};
    void* m_pinned = nullptr;
    void* m_memory = nullptr;
    Arena m_arena{nullptr};
};

// Thrust reports device failures as thrust::system_error: those become BackendError too.
class CudaBackend final : public ComputeBackend
{
public:
    explicit CudaBackend(int device) : m_kernels("cuda", device) {}

    std::string name() const override { return m_kernels.name(); }
    std::string device() const override { return m_kernels.device(); }
    bool supports(Op op, Scalar t) const override { return m_kernels.supports(op, t); }
    void gather(const StridedView& v, uint64_t f, uint64_t n, uint8_t* d) override
    {
        guarded([&] { m_kernels.gather(v, f, n, d); });
    }
    void cast(Scalar a, Scalar b, const uint8_t* s, uint8_t* d, uint64_t n) override
    {
        guarded([&] { m_kernels.cast(a, b, s, d, n); });
    }
    Stats stats(const StridedView& v, Scalar t) override
    {
        return guarded([&] { return m_kernels.stats(v, t); });
    }
    Histogram histogram(const StridedView& v, Scalar t, int bins, bool lg, double lo, double hi) override
    {
        return guarded([&] { return m_kernels.histogram(v, t, bins, lg, lo, hi); });
    }
    DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) override
    {
        return guarded([&] { return m_kernels.diff(a, ta, b, tb); });
    }

private:
    template <typename Fn> auto guarded(Fn fn) -> decltype(fn())
    {
        try {
            return fn();
        } catch (const thrust::system_error& e) {
            throw BackendError(std::string("CUDA: ") + e.what());
        }
    }

    kernels::KernelBackend<CudaDevice> m_kernels;
};

// In plain words: a machine without a GPU reports "CUDA driver version is insufficient" through
// the static runtime when there is simply no driver, which reads like an upgrade is due.
std::string whyNoDevice(cudaError_t err)
{
    switch (err) {
    case cudaSuccess:
    case cudaErrorNoDevice:
        return "no NVIDIA GPU found";
    case cudaErrorInsufficientDriver:
        return "no NVIDIA driver found, or one older than CUDA " + std::to_string(CUDART_VERSION / 1000) +
               "." + std::to_string(CUDART_VERSION % 1000 / 10);
    default:
        return std::string("the NVIDIA GPU did not answer (") + cudaGetErrorString(err) + ")";
    }
}

} // namespace

void probeCuda(DeviceProbe& probe)
{
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        probe.reason = whyNoDevice(err);
        return;
    }
    cudaDeviceProp prop{};
    if (const cudaError_t e = cudaGetDeviceProperties(&prop, 0); e != cudaSuccess) {
        probe.reason = whyNoDevice(e);
        return;
    }
    probe.devices = count;
    probe.name =
        std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
}

std::shared_ptr<ComputeBackend> makeCudaBackend(int device)
{
    return std::make_shared<CudaBackend>(device);
}

} // namespace ckpt::gpu
