// The `.metadata` file of a PyTorch Distributed Checkpoint (DCP) folder, read structurally: it is a
// plain pickle of torch.distributed.checkpoint.metadata.Metadata, which our pickle VM turns into
// Global/Call/Build values that are interpreted here by class name, never executed.
#pragma once

#include "io/bytes.h"
#include "torch/dtype.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::layout::dcp {

// Where one item (a tensor chunk, or a pickled non-tensor value) lies: `length` bytes from
// `offset` of the data file `file` (a name relative to the checkpoint folder).
struct Item
{
    std::string file;
    uint64_t offset = 0;
    uint64_t length = 0;
};

// A block of a tensor: per-dimension offsets and sizes in the whole tensor.
struct Chunk
{
    std::vector<int64_t> offsets, sizes;
    Item item;
};

struct Entry
{
    std::string fqn; // the flattened key, `.`-joined ("optimizer.state.0.exp_avg")
    // The nested key path the state dict had (planner_data); list indices as decimals. {fqn}
    // when the planner recorded none.
    std::vector<std::string> keyPath;
    bool tensor = false; // else a pickled value (BytesStorageMetadata) in `item`
    torch::DType dtype = torch::DType::Float32;
    std::vector<int64_t> shape;
    std::vector<Chunk> chunks; // tensors
    Item item;                 // values
};

struct Metadata
{
    std::string version;        // "1.0.0"; empty in files written before DCP recorded it
    std::vector<Entry> entries; // in .metadata order (the order dcp.save planned them)
};

// A pickle stream, as `.metadata` is: a cheap look at its first bytes (PROTO 2..5, then the
// Metadata class somewhere near the start).
bool looksLikeMetadata(std::string_view head);

// Why a tensor entry's chunks do not cover it exactly once (one lies outside it, two overlap, they
// leave a gap), or "" when they do.
std::string tilingProblem(const Entry& e);

// Parses and checks `.metadata` (every chunk has a storage item, every field has the expected
// type); throws Error naming `file` otherwise.
Metadata parseMetadata(io::ByteSpan bytes, const std::string& file);

} // namespace ckpt::layout::dcp
