// The parity suite (gpu_parity_suite.h) on a real CUDA device, against the CPU oracle, through the
// backend `--device cuda` makes. Without CUDA or without a device it says why and exits 77, which
// ctest reports as skipped (never as passed).
#include "compute_backend.h"
#include "gpu_parity_suite.h"

#include <cstdio>

int main()
{
    using namespace ckpt::gpu;
    if (!cudaBuilt()) {
        std::printf("gpu_parity: skipped: this build has no CUDA backend (CKPT_CUDA=OFF or no toolkit)\n");
        return 77;
    }
    std::shared_ptr<ComputeBackend> cuda;
    try {
        std::string reason;
        cuda = makeBackend(Device::Cuda, &reason);
    } catch (const BackendError& e) {
        std::printf("gpu_parity: skipped: %s\n", e.what());
        return 77;
    }
    std::printf("gpu_parity: %s against %s\n", cuda->device().c_str(), cpuBackend().device().c_str());
    const parity::Tally t = parity::run(*cuda, 64u << 20, false);
    for (const auto& w : cuda->takeWarnings())
        std::printf("warning: %s\n", w.c_str());
    std::printf("gpu_parity: %d passed, %d failed\n", t.passed, t.failed);
    return t.failed ? 1 : 0;
}
