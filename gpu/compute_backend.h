// The compute backend: operations over spans of mapped file bytes. The CPU implementation is
// always built and is the oracle; a CUDA implementation plugs in behind the same interface
// when built (CKPT_CUDA) and a device answers. Results are plain values.
#pragma once

#include "kernels/elements.h"
#include "scalar.h"

#include <cstdint>
#include <limits>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
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

// Failures inside the backend (a CUDA call that failed, a device that vanished).
class BackendError : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

// A device gave a result that its CPU recomputation contradicts (see selfChecked). Not a
// BackendError: continuing on the CPU is not enough, since earlier results of the job came from
// the same device; the job is redone on the CPU (runOnCpuIfWrong).
class SelfCheckFailed : public std::runtime_error
{
public:
    using std::runtime_error::runtime_error;
};

// count/zeros/nans/infs over all elements; min, max, mean, std (unbiased, as torch.std) over the
// non-NaN ones, accumulated in fp64 with per-block shifts and Chan's merge, so large offsets do
// not cancel; absmax and l2 likewise over non-NaN elements.
struct Stats
{
    uint64_t count = 0, zeros = 0, nans = 0, infs = 0;
    double min = 0, max = 0, mean = 0, m2 = 0, absmax = 0, sumsq = 0;

    uint64_t valid() const { return count - nans; }
    double std() const;
    double l2() const;
    void merge(const Stats& other);
};

// `bins` equal bins over [lo, hi] of x (or of log10|x| when log10 is set; zeros and
// non-finite values are counted apart). lo/hi default to the data's own range.
struct Histogram
{
    std::vector<uint64_t> bins;
    double lo = 0, hi = 0;
    bool log10 = false;
    uint64_t zeros = 0, nonFinite = 0;

    // Its fields as `ckpt stats --json` and Python name them (model/ops/describe.h).
    template <class V> static void describe(V& v)
    {
        v("lo", &Histogram::lo);
        v("hi", &Histogram::hi);
        v("log10", &Histogram::log10);
        v("bins", &Histogram::bins);
        v("zeros", &Histogram::zeros);
        v("non_finite", &Histogram::nonFinite);
    }
};

// The range of x (or of log10|x|) over the finite (for log10: finite and non-zero) elements:
// what histogram() bins over when it is given no lo/hi. Ranges of a tensor's parts merge, so
// a tensor read in chunks gets the same bins as one histogram over all of it.
struct ValueRange
{
    double lo = std::numeric_limits<double>::infinity(), hi = -std::numeric_limits<double>::infinity();

    void merge(const ValueRange& o);
    // histogram()'s lo and hi for this range: [0, 1] when empty, [lo, lo + 1] when one value.
    std::pair<double, double> bounds() const;
};
// Computed on the CPU (by the oracle's own loop), whatever backend bins the values.
ValueRange valueRange(const StridedView& v, Scalar type, bool log10);

// Element-wise comparison of two tensors of one shape, over pairs where neither is NaN.
struct DiffStats
{
    uint64_t count = 0, bitwiseEqual = 0, nanMismatch = 0;
    double maxAbsDiff = 0, sumSqDiff = 0, sumSqA = 0, sumSqB = 0, dot = 0;

    double l2Diff() const;
    double relL2() const;  // ||a-b|| / ||a||
    double cosine() const; // a.b / (||a|| ||b||)
    void merge(const DiffStats& other);
};

enum class Device { Auto, Cpu, Cuda };

// The operations of a backend, for supports().
enum class Op { Gather, Cast, Stats, Histogram, Diff };

// Whether the CPU kernels define `op` on `type`: casts between F64/F32/F16/BF16 only, the
// others on every Scalar. What a backend cannot run on its own device it hands to the CPU.
bool cpuDefines(Op op, Scalar type);

// One job's compute context. makeBackend() makes a fresh one per job: a CUDA instance owns its
// device binding, streams and pinned staging buffers, so two jobs never share buffers. Operations
// may be called from any thread (a writer's workers call fill() concurrently): the CPU backend is
// stateless, the CUDA one binds its device on the calling thread and serialises its calls.
class ComputeBackend
{
public:
    virtual ~ComputeBackend() = default;
    virtual std::string name() const = 0;   // "cpu" or "cuda"
    virtual std::string device() const = 0; // "16 CPU threads", "NVIDIA H100 (sm_90)"

    // Whether `op` on elements of `type` runs on this backend's own device. False means the
    // backend hands it to the CPU (a CUDA gather of host memory into host memory, binning) or,
    // where cpuDefines() is false too, that nobody can: callers plan chunks and choose where a
    // step runs from this, instead of asking the backend's name.
    virtual bool supports(Op op, Scalar type) const = 0;

