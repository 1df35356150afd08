// The parity suite (gpu_parity_suite.h) on the shared kernels compiled for the host: the very
// source gpu/cuda compiles with nvcc, run here by Thrust's host system, against the CPU oracle.
// Staging buffers of 64 KiB, so that sizes one element past a buffer stay cheap. Bins are exact
// here (one log10 on both sides).
#include "compute_backend.h"
#include "gpu_parity_suite.h"
#include "kernels/host_backend.h"

#include <cstdio>

int main()
{
    using namespace ckpt::gpu;
    const auto dut = makeHostKernelBackend(64u << 10);
    std::printf("gpu_parity_host: %s against the CPU oracle (%s)\n", dut->device().c_str(),
                cpuBackend().device().c_str());
    const parity::Tally t = parity::run(*dut, 64u << 10, true);
    std::printf("gpu_parity_host: %d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
