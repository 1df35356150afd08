// The domain model: checkpoint -> tags -> rank files and parameters with their partition maps.
// Plain values, built by a recognizer from pickles and zip directories only (no tensor bytes),
// safe to copy across threads.
#pragma once

#include "torch/dtype.h"

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ckpt::layout {

enum class FileRole { ModelStates, OptimStates, Layer, Expert, ExpertOptim, Other };
const char* roleName(FileRole r);

struct RankFile
{
    std::string path; // absolute or as given
    std::string name; // file name within the tag folder
    FileRole role = FileRole::Other;
    int dpRank = -1; // rank in the data-parallel (ZeRO) group, -1 when the name has none
    int mpRank = 0;
    std::string prefix; // "bf16_" / "fp16_" on optimizer files
    uint64_t size = 0;
};

// Where one element range of a tensor lives: `count` elements starting at logical element
// `offset` of the tensor at `tensorPath` inside `file`.
struct Source
{
    std::string file;
    std::string tensorPath;
    uint64_t offset = 0;
    uint64_t count = 0;
    torch::DType dtype = torch::DType::Float32; // as stored: moments need not be fp32
};

// One rank's share of a parameter.
struct RankSlice
{
    int rank = 0;
    uint64_t paramOffset = 0; // first element of the parameter this rank holds
    uint64_t length = 0;      // elements of the parameter held (padding excluded)
    uint64_t padding = 0;     // padding elements after it in this rank's partition
    // fp32 master copy: usually one source; two when a ZeRO-3 slice crosses sub-groups
    std::vector<Source> master;
    // optimizer moments for the same range, by name ("exp_avg", "exp_avg_sq")
    std::vector<std::pair<std::string, std::vector<Source>>> states;
};

struct Parameter
{
    std::string name;
    std::vector<int64_t> shape;
    torch::DType dtype = torch::DType::Float32; // of the consolidated tensor
    enum class Kind { Trainable, Frozen, Buffer } kind = Kind::Trainable;
    std::string tiedTo; // non-empty: an alias of that parameter, no data of its own
    int group = -1;     // flat group (ZeRO-1/2) or sub-group (ZeRO-3)
    uint64_t groupOffset = 0;
    std::vector<RankSlice> slices; // in rank order; concatenated they give the tensor
    uint64_t numel() const;
};

struct Tag
{
    std::string name;
    std::string dir;
    bool latest = false;
    std::string optimizer; // "zero", "bf16_optimizer", "none"
    int zeroStage = -1;
    int worldSize = 0; // ZeRO partition count
    int mpWorldSize = 1;
    std::string dtype; // "fp32", "bf16", "fp16"
    std::string dsVersion;
    int64_t globalSteps = -1, globalSamples = -1, skippedSteps = -1;
    nlohmann::ordered_json config;      // ds_config
    nlohmann::ordered_json clientState; // keys DeepSpeed does not own, rendered
    nlohmann::ordered_json lrScheduler;
    std::vector<RankFile> files;
    std::vector<Parameter> params; // zero_to_fp32 order: buffers, frozen, trainable, aliases
    std::vector<std::string> warnings;
};

struct Checkpoint
{
    std::string root;
    std::string family; // "deepspeed"
    std::vector<Tag> tags;
    std::vector<std::string> warnings;

    const Tag* latest() const;
    const Tag* find(const std::string& name) const;
};

} // namespace ckpt::layout
