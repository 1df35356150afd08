// Where a torch.save file's bytes go, computed from its pickle and zip directory alone (no
// tensor bytes read): each storage's size against the bytes its views actually reach — the
// union of their byte ranges, so strides, offsets, zero strides and overlapping views count
// right — plus the file's own overhead. A storage that only part of is viewed is "bloat":
// torch.save writes the whole storage behind every view (DeepSpeed #3303, a saved slice).
#pragma once

#include "layout/checkpoint.h"
#include "layout/file_set.h"
#include "torch/torch_file.h"

#include "ops/job.h"

#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ckpt::ops {

struct ByteRange
{
    uint64_t begin = 0, end = 0;
};

// The bytes one strided view reaches inside its storage, as sorted, merged ranges. A view
// fragmented into more than maxRuns runs is given as its hull and *approximate is set.
std::vector<ByteRange> viewRanges(uint32_t elementSize, const std::vector<int64_t>& shape,
                                  const std::vector<int64_t>& stride, int64_t storageOffset,
                                  size_t maxRuns = 1u << 20, bool* approximate = nullptr);

uint64_t unionBytes(std::vector<ByteRange> ranges);

struct StorageBloat
{
    int storage = -1;
    uint64_t nbytes = 0;
    uint64_t usedBytes = 0;   // union of what its views reach
    std::vector<int> tensors; // indices into TorchFile::tensors() that view it, aliases included
    bool wholeUse = false;    // reached by something other than a plain view: all of it counts
    bool approximate = false; // a view too fragmented to enumerate counted by its hull
};

struct FileBloat
{
    uint64_t fileBytes = 0;
    uint64_t storageBytes = 0; // sum of the storages' sizes (legacy view storages not twice)
    uint64_t usedBytes = 0;
    uint64_t overheadBytes = 0; // file bytes that are not storage bytes: pickle, zip records
    std::vector<StorageBloat> storages;
    uint64_t reclaimableBytes() const { return storageBytes - usedBytes; }
};

FileBloat analyzeBloat(const torch::TorchFile& file);

// What the bytes of a training checkpoint are for, decided per storage from the path of the
// first tensor that views it (DeepSpeed's and torch's own key names).
enum class ByteRole { ModelWeights, Fp32Master, ExpAvg, ExpAvgSq, OtherOptimizer, Other };
constexpr size_t kByteRoles = 6;
const char* roleName(ByteRole role); // "model weights", "fp32 masters", "exp_avg", ...
ByteRole roleOf(const std::string& tensorPath);

struct FolderFile
{
    std::string path;   // relative to the folder analysed (the file name for a single file)
    bool torch = false; // a torch.save file (the others count as "other", whole)
    uint64_t fileBytes = 0;
    FileBloat bloat;                              // torch files only
    std::array<uint64_t, kByteRoles> roleBytes{}; // storage bytes by role, overhead as Other
};

struct FolderBloat
{
    std::vector<FolderFile> files; // sorted by path
    std::array<uint64_t, kByteRoles> roleBytes{};
    uint64_t fileBytes = 0, storageBytes = 0, usedBytes = 0;
    uint64_t reclaimableBytes() const { return storageBytes - usedBytes; }
};

// Every file under `path` (a checkpoint root, a tag folder, any folder, or one file), each torch
// file parsed once, no tensor bytes read: "where did my terabyte go".
// With `files` (an opened checkpoint's), torch files are taken from it: parsed at most once; with
// `model` (its domain model), each file's bytes go by the role its family gave it.
FolderBloat analyzeFolderBloat(const std::string& path, const ProgressSink& progress,
                               const CancelToken& cancel, const layout::FileSet* files = nullptr,
                               const layout::Checkpoint* model = nullptr);

// As `ckpt inspect --json` carries a tag's bytes: the totals, by role, and per file.
nlohmann::ordered_json folderBloatJson(const FolderBloat& bloat);

} // namespace ckpt::ops
