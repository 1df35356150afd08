// Every element type PyTorch can save, with its torch name, size, legacy storage class and
// safetensors code. One table so the reader, the writers and the CLI never disagree.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace ckpt::torch {

enum class DType : uint8_t {
    Float64,
    Float32,
    Float16,
    BFloat16,
    Int64,
    Int32,
    Int16,
    Int8,
    UInt8,
    Bool,
    Complex128,
    Complex64,
    Complex32,
    QInt8,
    QUInt8,
    QInt32,
    QUInt4x2,
    QUInt2x4,
    Float8_e5m2,
    Float8_e4m3fn,
    Float8_e5m2fnuz,
    Float8_e4m3fnuz,
    Float8_e8m0fnu,
    Float4_e2m1fn_x2,
    Bits8,
    Bits16,
    Bits1x8,
    Bits2x4,
    Bits4x2,
    UInt16,
    UInt32,
    UInt64,
    Count
};

struct DTypeInfo
{
    DType dtype;
    std::string_view name;         // torch name without "torch."
    uint32_t size;                 // bytes per element
    std::string_view storageClass; // legacy typed storage, empty for "new" dtypes
    std::string_view safetensors;  // code, empty when safetensors cannot hold it
    bool isFloat;
};

const DTypeInfo& info(DType d);
inline std::string_view name(DType d)
{
    return info(d).name;
}
inline uint32_t elementSize(DType d)
{
    return info(d).size;
}

std::optional<DType> fromName(std::string_view torchName);         // "float32"
std::optional<DType> fromStorageClass(std::string_view className); // "FloatStorage"
std::optional<DType> fromSafetensors(std::string_view code);       // "F32"

} // namespace ckpt::torch
