// The shared kernels (algorithms.h) compiled for the host: the same source the CUDA backend
// compiles with nvcc, run by Thrust's OpenMP system (its C++ system where the compiler has no
// OpenMP). This is what CI executes of the GPU path: gpu_parity_host holds it to the CPU oracle,
// and the self-check tests inject wrong results through it.
#pragma once

#include "compute_backend.h"

#include <memory>

namespace ckpt::gpu {

// `stagingBytes`: what one staged buffer holds, as the CUDA backend's pinned buffers do (small
// values make a test cross buffer boundaries cheaply). Named "host-kernels".
std::shared_ptr<ComputeBackend> makeHostKernelBackend(uint64_t stagingBytes = 64u << 20);

// "OpenMP (N threads)" or "C++ (serial)": the Thrust host system this build runs.
const char* hostKernelSystem();

} // namespace ckpt::gpu
