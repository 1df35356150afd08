// Element-type conversion between the floating types checkpoints hold, bit-identical to
// PyTorch's Tensor.to(): round-to-nearest-even, NaN and signed zero preserved as PyTorch does.
#pragma once

#include "scalar.h"

#include <cstdint>

namespace ckpt::gpu {

// Converts `count` elements from src (type `from`) to dst (type `to`); same type copies.
// Supported: F64, F32, F16, BF16 in both directions.
void castElements(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count);

uint16_t floatToBFloat16(float f);
uint16_t floatToHalf(float f);
float bfloat16ToFloat(uint16_t h);
float halfToFloat(uint16_t h);

// Any element as a double (float8 kinds decoded exactly; integers converted).
double toDouble(Scalar s, const uint8_t* p);

} // namespace ckpt::gpu
