// A Megatron-Core GPT model under Hugging Face's names (megatron_hf.cpp).
#pragma once

#include "layout/checkpoint.h"

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace ckpt::layout {

// What Megatron-LM's saved args say of the model's shape.
struct MegatronShape
{
    int64_t layers = 0, hidden = 0, heads = 0, groups = 0, headDim = 0, ffn = 0, moeFfn = 0;
    int64_t vocab = 0, paddedVocab = 0, maxPositions = 0, experts = 0, topk = 0;
    double normEpsilon = 1e-5, ropeTheta = 10000;
    std::string normalization, positionEmbedding;
    bool swiglu = false, biasLinear = false, qkvBias = false, untied = false;
    bool tanhGelu = false; // --openai-gelu
    // What the args say that no Hugging Face class computes (zero-centred norms, squared ReLU, ...):
    // nothing is mapped then.
    std::string unmapped;
};

// The Hugging Face class whose layout this is ("LlamaForCausalLM", "Qwen2ForCausalLM",
// "MixtralForCausalLM", "GPT2LMHeadModel"), or "" when none is exactly it.
std::string huggingFaceArchitecture(const MegatronShape& m);

// The model's tensors under that class's names, each made of regions of the stored Megatron
// tensors `stored` (named by their keys). Throws Error when no class matches or a key is missing.
std::vector<Parameter> huggingFaceParameters(const std::vector<Parameter>& stored, const MegatronShape& m);

// That class's config.json for the model, its weights in `dtype` ("float32", "bfloat16").
nlohmann::ordered_json huggingFaceConfig(const MegatronShape& m, const std::string& dtype);

} // namespace ckpt::layout