    // Copies logical elements [first, first + count) of `v`, in row-major order, to dst.
    virtual void gather(const StridedView& v, uint64_t first, uint64_t count, uint8_t* dst) = 0;
    // F64/F32/F16/BF16 in both directions, bit-identical to torch's .to().
    virtual void cast(Scalar from, Scalar to, const uint8_t* src, uint8_t* dst, uint64_t count) = 0;
    virtual Stats stats(const StridedView& v, Scalar type) = 0;
    virtual Histogram histogram(const StridedView& v, Scalar type, int bins, bool log10, double lo,
                                double hi) = 0;
    virtual DiffStats diff(const StridedView& a, Scalar ta, const StridedView& b, Scalar tb) = 0;

    // The warnings channel: what went wrong without failing the job (a device that failed and
    // was replaced by the CPU), each handed out once. Library code never prints; the operation
    // adds these to its result's warnings and the CLI or GUI shows them.
    virtual std::vector<std::string> takeWarnings() { return {}; }
};

ComputeBackend& cpuBackend();

// The backend for a request. Auto is the CPU until a measurement on a GPU has shown the GPU
// faster for checkpoint work (autoChoice() says so; none is recorded in bench/RESULTS.md yet):
// the data lives in host memory, and copies, casts and reductions over it are bound by memory
// and PCIe bandwidth that the CPU already reaches. Cuda makes the CUDA backend (CKPT_CUDA_DEVICE
// picks the device, default 0), self-checked (selfChecked) and falling back to the CPU when the
// device fails mid-job, which takeWarnings() then says; when no device answers it throws
// BackendError. `reason` says what was chosen and why, in plain words.
std::shared_ptr<ComputeBackend> makeBackend(Device want, std::string* reason);
// What makeBackend wraps a CUDA backend in: runs on `primary` until it throws BackendError, then
// on the CPU. Public so the fallback can be tested without a device.
std::shared_ptr<ComputeBackend> withCpuFallback(std::shared_ptr<ComputeBackend> primary);
bool cudaBuilt();

// What the machine offers, found without a context or an allocation (driver and device
// queries only), so it is cheap enough for `ckpt --version` and a GUI status line. Computed
// once per process; never call it on a GUI thread all the same (the driver may be slow).
struct DeviceProbe
{
    bool cudaBuilt = false;
    int devices = 0;
    std::string name;   // the first device, "NVIDIA H100 80GB HBM3 (sm_90)"
    std::string reason; // why there is none, in plain words
};
const DeviceProbe& probeDevices();
// What --device auto runs on and why, in plain words, e.g. "cpu: 16 CPU threads (auto: ...)".
std::string autoChoice();

// The self-check of a device's results (a GPU can make a job slower, never wrong): calls to
// `primary` whose sequence number per operation is 0 or a multiple of `every` are recomputed on
// the CPU and compared, bit for bit where the result is exact (casts, gathers, counts,
// minima and maxima, histogram bins) and within agree()'s tolerance for floating sums; the last
// elements of every cast and gather are compared too. A mismatch is one warning and
// SelfCheckFailed. `every` = 1 checks everything; 0 turns the check off.
std::shared_ptr<ComputeBackend> selfChecked(std::shared_ptr<ComputeBackend> primary, uint64_t every);
// CKPT_GPU_VERIFY: "sample" (default, every 16th call), "full" or "off".
uint64_t selfCheckEvery();

// The contracts the parity suite and the self-check share.
bool agree(const Stats& device, const Stats& cpu, std::string* why = nullptr);
bool agree(const DiffStats& device, const DiffStats& cpu, std::string* why = nullptr);
bool agree(const Histogram& device, const Histogram& cpu, std::string* why = nullptr);

// Runs job(false); when a self-check found the device wrong (SelfCheckFailed), runs the whole
// job again as job(true), which must use the CPU alone, and puts the device's warning first in
// its result's warnings: the output is then the CPU's alone. The first run's partial outputs are
// its own to clean up (uncommitted output transactions, values).
template <typename Job> auto runOnCpuIfWrong(Job job) -> decltype(job(false))
{
    try {
        return job(false);
    } catch (const SelfCheckFailed& e) {
        auto result = job(true);
        result.warnings.insert(result.warnings.begin(),
                               std::string(e.what()) +
                                   "; the job was redone on the CPU and its output is the CPU's");
        return result;
    }
}

} // namespace ckpt::gpu
