#include "cast.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

namespace ckpt::gpu {

namespace {

uint32_t bitsOf(float f)
{
    uint32_t u;
    std::memcpy(&u, &f, 4);
    return u;
}

float floatOf(uint32_t u)
{
    float f;
    std::memcpy(&f, &u, 4);
    return f;
}

template <typename T> T load(const uint8_t* p)
{
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

template <typename T> void store(uint8_t* p, T v)
{
    std::memcpy(p, &v, sizeof v);
}

float toFloat(Scalar s, const uint8_t* p)
{
    switch (s) {
    case Scalar::F64:
        return float(load<double>(p));
    case Scalar::F32:
        return load<float>(p);
    case Scalar::F16:
        return halfToFloat(load<uint16_t>(p));
    case Scalar::BF16:
        return bfloat16ToFloat(load<uint16_t>(p));
    default:
        return float(toDouble(s, p));
    }
}

} // namespace

// Round to nearest even. NaN: PyTorch's vectorised CPU conversion (what .to() runs on real
// tensors) writes 0xFFFF for every NaN; its scalar c10::BFloat16 would write 0x7FC0. We follow
// the vectorised path, verified against recorded .to() output.
uint16_t floatToBFloat16(float f)
{
    if (std::isnan(f)) return 0xFFFF;
    const uint32_t u = bitsOf(f);
    return uint16_t((u + ((u >> 16) & 1) + 0x7FFF) >> 16);
}

float bfloat16ToFloat(uint16_t h)
{
    return floatOf(uint32_t(h) << 16);
}

// The branch-free IEEE conversion PyTorch uses (c10 half, after the FP16 library): scaling
// through float arithmetic performs the round-to-nearest-even, including subnormals.
uint16_t floatToHalf(float f)
{
    // NaN as x86 F16C does (and so PyTorch's vectorised .to()): quiet bit set, payload truncated.
    if (std::isnan(f)) {
        const uint32_t u = bitsOf(f);
        return uint16_t(((u >> 16) & 0x8000u) | 0x7E00u | ((u >> 13) & 0x3FFu));
    }
    const float scaleToInf = floatOf(0x77800000u);  // 2^112
    const float scaleToZero = floatOf(0x08800000u); // 2^-110
    float base = (std::fabs(f) * scaleToInf) * scaleToZero;
    const uint32_t w = bitsOf(f);
    const uint32_t shl1 = w + w;
    const uint32_t sign = w & 0x80000000u;
    uint32_t bias = shl1 & 0xFF000000u;
    if (bias < 0x71000000u) bias = 0x71000000u;
    base = floatOf((bias >> 1) + 0x07800000u) + base;
    const uint32_t bits = bitsOf(base);
    const uint32_t expBits = (bits >> 13) & 0x00007C00u;
    const uint32_t mantissa = bits & 0x00000FFFu;
    const uint32_t nonsign = expBits + mantissa;
    return uint16_t((sign >> 16) | (shl1 > 0xFF000000u ? 0x7E00u : nonsign));
}

float halfToFloat(uint16_t h)
{
    const uint32_t w = uint32_t(h) << 16;
    const uint32_t sign = w & 0x80000000u;
    const uint32_t two = w + w;
    const float normalized = floatOf((two >> 4) + (0xE0u << 23)) * floatOf(0x07800000u); // 2^-112
    const float denormalized = floatOf((two >> 17) | (126u << 23)) - 0.5f;
    const uint32_t result = sign | (two < (1u << 27) ? bitsOf(denormalized) : bitsOf(normalized));
    return floatOf(result);
}

void castElements(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count)
{
    const uint32_t fs = scalarSize(from), ts = scalarSize(to);
    if (from == to) {
        std::memcpy(dst, src, count * fs);
        return;
    }
    for (uint64_t i = 0; i < count; ++i, src += fs, dst += ts) {
        if (to == Scalar::F64) {
            store<double>(dst, from == Scalar::F64 ? load<double>(src) : double(toFloat(from, src)));
            continue;
        }
        const float f = toFloat(from, src);
        switch (to) {
        case Scalar::F32:
            store<float>(dst, f);
            break;
        case Scalar::F16:
            store<uint16_t>(dst, floatToHalf(from == Scalar::F64 ? float(load<double>(src)) : f));
            break;
        case Scalar::BF16:
            store<uint16_t>(dst, floatToBFloat16(f));
            break;
        default:
            throw std::invalid_argument("castElements: only F64, F32, F16 and BF16 outputs");
        }
    }
}

} // namespace ckpt::gpu
