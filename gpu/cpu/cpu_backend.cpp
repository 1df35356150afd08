#include "compute_backend.h"

#include <cstring>

namespace ckpt::gpu {

uint64_t numelOf(const std::vector<int64_t>& shape)
{
    uint64_t n = 1;
    for (int64_t s : shape)
        n *= uint64_t(s);
    return n;
}

bool isContiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride)
{
    int64_t expected = 1;
    for (size_t i = shape.size(); i-- > 0;) {
        if (shape[i] == 1) continue;
        if (stride[i] != expected) return false;
        expected *= shape[i];
    }
    return true;
}

uint64_t StridedView::numel() const
{
    return numelOf(shape);
}

bool StridedView::contiguous() const
{
    return isContiguous(shape, stride);
}

namespace {

class CpuBackend final : public ComputeBackend
{
public:
    std::string name() const override { return "cpu"; }

    void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) override
    {
        const uint64_t es = v.elementSize;
        if (count == 0) return;
        if (v.contiguous()) {
            std::memcpy(dst, v.base + (uint64_t(v.offset) + first) * es, count * es);
            return;
        }
        const size_t nd = v.shape.size();
        // Odometer over the index, starting at `first`; the innermost dimension is copied in
        // runs (one memcpy when its stride is 1, element by element otherwise).
        std::vector<int64_t> idx(nd, 0);
        uint64_t rest = first;
        for (size_t d = nd; d-- > 0;) {
            idx[d] = int64_t(rest % uint64_t(v.shape[d]));
            rest /= uint64_t(v.shape[d]);
        }
        const int64_t inner = v.shape[nd - 1];
        const int64_t innerStride = v.stride[nd - 1];
        uint64_t done = 0;
        while (done < count) {
            int64_t off = v.offset;
            for (size_t d = 0; d < nd; ++d)
                off += idx[d] * v.stride[d];
            const uint64_t run = std::min<uint64_t>(uint64_t(inner - idx[nd - 1]), count - done);
            const uint8_t* src = v.base + uint64_t(off) * es;
            if (innerStride == 1) {
                std::memcpy(dst + done * es, src, run * es);
            } else {
                for (uint64_t i = 0; i < run; ++i)
                    std::memcpy(dst + (done + i) * es, src + i * uint64_t(innerStride) * es, es);
            }
            done += run;
            idx[nd - 1] += int64_t(run);
            for (size_t d = nd - 1; d > 0 && idx[d] == v.shape[d]; --d) {
                idx[d] = 0;
                ++idx[d - 1];
            }
        }
    }
};

} // namespace

ComputeBackend& cpuBackend()
{
    static CpuBackend backend;
    return backend;
}

} // namespace ckpt::gpu
