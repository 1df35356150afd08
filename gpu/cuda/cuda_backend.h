// Entry points into the CUDA backend (only compiled with CKPT_CUDA).
#pragma once

#include "compute_backend.h"

#include <memory>
#include <string>

namespace ckpt::gpu {

// Device count and the first device's name through driver queries only: no context, nothing
// allocated.
void probeCuda(DeviceProbe& probe);
// The backend on device `device` (its buffers allocated once, here); throws BackendError.
std::shared_ptr<ComputeBackend> makeCudaBackend(int device);

} // namespace ckpt::gpu
