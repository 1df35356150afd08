// CUDA implementation of the compute backend. Inputs live in host memory (mapped files), so
// every operation streams chunks through pinned staging buffers: cast and hash pack the next
// chunk into one of two buffers while the device works on the other, on two streams; stats uses
// one buffer serially, and diff stages both sides and waits for each chunk. A chunk's results come
// back as per-block partials that the host merges in order (the order the CPU merges its blocks).
// Every CUDA call made while working is checked, and a failure becomes BackendError, never an
// abort; the destructors' frees are not (nothing is left to report them to).
#include "cast.h"
#include "compute_backend.h"
#include "cuda/cuda_backend.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

namespace ckpt::gpu {

namespace {

#define CKPT_CUDA_CHECK(call)                                                                                \
    do {                                                                                                     \
        const cudaError_t err_ = (call);                                                                     \
        if (err_ != cudaSuccess)                                                                             \
            throw BackendError(std::string("CUDA: ") + #call + ": " + cudaGetErrorString(err_));             \
    } while (0)

constexpr uint64_t kChunkBytes = 64u << 20; // per staging buffer
constexpr int kThreads = 256;
constexpr uint64_t kBlock = 4096; // elements per stats block, as on the CPU

struct DevStats
{
    unsigned long long count, zeros, nans, infs, valid;
    double min, max, shift, sum, sumsq, absmax, sq;
};

struct DevDiff
{
    unsigned long long count, equal, nanMismatch;
    double maxAbs, sumSqDiff, sumSqA, sumSqB, dot;
};

__device__ double loadAs(Scalar t, const uint8_t* p)
{
    switch (t) {
    case Scalar::F64: {
        double v;
        memcpy(&v, p, 8);
        return v;
    }
    case Scalar::F32: {
        float v;
        memcpy(&v, p, 4);
        return double(v);
    }
    case Scalar::F16: {
        __half v;
        memcpy(&v, p, 2);
        return double(__half2float(v));
    }
    case Scalar::BF16: {
        unsigned short u;
        memcpy(&u, p, 2);
        unsigned int w = unsigned(u) << 16;
        float f;
        memcpy(&f, &w, 4);
        return double(f);
    }
    case Scalar::I64: {
        long long v;
        memcpy(&v, p, 8);
        return double(v);
    }
    case Scalar::I32: {
        int v;
        memcpy(&v, p, 4);
        return double(v);
    }
    case Scalar::I16: {
        short v;
        memcpy(&v, p, 2);
        return double(v);
    }
    case Scalar::I8:
        return double(static_cast<signed char>(*p));
    case Scalar::U8:
        return double(*p);
    case Scalar::U16: {
        unsigned short v;
        memcpy(&v, p, 2);
        return double(v);
    }
    case Scalar::U32: {
        unsigned v;
        memcpy(&v, p, 4);
        return double(v);
    }
    case Scalar::U64: {
        unsigned long long v;
        memcpy(&v, p, 8);
        return double(v);
    }
    case Scalar::Bool:
        return *p ? 1.0 : 0.0;
    default:
        return 0.0; // float8 kinds are decoded through a table, see statsKernel
    }
}

__device__ double load8(const double* table, Scalar t, const uint8_t* p)
{
    return (t >= Scalar::F8E4M3FN && t <= Scalar::F8E8M0) ? table[*p] : loadAs(t, p);
}

// One CUDA block per kBlock elements; thread 0 walks the block in order (the reduction across
// blocks happens on the host). The CPU's F32 path sums with two AVX2 accumulators, so the numbers
// agree to rounding, not bit for bit; tests/gpu_parity checks them within a tolerance.
__global__ void statsKernel(const uint8_t* data, uint64_t n, uint32_t es, Scalar t, const double* table,
                            DevStats* out)
{
    const uint64_t first = uint64_t(blockIdx.x) * kBlock;
    if (first >= n || threadIdx.x != 0) return;
    const uint64_t len = min(kBlock, n - first);
    DevStats s{};
    s.min = INFINITY, s.max = -INFINITY;
    bool haveShift = false;
    for (uint64_t i = 0; i < len; ++i) {
        const double x = load8(table, t, data + (first + i) * es);
        ++s.count;
        if (isnan(x)) {
            ++s.nans;
            continue;
        }
        if (isinf(x)) ++s.infs;
        if (x == 0) ++s.zeros;
        if (!haveShift && isfinite(x)) s.shift = x, haveShift = true;
        const double d = x - s.shift;
        s.sum += d, s.sumsq += d * d, s.sq += x * x;
        s.min = fmin(s.min, x), s.max = fmax(s.max, x), s.absmax = fmax(s.absmax, fabs(x));
        ++s.valid;
    }
    out[blockIdx.x] = s;
}

__global__ void diffKernel(const uint8_t* a, Scalar ta, uint32_t ea, const uint8_t* b, Scalar tb, uint32_t eb,
                           uint64_t n, const double* tableA, const double* tableB, DevDiff* out)
{
    __shared__ DevDiff part[kThreads];
    DevDiff d{};
    for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += uint64_t(gridDim.x) * blockDim.x) {
        const double x = load8(tableA, ta, a + i * ea), y = load8(tableB, tb, b + i * eb);
        ++d.count;
        if (ta == tb) {
            bool eq = true;
            for (uint32_t k = 0; k < ea; ++k)
                eq &= a[i * ea + k] == b[i * eb + k];
            d.equal += eq;
        }
        if (isnan(x) || isnan(y)) {
            d.nanMismatch += isnan(x) != isnan(y);
            continue;
        }
        const double dd = x - y;
        d.maxAbs = fmax(d.maxAbs, fabs(dd));
        d.sumSqDiff += dd * dd, d.sumSqA += x * x, d.sumSqB += y * y, d.dot += x * y;
    }
    part[threadIdx.x] = d;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) {
            DevDiff& p = part[threadIdx.x];
            const DevDiff& q = part[threadIdx.x + s];
            p.count += q.count, p.equal += q.equal, p.nanMismatch += q.nanMismatch;
            p.maxAbs = fmax(p.maxAbs, q.maxAbs);
            p.sumSqDiff += q.sumSqDiff, p.sumSqA += q.sumSqA, p.sumSqB += q.sumSqB, p.dot += q.dot;
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = part[0];
}

// One block per 1 MiB hash chunk: a wrapping sum, so any summation order gives the CPU's value.
__global__ void hashKernel(const uint8_t* data, uint64_t size, uint64_t* out)
{
    __shared__ unsigned long long part[kThreads];
    const uint64_t c = blockIdx.x;
    const uint8_t* p = data + c * kHashChunk;
    const uint64_t len = min(kHashChunk, size - c * kHashChunk);
    const uint64_t words = len / 8;
    unsigned long long acc = 0;
    for (uint64_t j = threadIdx.x; j < words; j += blockDim.x) {
        uint64_t w;
        memcpy(&w, p + j * 8, 8);
        acc += hashMix(w + j * 0x9E3779B97F4A7C15ull);
    }
    if (threadIdx.x == 0 && len % 8) {
        uint64_t w = 0;
        memcpy(&w, p + words * 8, len % 8);
        acc += hashMix(w + words * 0x9E3779B97F4A7C15ull);
    }
    part[threadIdx.x] = acc;
    __syncthreads();
    for (int s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[c] = part[0] ^ hashMix(len);
}

__device__ unsigned short f2bf(float f)
{
    if (isnan(f)) return 0xFFFF; // as the CPU oracle (PyTorch's vectorised conversion)
    unsigned u;
    memcpy(&u, &f, 4);
    return static_cast<unsigned short>((u + ((u >> 16) & 1) + 0x7FFF) >> 16);
}

__global__ void castKernel(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t n)
{
    for (uint64_t i = uint64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += uint64_t(gridDim.x) * blockDim.x) {
        double d = 0;
        float f = 0;
        if (from == Scalar::F64) {
            memcpy(&d, src + i * 8, 8);
            f = float(d);
        } else {
            f = float(loadAs(from, src + i * scalarSize(from)));
            d = f;
        }
        switch (to) {
        case Scalar::F64:
            memcpy(dst + i * 8, &d, 8);
            break;
        case Scalar::F32:
            memcpy(dst + i * 4, &f, 4);
            break;
        case Scalar::F16: {
            unsigned u;
            memcpy(&u, &f, 4);
            unsigned short h;
            if (isnan(f))
                h = static_cast<unsigned short>(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
            else {
                __half hh = __float2half_rn(f);
                memcpy(&h, &hh, 2);
            }
            memcpy(dst + i * 2, &h, 2);
            break;
        }
        case Scalar::BF16: {
            unsigned short b = f2bf(f);
            memcpy(dst + i * 2, &b, 2);
            break;
        }
        default:
            break;
        }
    }
}

class Pinned
{
public:
    explicit Pinned(uint64_t n) { CKPT_CUDA_CHECK(cudaHostAlloc(&m_p, n, cudaHostAllocDefault)); }
    ~Pinned() { cudaFreeHost(m_p); }
    uint8_t* get() const { return static_cast<uint8_t*>(m_p); }

private:
    void* m_p = nullptr;
};

class DeviceBuffer
{
public:
    explicit DeviceBuffer(uint64_t n) { CKPT_CUDA_CHECK(cudaMalloc(&m_p, std::max<uint64_t>(n, 1))); }
    ~DeviceBuffer() { cudaFree(m_p); }
    template <typename T = uint8_t> T* get() const { return static_cast<T*>(m_p); }

private:
    void* m_p = nullptr;
};

class Stream
{
public:
    Stream() { CKPT_CUDA_CHECK(cudaStreamCreate(&m_s)); }
    ~Stream() { cudaStreamDestroy(m_s); }
    operator cudaStream_t() const { return m_s; }

private:
    cudaStream_t m_s{};
};

class CudaBackend final : public ComputeBackend
{
public:
    explicit CudaBackend(int device) : m_device(device)
    {
        CKPT_CUDA_CHECK(cudaSetDevice(device));
        cudaDeviceProp prop{};
        CKPT_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
        m_name =
            std::string(prop.name) + " (sm_" + std::to_string(prop.major) + std::to_string(prop.minor) + ")";
        // float8 decode tables, computed by the CPU oracle and uploaded once
        std::vector<double> tables(5 * 256);
        const Scalar kinds[5] = {Scalar::F8E4M3FN, Scalar::F8E5M2, Scalar::F8E4M3FNUZ, Scalar::F8E5M2FNUZ,
                                 Scalar::F8E8M0};
        for (int k = 0; k < 5; ++k)
            for (int i = 0; i < 256; ++i) {
                const uint8_t b = uint8_t(i);
                tables[size_t(k * 256 + i)] = toDouble(kinds[k], &b);
            }
        m_tables = std::make_unique<DeviceBuffer>(tables.size() * sizeof(double));
        CKPT_CUDA_CHECK(cudaMemcpy(m_tables->get(), tables.data(), tables.size() * sizeof(double),
                                   cudaMemcpyHostToDevice));
        for (int i = 0; i < 2; ++i) {
            m_host[i] = std::make_unique<Pinned>(kChunkBytes);
            m_dev[i] = std::make_unique<DeviceBuffer>(kChunkBytes);
            m_dev2[i] = std::make_unique<DeviceBuffer>(kChunkBytes);
        }
    }

    std::string name() const override { return "cuda"; }
    std::string device() const override { return m_name; }
    bool supports(Op op, Scalar type) const override
    {
        // Gathers are host memory to host memory and binning is trivial next to the copy:
        // both stay on the CPU (see gather() and histogram()).
        if (op == Op::Gather || op == Op::Histogram) return false;
        return cpuDefines(op, type);
    }

    void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) override
    {
        // Host memory in, host memory out: a device round trip cannot beat memcpy here.
        cpuBackend().gather(v, first, count, dst);
    }

    void cast(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count) override
    {
        const auto bound = bind();
        const uint32_t fs = scalarSize(from), ts = scalarSize(to);
        const uint64_t per = kChunkBytes / std::max(fs, ts);
        int slot = 0;
        for (uint64_t first = 0; first < count; first += per, slot ^= 1) {
            const uint64_t n = std::min(per, count - first);
            CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[slot]));
            std::memcpy(m_host[slot]->get(), src + first * fs, n * fs);
            CKPT_CUDA_CHECK(cudaMemcpyAsync(m_dev[slot]->get(), m_host[slot]->get(), n * fs,
                                            cudaMemcpyHostToDevice, m_stream[slot]));
            castKernel<<<grid(n), kThreads, 0, m_stream[slot]>>>(from, to, m_dev[slot]->get(),
                                                                 m_dev2[slot]->get(), n);
            CKPT_CUDA_CHECK(cudaGetLastError());
            CKPT_CUDA_CHECK(cudaMemcpyAsync(dst + first * ts, m_dev2[slot]->get(), n * ts,
                                            cudaMemcpyDeviceToHost, m_stream[slot]));
        }
        syncStreams();
    }

