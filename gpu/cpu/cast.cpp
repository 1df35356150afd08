#include "cast.h"

#include <cstring>
#include <stdexcept>

namespace ckpt::gpu {

void castElements(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count)
{
    const uint32_t fs = scalarSize(from), ts = scalarSize(to);
    if (from == to) {
        if (count) std::memcpy(dst, src, count * fs);
        return;
    }
    if (!kernels::castable(to))
        throw std::invalid_argument("castElements: only F64, F32, F16 and BF16 outputs");
    for (uint64_t i = 0; i < count; ++i, src += fs, dst += ts)
        kernels::castOne(from, to, src, dst);
}

double toDouble(Scalar s, const uint8_t* p)
{
    return kernels::toDouble(s, p);
}

} // namespace ckpt::gpu
