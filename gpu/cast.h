// Element-type conversion between the floating types checkpoints hold, bit-identical to
// PyTorch's Tensor.to(): round-to-nearest-even, NaN and signed zero preserved as PyTorch does.
// The element functions are the shared kernels' (kernels/elements.h): one definition for the
// CPU and every device.
#pragma once

#include "kernels/elements.h"
#include "scalar.h"

#include <cstdint>

namespace ckpt::gpu {

// Converts `count` elements from src (type `from`) to dst (type `to`); same type copies.
// Supported: F64, F32, F16, BF16 in both directions.
void castElements(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count);

using kernels::bfloat16ToFloat;
using kernels::floatToBFloat16;
using kernels::floatToHalf;
using kernels::halfToFloat;

// Any element as a double (float8 kinds decoded exactly; integers converted).
double toDouble(Scalar s, const uint8_t* p);

} // namespace ckpt::gpu
