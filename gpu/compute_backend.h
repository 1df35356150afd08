// The compute backend: operations over spans of mapped file bytes. The CPU implementation is
// always built and is the oracle; a CUDA implementation plugs in behind the same interface.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt::gpu {

// Element count of a shape (1 for a 0-d tensor) and whether strides describe row-major order.
uint64_t numelOf(const std::vector<int64_t>& shape);
bool isContiguous(const std::vector<int64_t>& shape, const std::vector<int64_t>& stride);

// A tensor as it lies in a storage: element size, shape, strides and offset in elements.
struct StridedView
{
    const uint8_t* base = nullptr;
    uint32_t elementSize = 1;
    std::vector<int64_t> shape;
    std::vector<int64_t> stride;
    int64_t offset = 0;

    uint64_t numel() const;
    bool contiguous() const;
};

class ComputeBackend
{
public:
    virtual ~ComputeBackend() = default;
    virtual std::string name() const = 0;
    // Copies logical elements [first, first + count) of `v`, in row-major order, to dst.
    virtual void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) = 0;
};

ComputeBackend& cpuBackend();

} // namespace ckpt::gpu
