// Named tensors whose bytes are produced on demand, from any input: the consolidated model of a
// DeepSpeed tag (what `ckpt export` writes) or the tensors of one torch.save / safetensors
// file. Export, stats and diff all consume this one shape. The set keeps its files mapped.
#pragma once

#include "compute_backend.h"
#include "torch/dtype.h"
#include "torch/out_tensor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::ops {

struct SourceTensor
{
    torch::OutTensor tensor;
    std::string aliasOf; // same data as that tensor (tied weights); tensor.fill is empty
    // When the bytes already lie contiguous in a mapped file with no cast: read them in place.
    const uint8_t* direct = nullptr;
};

struct TensorSet
{
    std::string label;  // "CHECKPOINT (tag global_step4)" or the file
    std::string tag;    // checkpoints: the tag read
    std::vector<SourceTensor> tensors;
    std::vector<std::string> skipped; // "'name' (why)"
    std::vector<std::string> warnings;
    std::shared_ptr<void> keepAlive;
};

struct SourceOptions
{
    std::string tag;                                   // checkpoints: empty = latest
    std::optional<torch::DType> dtype = torch::DType::Float32; // checkpoints: floating tensors' dtype
    bool excludeFrozen = false;
    std::shared_ptr<gpu::ComputeBackend> backend;      // casts; nullptr = CPU
};

// A DeepSpeed checkpoint folder or tag folder: its consolidated model. Throws Error on damage.
TensorSet checkpointTensors(const std::string& path, const SourceOptions& options);
// One file (torch zip, legacy torch, safetensors): its tensors in file order, as stored.
TensorSet fileTensors(const std::string& path);
// Whichever of the two `path` is.
TensorSet anyTensors(const std::string& path, const SourceOptions& options);

std::optional<gpu::Scalar> scalarOf(torch::DType d);

} // namespace ckpt::ops
