// How a tag's parameters are spread over its ranks, as geometry in elements: pure data computed
// from the domain model alone (no tensor bytes), from the sharding the family states
// (Tag::sharding), never from a family's name. The window's sharding map paints it; tests check
// it without pixels.
//   FlatPartitions (ZeRO-1/2): one lane per rank along its flat partition, a segment per
//     parameter, groups one after another, each as wide as its widest share.
//   ParameterPartitions (ZeRO-3): a parameters x ranks grid, each cell the rank's share and padding.
//   NdChunks (DCP): the same grid, each cell the rank's N-d block.
//   WholeFiles (a file, a Hugging Face folder, Composer, Universal): a lane per file, its tensors
//     one after another in the tag's order, each as long as its bytes.
#pragma once

#include "layout/checkpoint.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ckpt::layout {

struct ShardingLayout
{
    enum class Mode { Empty, Lanes, Grid, Files };
    struct Segment
    {
        int param = 0; // index into names/params of the tag
        int rank = 0;
        uint64_t begin = 0;   // Lanes: position in the rank's lane; Grid: 0
        uint64_t length = 0;  // elements held (Files: bytes)
        uint64_t padding = 0; // padding elements after them in this rank's share
        std::string where;    // Grid of chunks: the block held ("[0:19, 0:12]")
    };
    Mode mode = Mode::Empty;
    int ranks = 0;                      // lanes or grid columns (Files: one lane per file)
    std::vector<std::string> laneNames; // Files: the file of each lane
    uint64_t laneLength = 0;            // Lanes: the x extent, every group at its widest (Files: bytes)
    std::vector<uint64_t> groupStarts;  // Lanes: where each group begins on every lane
    std::vector<std::vector<uint64_t>> groupUsed; // Lanes: [group][rank] elements held (the rest: padding)
    std::vector<Segment> segments;                // Lanes: by rank, then begin; Grid: by param, then rank
    std::vector<int> gridParams;                  // Grid: the row's parameter
    std::vector<size_t> gridFirst;                // Grid: the row's first segment (one per rank follow)
    std::vector<uint64_t> perRank;                // Grid: the row's share per rank (length + padding)
    std::vector<std::string> names;               // every parameter of the tag, by index
    std::vector<int> layer;                       // colour key per parameter
};

ShardingLayout shardingLayout(const Tag& tag);

// A parameter name's layer: "model.layers.17.mlp.up" -> stem "model.layers.", number 17, rest
// "mlp.up". isLayer is false for names without a number.
struct LayerName
{
    bool isLayer = false;
    std::string stem;
    long long number = 0;
    std::string rest;
};
LayerName splitLayer(const std::string& name);

} // namespace ckpt::layout
