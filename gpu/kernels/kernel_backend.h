// A ComputeBackend made of the shared kernels (algorithms.h) and a Device that supplies only
// memory, copies and the execution policy: the CUDA backend (gpu/cuda) and the host build CI runs
// (host_backend.cpp) are this one class over two devices, so how work is cut into staging-sized
// chunks, staged, reduced and merged is written once too.
//
// A Device provides:
//   exec()                       the Thrust execution policy kernels run under
//   staging()                    bytes one staged buffer holds
//   upload(slot, p, n)           host bytes [p, p + n) readable by kernels (slot 0..2)
//   output(n)                    a device buffer of n bytes for a kernel's result
//   download(dst, src, n)        device bytes to host memory, complete on return
//   counters(n)                  n device counters, zeroed
//   sync()                       all work done (before a result is read on the host)
#pragma once

#include "compute_backend.h"
#include "kernels/algorithms.h"

#include <algorithm>
#include <cstring>
#include <mutex>
#include <tuple>
#include <vector>

namespace ckpt::gpu::kernels {

// The geometry of a view, when a kernel can carry it.
inline bool layoutOf(const StridedView& v, Layout& l)
{
    if (v.shape.size() > size_t(kMaxDims)) return false;
    l.dims = int(v.shape.size());
    l.elementSize = v.elementSize;
    l.offset = v.offset;
    for (int d = 0; d < l.dims; ++d)
        l.shape[d] = v.shape[size_t(d)], l.stride[d] = v.stride[size_t(d)];
    return true;
}

// The storage elements a view touches: [lo, hi], in elements (empty views: lo > hi).
inline std::pair<long long, long long> spanOf(const StridedView& v)
{
    long long lo = v.offset, hi = v.offset;
    for (size_t d = 0; d < v.shape.size(); ++d) {
        if (v.shape[d] == 0) return {1, 0};
        const long long reach = (v.shape[d] - 1) * v.stride[d];
        (reach < 0 ? lo : hi) += reach;
    }
    return {lo, hi};
}

template <typename Device> class KernelBackend final : public ComputeBackend
{
public:
    template <typename... Args>
    explicit KernelBackend(std::string name, Args&&... args)
        : m_name(std::move(name)), m_device(std::forward<Args>(args)...)
    {
    }

    std::string name() const override { return m_name; }
    std::string device() const override { return m_device.describe(); }
    bool supports(Op op, Scalar type) const override
    {
        // Host memory in, host memory out: a staging round trip cannot beat the CPU's copy.
        if (op == Op::Gather && Device::kHostResident == false) return false;
        return cpuDefines(op, type);
    }

    void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        const uint32_t es = v.elementSize;
        for (uint64_t done = 0; done < count;) {
            const uint64_t n = std::min(count - done, m_device.staging() / es);
            const uint8_t* d = stageView(v, first + done, n, 0);
            m_device.download(dst + done * es, d, n * es);
            done += n;
        }
    }

    void cast(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count) override
    {
        if (!cpuDefines(Op::Cast, from) || !cpuDefines(Op::Cast, to))
            throw BackendError("cast: only F64, F32, F16 and BF16");
        std::lock_guard<std::mutex> lock(m_mutex);
        const uint32_t fs = scalarSize(from), ts = scalarSize(to);
        const uint64_t per = m_device.staging() / std::max(fs, ts);
        for (uint64_t first = 0; first < count; first += per) {
            const uint64_t n = std::min(per, count - first);
            const uint8_t* in = m_device.upload(0, src + first * fs, n * fs);
            uint8_t* out = m_device.output(n * ts);
            kernels::cast(m_device.exec(), from, to, in, out, n);
            m_device.download(dst + first * ts, out, n * ts);
        }
    }

    Stats stats(const StridedView& v, Scalar t) override
    {
        std::lock_guard<std::mutex> lock(m_mutex);
        Moments m;
        chunked(v, [&](const uint8_t* p, uint64_t n) { m = merge(m, moments(m_device.exec(), p, n, t)); });
        return toStats(m);
    }

