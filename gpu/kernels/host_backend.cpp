#include "kernels/host_backend.h"

#include "kernels/kernel_backend.h"

#include <cstring>
#include <string>
#include <vector>

#if CKPT_KERNELS_OPENMP
#include <omp.h>
#include <thrust/system/omp/execution_policy.h>
#else
#include <thrust/system/cpp/execution_policy.h>
#endif

namespace ckpt::gpu {

namespace {

// Host memory is the device's memory: an upload is the caller's pointer, outputs are vectors.
class HostDevice
{
public:
    static constexpr bool kHostResident = true;

    explicit HostDevice(uint64_t staging) : m_staging(staging) {}

    auto exec() const
    {
#if CKPT_KERNELS_OPENMP
        return thrust::omp::par;
#else
        return thrust::cpp::par;
#endif
    }
    std::string describe() const
    {
        return std::string("shared kernels on the host, ") + hostKernelSystem();
    }
    uint64_t staging() const
    {
        return m_staging;
    }
    const uint8_t* upload(int, const uint8_t* p, uint64_t)
    {
        return p;
    }
    uint8_t* output(uint64_t n, int slot = 0)
    {
        auto& b = m_out[slot];
        if (b.size() < n) b.resize(n);
        return b.data();
    }
    void download(uint8_t* dst, const uint8_t* src, uint64_t n)
    {
        if (n && dst != src) std::memcpy(dst, src, n);
    }
    unsigned long long* counters(size_t n)
    {
        m_counters.assign(n, 0);
        return m_counters.data();
    }

private:
    uint64_t m_staging;
    std::vector<uint8_t> m_out[2];
    std::vector<unsigned long long> m_counters;
};

} // namespace

const char* hostKernelSystem()
{
#if CKPT_KERNELS_OPENMP
    static const std::string s = "OpenMP (" + std::to_string(omp_get_max_threads()) + " threads)";
    return s.c_str();
#else
    return "C++ (serial)";
#endif
}

std::shared_ptr<ComputeBackend> makeHostKernelBackend(uint64_t stagingBytes)
{
    return std::make_shared<kernels::KernelBackend<HostDevice>>("host-kernels",
                                                                std::max<uint64_t>(stagingBytes, 64));
}

} // namespace ckpt::gpu
