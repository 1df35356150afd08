// The output side shared by every operation: stream tensors into a safetensors or torch.save
// file under a temporary name, then re-read what landed on disk and compare content hashes
// before the caller commits (renames) it.
#pragma once

#include "io/atomic_file.h"
#include "ops/job.h"
#include "torch/out_tensor.h"
#include "torch/torch_writer.h"

#include <map>
#include <string>
#include <vector>

namespace ckpt::ops {

// Sorts `tensors` into the reference writer's order, writes, returns per-tensor xxh3 (in the new order).
std::vector<uint64_t> writeSafetensors(io::AtomicFile& out, std::vector<torch::OutTensor>& tensors,
                                       const std::map<std::string, std::string>& metadata,
                                       const std::function<void(uint64_t)>& onBytes,
                                       const CancelToken& cancel);
void verifySafetensors(const io::AtomicFile& out, const std::vector<torch::OutTensor>& tensors,
                       const std::vector<uint64_t>& hashes, const CancelToken& cancel);
void verifyTorchZip(const io::AtomicFile& out, const std::vector<torch::OutTensor>& tensors,
                    const std::vector<torch::Alias>& aliases, const std::vector<uint64_t>& hashes,
                    const CancelToken& cancel);

} // namespace ckpt::ops
