// A tensor to be written by one of our writers (safetensors, torch.save zip): its bytes are
// produced on demand, in chunks, so writing never needs a whole tensor in memory.
#pragma once

#include "torch/dtype.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace ckpt::torch {

struct OutTensor
{
    std::string name;
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    uint64_t nbytes = 0;
    // Fills dst with `count` bytes starting at byte `offset` of the tensor's contiguous layout.
    std::function<void(uint64_t offset, uint64_t count, uint8_t* dst)> fill;
};

} // namespace ckpt::torch
