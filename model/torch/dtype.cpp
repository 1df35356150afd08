#include "torch/dtype.h"

#include <array>

namespace ckpt::torch {

namespace {
using D = DType;
// Order matches the enum.
constexpr std::array<DTypeInfo, size_t(D::Count)> kTable = {{
    {D::Float64, "float64", 8, "DoubleStorage", "F64", true},
    {D::Float32, "float32", 4, "FloatStorage", "F32", true},
    {D::Float16, "float16", 2, "HalfStorage", "F16", true},
    {D::BFloat16, "bfloat16", 2, "BFloat16Storage", "BF16", true},
    {D::Int64, "int64", 8, "LongStorage", "I64", false},
    {D::Int32, "int32", 4, "IntStorage", "I32", false},
    {D::Int16, "int16", 2, "ShortStorage", "I16", false},
    {D::Int8, "int8", 1, "CharStorage", "I8", false},
    {D::UInt8, "uint8", 1, "ByteStorage", "U8", false},
    {D::Bool, "bool", 1, "BoolStorage", "BOOL", false},
    {D::Complex128, "complex128", 16, "ComplexDoubleStorage", "", false},
    {D::Complex64, "complex64", 8, "ComplexFloatStorage", "C64", false},
    {D::Complex32, "complex32", 4, "", "", false},
    {D::QInt8, "qint8", 1, "QInt8Storage", "", false},
    {D::QUInt8, "quint8", 1, "QUInt8Storage", "", false},
    {D::QInt32, "qint32", 4, "QInt32Storage", "", false},
    {D::QUInt4x2, "quint4x2", 1, "QUInt4x2Storage", "", false},
    {D::QUInt2x4, "quint2x4", 1, "QUInt2x4Storage", "", false},
    {D::Float8_e5m2, "float8_e5m2", 1, "", "F8_E5M2", true},
    {D::Float8_e4m3fn, "float8_e4m3fn", 1, "", "F8_E4M3", true},
    {D::Float8_e5m2fnuz, "float8_e5m2fnuz", 1, "", "F8_E5M2FNUZ", true},
    {D::Float8_e4m3fnuz, "float8_e4m3fnuz", 1, "", "F8_E4M3FNUZ", true},
    {D::Float8_e8m0fnu, "float8_e8m0fnu", 1, "", "F8_E8M0", true},
    {D::Float4_e2m1fn_x2, "float4_e2m1fn_x2", 1, "", "", false},
    {D::Bits8, "bits8", 1, "", "", false},
    {D::Bits16, "bits16", 2, "", "", false},
    {D::Bits1x8, "bits1x8", 1, "", "", false},
    {D::Bits2x4, "bits2x4", 1, "", "", false},
    {D::Bits4x2, "bits4x2", 1, "", "", false},
    {D::UInt16, "uint16", 2, "", "U16", false},
    {D::UInt32, "uint32", 4, "", "U32", false},
    {D::UInt64, "uint64", 8, "", "U64", false},
}};
} // namespace

const DTypeInfo& info(DType d)
{
    return kTable[size_t(d)];
}

std::optional<DType> fromName(std::string_view n)
{
    for (const auto& i : kTable)
        if (i.name == n) return i.dtype;
    return std::nullopt;
}

std::optional<DType> fromStorageClass(std::string_view c)
{
    for (const auto& i : kTable)
        if (!i.storageClass.empty() && i.storageClass == c) return i.dtype;
    return std::nullopt;
}

std::optional<DType> fromSafetensors(std::string_view code)
{
    for (const auto& i : kTable)
        if (!i.safetensors.empty() && i.safetensors == code) return i.dtype;
    return std::nullopt;
}

} // namespace ckpt::torch