    Histogram histogram(const StridedView& v, Scalar t, int bins, bool log10, double lo, double hi) override
    {
        Histogram h;
        h.log10 = log10;
        h.bins.assign(size_t(std::max(bins, 1)), 0);
        // The range, when not given, is the CPU's (compute_backend.h: valueRange).
        if (!(lo < hi)) std::tie(lo, hi) = valueRange(v, t, log10).bounds();
        h.lo = lo, h.hi = hi;
        std::lock_guard<std::mutex> lock(m_mutex);
        const int nb = int(h.bins.size());
        // The counters live in one staging-sized area and come back through one buffer.
        if ((uint64_t(nb) + 2) * sizeof(unsigned long long) > m_device.staging())
            throw BackendError("histogram: " + std::to_string(nb) +
                               " bins are more than a device buffer holds");
        unsigned long long* c = m_device.counters(size_t(nb) + 2);
        chunked(v, [&](const uint8_t* p, uint64_t n) {
            kernels::histogram(m_device.exec(), p, n, t, nb, log10, lo, hi, c);
        });
        std::vector<unsigned long long> got(size_t(nb) + 2);
        m_device.download(reinterpret_cast<uint8_t*>(got.data()), reinterpret_cast<const uint8_t*>(c),
                          got.size() * sizeof(unsigned long long));
        std::copy(got.begin(), got.begin() + nb, h.bins.begin());
        h.zeros = got[size_t(nb)], h.nonFinite = got[size_t(nb) + 1];
        return h;
    }

    DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) override
    {
        const uint64_t n = a.numel();
        if (b.numel() != n) throw BackendError("diff: tensors have different element counts");
        std::lock_guard<std::mutex> lock(m_mutex);
        const uint64_t per = m_device.staging() / std::max(a.elementSize, b.elementSize);
        DiffAcc acc;
        for (uint64_t first = 0; first < n; first += per) {
            const uint64_t len = std::min(per, n - first);
            const uint8_t* pa = stageView(a, first, len, 0);
            const uint8_t* pb = stageView(b, first, len, 1);
            acc = merge(acc, kernels::diff(m_device.exec(), pa, ta, pb, tb, len));
        }
        return toDiffStats(acc);
    }

    Device& dev() { return m_device; }

private:
    // Elements [first, first + n) of v, contiguous in device memory (slot 0 or 1; slot 2 holds a
    // strided view's storage span while it is gathered on the device).
    const uint8_t* stageView(const StridedView& v, uint64_t first, uint64_t n, int slot)
    {
        const uint32_t es = v.elementSize;
        if (v.contiguous()) return m_device.upload(slot, v.base + (uint64_t(v.offset) + first) * es, n * es);
        Layout l;
        const auto [lo, hi] = spanOf(v);
        if (!layoutOf(v, l) || lo < 0 || uint64_t(hi - lo + 1) * es > m_device.staging()) {
            // Too many dimensions, or a span larger than a staging buffer: the CPU packs it.
            m_packed.resize(n * es);
            cpuBackend().gather(v, first, n, m_packed.data());
            return m_device.upload(slot, m_packed.data(), n * es);
        }
        const uint8_t* span = m_device.upload(2, v.base + uint64_t(lo) * es, uint64_t(hi - lo + 1) * es);
        uint8_t* out = m_device.output(n * es, slot);
        kernels::gather(m_device.exec(), l, span, lo, first, n, out);
        return out;
    }

    // fn(device pointer, element count) over the whole view, a staging buffer at a time.
    template <typename Fn> void chunked(const StridedView& v, Fn fn)
    {
        const uint64_t n = v.numel(), per = m_device.staging() / v.elementSize;
        for (uint64_t first = 0; first < n; first += per) {
            const uint64_t len = std::min(per, n - first);
            fn(stageView(v, first, len, 0), len);
        }
    }

    std::string m_name;
    Device m_device;
    std::mutex m_mutex; // one call at a time on this job's buffers; jobs have their own backends
    std::vector<uint8_t> m_packed;
};

} // namespace ckpt::gpu::kernels
