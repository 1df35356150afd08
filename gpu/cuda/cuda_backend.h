// Entry point into the CUDA backend (only compiled with CKPT_CUDA). Returns nullptr, with the
// reason, when no device answers.
#pragma once

#include "compute_backend.h"

#include <memory>
#include <string>

namespace ckpt::gpu {

std::shared_ptr<ComputeBackend> makeCudaBackend(std::string* reason);

} // namespace ckpt::gpu
