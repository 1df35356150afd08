// Named tensors whose bytes are produced on demand, from any checkpoint family: the model of a
// tag as the family's layout describes it (the consolidated model of a ZeRO tag, the tensors of
// a file or of a Hugging Face folder, ...). Export, stats and diff all consume this one shape.
#pragma once

#include "compute_backend.h"
#include "layout/family.h"
#include "ops/job.h"
#include "torch/dtype.h"
#include "torch/out_tensor.h"

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::ops {

struct SourceTensor
{
    torch::OutTensor tensor;
    std::string aliasOf; // same data as that tensor (tied weights); tensor.fill is empty
    // When the bytes already lie contiguous in a mapped file with no cast: read them in place.
    const uint8_t* direct = nullptr;
    // All its bytes are one uncast run of one stored tensor (a whole tensor, or one parameter
    // inside a rank's flat ZeRO partition): inPlace(0) gives them, if that tensor is mapped and
    // contiguous. Known without reading a byte.
    bool oneRun = false;
    // In-place reading of a tensor made of several mapped pieces (a ZeRO partition per rank):
    // the address of logical element `first` and, in *run, how many elements follow it
    // contiguously there; nullptr when those bytes must go through fill (a cast, N-d chunks, a
    // compressed record). Empty when the tensor never lies in place.
    std::function<const uint8_t*(uint64_t first, uint64_t* run)> inPlace;
    // Lets the pages of elements [first, first + count), read through inPlace, go (bounded RSS).
    std::function<void(uint64_t first, uint64_t count)> releaseInPlace;
};

struct TensorSet
{
    std::string label; // "CHECKPOINT (tag global_step4)" or the file
    std::string tag;   // checkpoints: the tag read
    std::vector<SourceTensor> tensors;
    std::vector<std::string> skipped; // "'name' (why)"
    std::vector<std::string> warnings;
    std::vector<std::pair<std::string, std::string>> exportFiles; // layout::Tag::exportFiles
    std::shared_ptr<void> keepAlive;
};

struct SourceOptions
{
    std::string tag; // empty: latest, or the only one
    // Floating tensors' dtype; nullopt: what the family exports by default (Tag::exportDtype:
    // fp32 for consolidated ZeRO tags, as zero_to_fp32; as stored for files and HF folders).
    std::optional<torch::DType> dtype;
    bool excludeFrozen = false;
    bool all = false;                             // the tag's other tensors too (optimizer state, ...)
    bool raw = false;                             // the model as stored (Tag::rawModel), not as mapped
    std::vector<std::string> ignore;              // fnmatch globs over `/` paths: a match drops the subtree
    std::shared_ptr<gpu::ComputeBackend> backend; // casts; nullptr = CPU
    layout::OpenObserver opening;                 // parsing the tag's files: progress and cancel
};

// An observer that shows the parsing of a tag's files as the first phase of a job ("reading
// `label`: file"), and stops it between two files when the job is cancelled.
layout::OpenObserver openingObserver(const ProgressSink& progress, const CancelToken& cancel,
                                     const std::string& label);

// The model tensors of one tag of an opened checkpoint, any family: what export writes, stats
// and diff read. The set keeps the opened checkpoint alive. Throws Error on damage.
TensorSet tagTensors(std::shared_ptr<const layout::OpenedCheckpoint> opened, const layout::Tag& tag,
                     const SourceOptions& options);
// Opens `path` (through the family registry, only the tag asked for) and gives its tensors.
TensorSet anyTensors(const std::string& path, const SourceOptions& options);
// The same; kept for callers that know what they hold (a DeepSpeed folder, a single file).
TensorSet checkpointTensors(const std::string& path, const SourceOptions& options);
TensorSet fileTensors(const std::string& path);
// The tensors of one file an opened checkpoint holds (a rank file's own tensors): from its parsed
// form, never parsed again while the set keeps it.
TensorSet fileTensors(const layout::FileSet& files, const std::string& id);

std::optional<gpu::Scalar> scalarOf(torch::DType d);

} // namespace ckpt::ops
