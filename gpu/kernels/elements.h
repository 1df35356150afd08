// One element at a time: decoding every Scalar to double and the four floating casts bit for
// bit. Written once as CKPT_HOST_DEVICE inline functions: the CPU
// oracle (gpu/cpu), the host build of the shared kernels (gpu/kernels/host_backend.cpp) and the
// CUDA build (gpu/cuda) all call these, so a cast or a decode cannot drift between devices.
//
// Everything here works on bits. The only float arithmetic (the half conversions) uses the
// round-to-nearest operations spelled out (mulRn/addRn), so nvcc cannot contract it into a fused
// multiply-add, which would round once instead of twice and change the result.
#pragma once

#include "scalar.h"

#include <cstdint>
#include <cstring>

namespace ckpt::gpu::kernels {

CKPT_HOST_DEVICE inline uint32_t bitsOf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

CKPT_HOST_DEVICE inline float floatOf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

CKPT_HOST_DEVICE inline uint64_t bitsOf(double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    return u;
}

CKPT_HOST_DEVICE inline double doubleOf(uint64_t u)
{
    double d;
    memcpy(&d, &u, 8);
    return d;
}

// NaN tests on the bits: they hold under any floating-point mode and compile the same everywhere.
CKPT_HOST_DEVICE inline bool isNan(float f)
{
    return (bitsOf(f) & 0x7FFFFFFFu) > 0x7F800000u;
}
CKPT_HOST_DEVICE inline bool isNan(double d)
{
    return (bitsOf(d) & 0x7FFFFFFFFFFFFFFFull) > 0x7FF0000000000000ull;
}
CKPT_HOST_DEVICE inline bool isInf(double d)
{
    return (bitsOf(d) & 0x7FFFFFFFFFFFFFFFull) == 0x7FF0000000000000ull;
}
CKPT_HOST_DEVICE inline bool isFinite(double d)
{
    return (bitsOf(d) & 0x7FF0000000000000ull) != 0x7FF0000000000000ull;
}

CKPT_HOST_DEVICE inline float mulRn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}
CKPT_HOST_DEVICE inline float addRn(float a, float b)
{
#ifdef __CUDA_ARCH__
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

template <typename T> CKPT_HOST_DEVICE inline T load(const uint8_t* p)
{
    T v;
    memcpy(&v, p, sizeof v);
    return v;
}

template <typename T> CKPT_HOST_DEVICE inline void store(uint8_t* p, T v)
{
    memcpy(p, &v, sizeof v);
}

// Round to nearest even. NaN: PyTorch's vectorised CPU conversion (what .to() runs on real
// tensors) writes 0xFFFF for every NaN; its scalar c10::BFloat16 would write 0x7FC0. We follow
// the vectorised path, verified against recorded .to() output.
CKPT_HOST_DEVICE inline uint16_t floatToBFloat16(float f)
{
    if (isNan(f)) return 0xFFFF;
    const uint32_t u = bitsOf(f);
    return uint16_t((u + ((u >> 16) & 1) + 0x7FFF) >> 16);
}

CKPT_HOST_DEVICE inline float bfloat16ToFloat(uint16_t h)
{
    return floatOf(uint32_t(h) << 16);
}

// The branch-free IEEE conversion PyTorch uses (c10 half, after the FP16 library): scaling
// through float arithmetic performs the round-to-nearest-even, including subnormals.
// NaN as x86 F16C does (and so PyTorch's vectorised .to()): quiet bit set, payload truncated.
// NVIDIA's __float2half canonicalises NaN instead, which is why it is not used.
CKPT_HOST_DEVICE inline uint16_t floatToHalf(float f)
{
    const uint32_t w = bitsOf(f);
    if (isNan(f)) return uint16_t(((w >> 16) & 0x8000u) | 0x7E00u | ((w >> 13) & 0x3FFu));
    const float scaleToInf = floatOf(0x77800000u);  // 2^112
    const float scaleToZero = floatOf(0x08800000u); // 2^-110
    float base = mulRn(mulRn(floatOf(w & 0x7FFFFFFFu), scaleToInf), scaleToZero);
    const uint32_t shl1 = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1 & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = addRn(floatOf((bias >> 1) + 0x07800000u), base);
    const uint32_t bits = bitsOf(base);
    const uint32_t expBits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa = bits & 0x00000FFFu;
    const uint32_t nonsign = expBits + mantissa;
    return uint16_t((sign >> 16) | (shl1 > 0xFF000000u ? 0x7E00u : nonsign));
}

// Exact (every half is a float); keeps a NaN's sign and payload, which __half2float does not.
// A NaN is built on the bits, quieted as x86 quiets it: float arithmetic on a NaN gives the
// canonical NaN on NVIDIA GPUs, which is what the scaling below would do to it there.
CKPT_HOST_DEVICE inline float halfToFloat(uint16_t h)
{
    if ((h & 0x7C00u) == 0x7C00u && (h & 0x3FFu))
        return floatOf((uint32_t(h & 0x8000u) << 16) | 0x7FC00000u | (uint32_t(h & 0x3FFu) << 13));
    const uint32_t w = uint32_t(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two = w + w;
    const float normalized = mulRn(floatOf((two >> 4) + (0xE0u << 23)), floatOf(0x07800000u)); // 2^-112
    const float denormalized = addRn(floatOf((two >> 17) | (126u << 23)), -0.5f);
    return floatOf(sign | (two < (1u << 27) ? bitsOf(denormalized) : bitsOf(normalized)));
}

// float <-> double as x86's cvtss2sd / cvtsd2ss convert (a NaN quieted, its sign and payload
// kept, shifted or truncated), written on the bits for NaN because the GPU's conversions
// canonicalise it; every other value converts exactly (or rounds to nearest) on both.
CKPT_HOST_DEVICE inline double floatToDouble(float f)
{
    if (!isNan(f)) return double(f);
    const uint32_t u = bitsOf(f);
    return doubleOf((uint64_t(u & 0x80000000u) << 32) | 0x7FF8000000000000ull |
                    (uint64_t(u & 0x7FFFFFu) << 29));
}
CKPT_HOST_DEVICE inline float doubleToFloat(double d)
{
    if (!isNan(d)) return float(d);
    const uint64_t u = bitsOf(d);
    return floatOf(uint32_t((u >> 32) & 0x80000000u) | 0x7FC00000u | uint32_t((u >> 29) & 0x7FFFFFu));
}

// 2^e as a double, exactly, for the exponents float8 and e8m0 reach (-1074 < e < 1024).
CKPT_HOST_DEVICE inline double pow2(int e)
{
    return doubleOf(uint64_t(int64_t(e) + 1023) << 52);
}

CKPT_HOST_DEVICE inline double quietNan()
{
    return doubleOf(0x7FF8000000000000ull);
}
CKPT_HOST_DEVICE inline double infinity()
{
    return doubleOf(0x7FF0000000000000ull);
}

// A float8 byte from its format's definition: exponent and mantissa widths, bias, whether the
// all-ones exponent is IEEE inf/NaN (e5m2), and the fnuz kinds' single NaN at 0x80.
CKPT_HOST_DEVICE inline double decodeFp8(uint8_t v, int expBits, int mantBits, int bias, bool ieeeInf,
                                         bool fnuz)
{
    const bool sign = v & 0x80;
    const int e = (v >> mantBits) & ((1 << expBits) - 1);
    const int m = v & ((1 << mantBits) - 1);
    const int emax = (1 << expBits) - 1;
    if (fnuz && v == 0x80) return quietNan();
    if (ieeeInf && e == emax) return m ? quietNan() : (sign ? -infinity() : infinity());
    if (!ieeeInf && !fnuz && e == emax && m == (1 << mantBits) - 1) return quietNan();
    const double mag = e == 0 ? double(m) * pow2(1 - bias - mantBits)
                              : double((1 << mantBits) | m) * pow2(e - bias - mantBits);
    return sign ? -mag : mag;
}

// Any element as a double: float8 kinds decoded exactly, integers converted.
CKPT_HOST_DEVICE inline double toDouble(Scalar s, const uint8_t* p)
{
    switch (s) {
    case Scalar::F64:
        return load<double>(p);
    case Scalar::F32:
        return floatToDouble(load<float>(p));
    case Scalar::F16:
        return floatToDouble(halfToFloat(load<uint16_t>(p)));
    case Scalar::BF16:
        return floatToDouble(bfloat16ToFloat(load<uint16_t>(p)));
    case Scalar::F8E4M3FN:
        return decodeFp8(*p, 4, 3, 7, false, false);
    case Scalar::F8E5M2:
        return decodeFp8(*p, 5, 2, 15, true, false);
    case Scalar::F8E4M3FNUZ:
        return decodeFp8(*p, 4, 3, 8, false, true);
    case Scalar::F8E5M2FNUZ:
        return decodeFp8(*p, 5, 2, 16, false, true);
    case Scalar::F8E8M0:
        return *p == 255 ? quietNan() : pow2(int(*p) - 127);
    case Scalar::I64:
        return double(load<int64_t>(p));
    case Scalar::I32:
        return double(load<int32_t>(p));
    case Scalar::I16:
        return double(load<int16_t>(p));
    case Scalar::I8:
        return double(int8_t(*p));
    case Scalar::U8:
        return double(*p);
    case Scalar::U16:
        return double(load<uint16_t>(p));
    case Scalar::U32:
        return double(load<uint32_t>(p));
    case Scalar::U64:
        return double(load<uint64_t>(p));
    case Scalar::Bool:
        return *p ? 1.0 : 0.0;
    }
    return 0.0;
}

// Whether a cast between these types is defined: F64, F32, F16 and BF16, either way.
CKPT_HOST_DEVICE inline bool castable(Scalar s)
{
    return s == Scalar::F64 || s == Scalar::F32 || s == Scalar::F16 || s == Scalar::BF16;
}

// One element as a float: what every cast but the one to F64 goes through (F64 -> F16 rounds
// to float first, as torch's double -> c10::Half does). Any Scalar reads.
CKPT_HOST_DEVICE inline float toFloat(Scalar s, const uint8_t* p)
{
    switch (s) {
    case Scalar::F32:
        return load<float>(p);
    case Scalar::F16:
        return halfToFloat(load<uint16_t>(p));
    case Scalar::BF16:
        return bfloat16ToFloat(load<uint16_t>(p));
    default:
        return doubleToFloat(toDouble(s, p));
    }
}

// One element, as torch's .to(); `to` castable(), `from` any Scalar; same types copy.
CKPT_HOST_DEVICE inline void castOne(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst)
{
    if (from == to) {
        memcpy(dst, src, scalarSize(from));
        return;
    }
    if (to == Scalar::F64) {
        store<double>(dst, floatToDouble(toFloat(from, src)));
        return;
    }
    const float f = toFloat(from, src);
    if (to == Scalar::F32)
        store<float>(dst, f);
    else if (to == Scalar::F16)
        store<uint16_t>(dst, floatToHalf(f));
    else
        store<uint16_t>(dst, floatToBFloat16(f));
}

} // namespace ckpt::gpu::kernels
