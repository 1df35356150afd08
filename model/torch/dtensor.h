// A DTensor (torch.distributed.tensor) as torch.save pickles it, read structurally: the rank's
// local shard is an ordinary tensor; its spec says where that shard lies in the whole — the global
// shape, one placement per dimension of the device mesh (Shard(dim), Replicate, Partial), the
// mesh's shape and this rank's coordinate on it. Nothing is executed: the classes are matched by
// name and their BUILD states read as dictionaries (verl's FSDP saves, FSDP2 state dicts).
#pragma once

#include "pickle/value.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::torch {

// "[64, 16]", as messages print a shape.
std::string shapeText(const std::vector<int64_t>& shape);

struct DTensorSpec
{
    struct Placement
    {
        enum class Kind { Shard, Replicate, Partial, Other } kind = Kind::Other;
        int64_t dim = 0;  // Shard's
        std::string name; // the class, for what cannot be placed ("_StridedShard")
    };
    std::vector<int64_t> globalShape;
    std::vector<Placement> placements; // one per mesh dimension, in mesh order
    std::vector<int64_t> meshShape;
    std::vector<std::string> meshDimNames; // empty where the mesh has none
    std::vector<int64_t> coordinate;       // this rank's, per mesh dimension

    std::string placementsText() const; // "(Replicate(), Shard(dim=0))", as torch prints them
};

// The pickled DTensor whose `_rebuild_from_type_v2` arguments are `fromTypeArgs`: its `_local_tensor`
// value (a tensor rebuild call) and its spec. nullopt when they make no DTensor; an Error saying
// what is wrong for a DTensor whose spec does not read (a mesh without its shape, a placement
// beyond the tensor's dimensions, a coordinate off the mesh).
struct PickledDTensor
{
    const pickle::Value* local = nullptr;
    DTensorSpec spec;
};
std::optional<PickledDTensor> readDTensor(const pickle::Value* fromTypeArgs);

} // namespace ckpt::torch