    Stats stats(const StridedView& v, Scalar t) override
    {
        const auto bound = bind();
        Stats total;
        const uint32_t es = v.elementSize;
        const uint64_t n = v.numel();
        const uint64_t per = kChunkBytes / es / kBlock * kBlock;
        std::vector<DevStats> host;
        DeviceBuffer partials((per / kBlock + 1) * sizeof(DevStats));
        for (uint64_t first = 0; first < n; first += per) {
            const uint64_t len = std::min(per, n - first);
            stage(v, first, len, 0);
            const unsigned blocks = unsigned((len + kBlock - 1) / kBlock);
            statsKernel<<<blocks, 32, 0, m_stream[0]>>>(m_dev[0]->get(), len, es, t,
                                                        m_tables->get<double>() + tableOffset(t),
                                                        partials.get<DevStats>());
            CKPT_CUDA_CHECK(cudaGetLastError());
            host.resize(blocks);
            CKPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), partials.get(), blocks * sizeof(DevStats),
                                            cudaMemcpyDeviceToHost, m_stream[0]));
            CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[0]));
            for (const DevStats& d : host) {
                Stats s;
                s.count = d.count, s.zeros = d.zeros, s.nans = d.nans, s.infs = d.infs;
                if (d.valid) {
                    s.min = d.min, s.max = d.max, s.absmax = d.absmax, s.sumsq = d.sq;
                    s.mean = d.shift + d.sum / double(d.valid);
                    s.m2 = std::max(0.0, d.sumsq - d.sum * d.sum / double(d.valid));
                }
                total.merge(s);
            }
        }
        return total;
    }

    Histogram histogram(const StridedView& v, Scalar t, int bins, bool log10, double lo, double hi) override
    {
        return cpuBackend().histogram(v, t, bins, log10, lo,
                                      hi); // binning is bandwidth-trivial next to the copy
    }

    DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) override
    {
        const auto bound = bind();
        DiffStats total;
        const uint64_t n = a.numel();
        if (b.numel() != n) throw BackendError("diff: tensors have different element counts");
        const uint64_t per = kChunkBytes / std::max(a.elementSize, b.elementSize);
        const unsigned blocks = 512;
        DeviceBuffer partials(blocks * sizeof(DevDiff));
        std::vector<DevDiff> host(blocks);
        for (uint64_t first = 0; first < n; first += per) {
            const uint64_t len = std::min(per, n - first);
            stage(a, first, len, 0);
            stage(b, first, len, 1, /*second=*/true);
            CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[1]));
            diffKernel<<<blocks, kThreads, 0, m_stream[0]>>>(
                m_dev[0]->get(), ta, a.elementSize, m_dev2[1]->get(), tb, b.elementSize, len,
                m_tables->get<double>() + tableOffset(ta), m_tables->get<double>() + tableOffset(tb),
                partials.get<DevDiff>());
            CKPT_CUDA_CHECK(cudaGetLastError());
            CKPT_CUDA_CHECK(cudaMemcpyAsync(host.data(), partials.get(), blocks * sizeof(DevDiff),
                                            cudaMemcpyDeviceToHost, m_stream[0]));
            CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[0]));
            for (const DevDiff& d : host) {
                DiffStats s;
                s.count = d.count, s.bitwiseEqual = d.equal, s.nanMismatch = d.nanMismatch,
                s.maxAbsDiff = d.maxAbs;
                s.sumSqDiff = d.sumSqDiff, s.sumSqA = d.sumSqA, s.sumSqB = d.sumSqB, s.dot = d.dot;
                total.merge(s);
            }
        }
        return total;
    }

    uint64_t hash(const uint8_t* data, uint64_t size) override
    {
        const auto bound = bind();
        const uint64_t chunks = (size + kHashChunk - 1) / kHashChunk;
        std::vector<uint64_t> values(chunks);
        const uint64_t perChunks = kChunkBytes / kHashChunk;
        DeviceBuffer out(perChunks * sizeof(uint64_t) * 2);
        int slot = 0;
        // Double-buffered: copy chunk group k+1 while group k is hashed.
        for (uint64_t c = 0; c < chunks; c += perChunks, slot ^= 1) {
            const uint64_t groupChunks = std::min(perChunks, chunks - c);
            const uint64_t bytes = std::min(size - c * kHashChunk, groupChunks * kHashChunk);
            CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[slot]));
            std::memcpy(m_host[slot]->get(), data + c * kHashChunk, bytes);
            CKPT_CUDA_CHECK(cudaMemcpyAsync(m_dev[slot]->get(), m_host[slot]->get(), bytes,
                                            cudaMemcpyHostToDevice, m_stream[slot]));
            uint64_t* o = out.get<uint64_t>() + slot * perChunks;
            hashKernel<<<unsigned(groupChunks), kThreads, 0, m_stream[slot]>>>(m_dev[slot]->get(), bytes, o);
            CKPT_CUDA_CHECK(cudaGetLastError());
            CKPT_CUDA_CHECK(cudaMemcpyAsync(values.data() + c, o, groupChunks * sizeof(uint64_t),
                                            cudaMemcpyDeviceToHost, m_stream[slot]));
        }
        syncStreams();
        uint64_t h = hashMix(size);
        for (uint64_t v : values)
            h = hashMix(h ^ v) + 1;
        return h;
    }

