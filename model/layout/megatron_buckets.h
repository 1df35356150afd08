// Megatron-Core's distributed optimizer state where it is saved in the optimizer's own bucket
// layout (torch_dist's dp_reshardable, Megatron-LM's default; the legacy format's
// distrib_optim.pt), made each parameter's state again (megatron_buckets.cpp).
#pragma once

#include "layout/checkpoint.h"

#include <cstdint>
#include <string>

namespace ckpt::layout {

// What the run's args say of how its parameters were spread over the optimizer's buffers.
struct BucketRun
{
    int tp = 0, pp = 0;            // tensor- and pipeline-parallel sizes; 0: unknown
    int64_t dataParallel = 0;      // the optimizer's data-parallel size (context parallel in it); 0: unknown
    int64_t layers = 0;            // decoder layers in all
    bool layersEvenlySplit = true; // false: first/last stage sizes or virtual stages, not read
    bool experts = false;          // MoE: expert buffers have their own data-parallel groups, not read
    // Which layer spec made the model: its parameters' order inside a layer differs (the local
    // spec's norms are modules of their own before the attention and the MLP; Transformer Engine
    // fuses them into linear_qkv and linear_fc1, after linear_proj). Unknown: both are tried.
    enum class Spec { Unknown, Local, TransformerEngine } spec = Spec::Unknown;
};

struct BucketOutcome
{
    bool found = false;   // there were bucket-layout state tensors among the tag's other tensors
    std::string unplaced; // empty: each is now its parameters' state; otherwise why not (nothing changed)
};

// Makes the bucket-layout state tensors among `tag.otherTensors` the state of `tag.params`
// (Megatron's stored tensors, by their dist keys) where the buffers' order, alignment and the
// saved chunks' boundaries all agree with the layout Megatron-Core's DDP builds; the tensors then
// leave otherTensors. Where anything disagrees, nothing changes and the outcome says why.
BucketOutcome attachBucketState(Tag& tag, const BucketRun& run);

} // namespace ckpt::layout
