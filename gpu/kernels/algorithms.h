// Every compute operation, written once over Thrust, for whichever device system the including
// translation unit compiles it for: nvcc with a CUDA policy (gpu/cuda), g++ with the OpenMP or
// C++ host policy (gpu/kernels/host_backend.cpp, what CI executes). Pointers are the device's
// own (device memory on CUDA, host memory on the host). One thread per element; the reductions
// are Thrust's (CUB's warp and block reductions on CUDA) over the associative merges of
// reductions.h. Nothing here allocates but Thrust's temporary storage, which the policy's
// allocator provides.
#pragma once

#include "kernels/elements.h"
#include "kernels/reductions.h"

#include <cuda/atomic>
#include <thrust/for_each.h>
#include <thrust/iterator/counting_iterator.h>
#include <thrust/iterator/discard_iterator.h>
#include <thrust/iterator/transform_iterator.h>
#include <thrust/reduce.h>
#include <thrust/transform_reduce.h>

namespace ckpt::gpu::kernels {

using Index = unsigned long long;

// A strided view's geometry by value, so a kernel can carry it: element size, shape, strides
// and offset in elements. Views of more dimensions than this are gathered on the CPU.
constexpr int kMaxDims = 12;
struct Layout
{
    int dims = 0;
    uint32_t elementSize = 1;
    long long offset = 0;
    long long shape[kMaxDims] = {}, stride[kMaxDims] = {};
};

// Where logical element i (row-major) lies, in elements from the storage's start.
CKPT_HOST_DEVICE inline long long storageIndex(const Layout& l, Index i)
{
    long long at = l.offset;
    for (int d = l.dims; d-- > 0;) {
        const Index extent = Index(l.shape[d]);
        at += (long long)(i % extent) * l.stride[d];
        i /= extent;
    }
    return at;
}

struct CastElement
{
    Scalar from, to;
    uint32_t fromSize, toSize;
    const uint8_t* src;
    uint8_t* dst;
    CKPT_HOST_DEVICE void operator()(Index i) const
    {
        castOne(from, to, src + i * fromSize, dst + i * toSize);
    }
};

// Elements [0, n) of src (type `from`) into dst (type `to`); both castable().
template <typename Exec>
void cast(const Exec& exec, Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t n)
{
    thrust::for_each_n(exec, thrust::counting_iterator<Index>(0), n,
                       CastElement{from, to, scalarSize(from), scalarSize(to), src, dst});
}

struct GatherElement
{
    Layout layout;
    Index first;
    const uint8_t* base; // the storage (or the part of it that starts at element `origin`)
    long long origin;
    uint8_t* dst;
    CKPT_HOST_DEVICE void operator()(Index i) const
    {
        const uint32_t es = layout.elementSize;
        const long long at = storageIndex(layout, first + i) - origin;
        memcpy(dst + i * es, base + at * es, es);
    }
};

// Logical elements [first, first + count) of the view into dst, in row-major order. `base`
// holds the storage from element `origin` on (0: the whole storage).
template <typename Exec>
void gather(const Exec& exec, const Layout& layout, const uint8_t* base, long long origin, uint64_t first,
            uint64_t count, uint8_t* dst)
{
    thrust::for_each_n(exec, thrust::counting_iterator<Index>(0), count,
                       GatherElement{layout, first, base, origin, dst});
}

struct ElementMoments
{
    const uint8_t* p;
    Scalar type;
    uint32_t size;
    CKPT_HOST_DEVICE Moments operator()(Index i) const { return momentsOf(toDouble(type, p + i * size)); }
};
struct MergeMoments
{
    CKPT_HOST_DEVICE Moments operator()(const Moments& a, const Moments& b) const { return merge(a, b); }
};

template <typename Exec> Moments moments(const Exec& exec, const uint8_t* p, uint64_t n, Scalar type)
{
    return thrust::transform_reduce(exec, thrust::counting_iterator<Index>(0),
                                    thrust::counting_iterator<Index>(n),
                                    ElementMoments{p, type, scalarSize(type)}, Moments{}, MergeMoments{});
}

struct ElementPair
{
    const uint8_t *a, *b;
    Scalar ta, tb;
    uint32_t ea, eb;
    CKPT_HOST_DEVICE DiffAcc operator()(Index i) const
    {
        const uint8_t *x = a + i * ea, *y = b + i * eb;
        return diffOf(toDouble(ta, x), toDouble(tb, y), ta == tb && sameBytes(x, y, ea));
    }
};
struct MergeDiff
{
    CKPT_HOST_DEVICE DiffAcc operator()(const DiffAcc& x, const DiffAcc& y) const { return merge(x, y); }
};

template <typename Exec>
DiffAcc diff(const Exec& exec, const uint8_t* a, Scalar ta, const uint8_t* b, Scalar tb, uint64_t n)
{
    return thrust::transform_reduce(
        exec, thrust::counting_iterator<Index>(0), thrust::counting_iterator<Index>(n),
        ElementPair{a, b, ta, tb, scalarSize(ta), scalarSize(tb)}, DiffAcc{}, MergeDiff{});
}

// Histogram counters: `bins` bins, then the zeros of a log10 histogram, then the non-finite.
struct BinElement
{
    const uint8_t* p;
    Scalar type;
    uint32_t size;
    bool log10;
    double lo, hi, scale;
    int bins;
    unsigned long long* counters;
    CKPT_HOST_DEVICE void operator()(Index i) const
    {
        const long long b = binOf(toDouble(type, p + i * size), log10, lo, hi, scale, bins);
        const long long slot = b >= 0 ? b : b == -3 ? bins : b == -2 ? bins + 1 : -1;
        if (slot < 0) return;
        cuda::atomic_ref<unsigned long long, cuda::thread_scope_device> c(counters[slot]);
        c.fetch_add(1, cuda::std::memory_order_relaxed);
    }
};

// Adds elements [0, n) to `counters` (bins + 2 of them, see BinElement), over [lo, hi].
template <typename Exec>
void histogram(const Exec& exec, const uint8_t* p, uint64_t n, Scalar type, int bins, bool log10, double lo,
               double hi, unsigned long long* counters)
{
    thrust::for_each_n(
        exec, thrust::counting_iterator<Index>(0), n,
        BinElement{p, type, scalarSize(type), log10, lo, hi, double(bins) / (hi - lo), bins, counters});
}

} // namespace ckpt::gpu::kernels
