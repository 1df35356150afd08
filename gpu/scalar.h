// The element types the compute backend understands, independent of torch (gpu/ sits below
// model/). model/ maps torch dtypes onto these.
#pragma once

#include <cstdint>

// Callable from CUDA kernels too.
#ifdef __CUDACC__
#define CKPT_HOST_DEVICE __host__ __device__
#else
#define CKPT_HOST_DEVICE
#endif

namespace ckpt::gpu {

enum class Scalar : uint8_t {
    F64,
    F32,
    F16,
    BF16,
    F8E4M3FN,
    F8E5M2,
    F8E4M3FNUZ,
    F8E5M2FNUZ,
    F8E8M0,
    I64,
    I32,
    I16,
    I8,
    U8,
    U16,
    U32,
    U64,
    Bool,
};

CKPT_HOST_DEVICE inline uint32_t scalarSize(Scalar s)
{
    switch (s) {
    case Scalar::F64:
    case Scalar::I64:
    case Scalar::U64:
        return 8;
    case Scalar::F32:
    case Scalar::I32:
    case Scalar::U32:
        return 4;
    case Scalar::F16:
    case Scalar::BF16:
    case Scalar::I16:
    case Scalar::U16:
        return 2;
    default:
        return 1;
    }
}

CKPT_HOST_DEVICE inline bool isFloating(Scalar s)
{
    return s <= Scalar::F8E8M0;
}

} // namespace ckpt::gpu
