// Element-type conversion between the floating types checkpoints hold, bit-identical to
// PyTorch's Tensor.to(): round-to-nearest-even, NaN and signed zero preserved as PyTorch does.
#pragma once

#include <cstdint>

namespace ckpt::gpu {

enum class Scalar : uint8_t { F64, F32, F16, BF16 };

inline uint32_t scalarSize(Scalar s)
{
    return s == Scalar::F64 ? 8 : s == Scalar::F32 ? 4 : 2;
}

// Converts `count` elements from src (type `from`) to dst (type `to`); same type copies.
void castElements(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count);

uint16_t floatToBFloat16(float f);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t h);
float halfToFloat(uint16_t h);

} // namespace ckpt::gpu