private:
    // Every device operation starts here: one call at a time on this job's buffers, with the
    // device bound on the calling thread (a job's workers are not the thread that made it).
    std::unique_lock<std::mutex> bind()
    {
        std::unique_lock<std::mutex> lock(m_mutex);
        CKPT_CUDA_CHECK(cudaSetDevice(m_device));
        return lock;
    }
    // This job's streams only: another job's work on the same device is not waited for.
    void syncStreams()
    {
        CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[0]));
        CKPT_CUDA_CHECK(cudaStreamSynchronize(m_stream[1]));
    }

    static unsigned grid(uint64_t n)
    {
        return unsigned(std::min<uint64_t>((n + kThreads - 1) / kThreads, 4096));
    }
    static size_t tableOffset(Scalar t)
    {
        return (t >= Scalar::F8E4M3FN && t <= Scalar::F8E8M0) ? size_t(int(t) - int(Scalar::F8E4M3FN)) * 256
                                                              : 0;
    }

    // Packs elements [first, first+len) of v into pinned memory and copies them to the device.
    void stage(const StridedView& v, uint64_t first, uint64_t len, int slot, bool second = false)
    {
        uint8_t* host = m_host[slot]->get();
        if (v.contiguous())
            std::memcpy(host, v.base + (uint64_t(v.offset) + first) * v.elementSize, len * v.elementSize);
        else
            cpuBackend().gather(v, first, len, host);
        void* dev = second ? m_dev2[slot]->get() : m_dev[slot]->get();
        CKPT_CUDA_CHECK(
            cudaMemcpyAsync(dev, host, len * v.elementSize, cudaMemcpyHostToDevice, m_stream[slot]));
    }

    int m_device;
    std::mutex m_mutex;
    std::string m_name;
    std::unique_ptr<DeviceBuffer> m_tables;
    std::unique_ptr<Pinned> m_host[2];
    std::unique_ptr<DeviceBuffer> m_dev[2], m_dev2[2];
    Stream m_stream[2];
};

} // namespace

// In plain words: a machine without a GPU reports "CUDA driver version is insufficient" through
// the static runtime when there is simply no driver, which reads like an upgrade is due.
static std::string whyNoDevice(cudaError_t err)
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

std::shared_ptr<ComputeBackend> makeCudaBackend(std::string* reason)
{
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess || count == 0) {
        if (reason) *reason = whyNoDevice(err);
        return nullptr;
    }
    auto b = std::make_shared<CudaBackend>(0);
    if (reason) *reason = "cuda: " + b->device();
    return b;
}

} // namespace ckpt::gpu
