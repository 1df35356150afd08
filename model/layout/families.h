// The recognizers the registry (family.cpp) lists. Nothing else names a family directly.
#pragma once

#include "layout/family.h"

#include <nlohmann/json.hpp>

namespace ckpt::layout {

const Family& accelerateFamily();     // accelerate_family.cpp
const Family& composerFamily();       // composer_family.cpp
const Family& deepSpeedFamily();      // deepspeed_family.cpp
const Family& dcpFamily();            // dcp_family.cpp
const Family& dcpSafetensorsFamily(); // dcp_safetensors_family.cpp
const Family& huggingFaceFamily();    // hf_family.cpp
const Family& singleFileFamily();     // file_family.cpp
const Family& lightningFamily();      // lightning_family.cpp
const Family& megatronFamily();       // megatron_family.cpp
const Family& trainerFamily();        // trainer_family.cpp
const Family& universalFamily();      // universal.cpp
const Family& verlFamily();           // verl_family.cpp

// A transformers config.json as facts (and badges): model_type, architectures, transformers_version, the
// dtype (torch_dtype, or transformers 5's dtype) under `dtypeBadge`, and the sizes (hidden size,
// layers, attention heads, vocabulary, under GPT-2's names too). Shared by the Hugging Face and
// Trainer families (hf_family.cpp).
void addTransformersConfigBadges(const nlohmann::json& config, Tag& tag, const char* dtypeBadge);

// Training order from a checkpoint folder's or file's name: the numbers in it compared as numbers
// (Composer's ep0-ba10 after ep0-ba9, torchtitan's step-100 after step-20), then the name itself
// (dcp_family.cpp).
std::pair<std::vector<uint64_t>, std::string> trainingOrder(const std::string& name);

// A tensor stored whole in one file, read in place: the parameter `name`, its one slice the
// tensor at `tensorPath` of `file` (file_family.cpp).
Parameter wholeTensor(const std::string& file, const std::string& tensorPath, std::string name,
                      torch::DType dtype, const std::vector<int64_t>& shape);

} // namespace ckpt::layout
