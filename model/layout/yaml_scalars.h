// The scalars of a YAML file's block mappings, by dotted path ("model.num_layers" -> 2): what a
// family needs of the configs training tools dump with PyYAML/OmegaConf (Megatron-Bridge's
// run_config.yaml, NeMo 2's model.yaml). Not a YAML parser: sequences, flow collections,
// block scalars, anchors and tags are passed over (a flow or anchored value is kept as its text),
// and nothing a file says is ever evaluated. A library (yaml-cpp) would be one more dependency of
// the engine, the GPU host's build included, for a dozen integers and flags.
#pragma once

#include <map>
#include <nlohmann/json.hpp>
#include <string>

namespace ckpt::layout {

// Each scalar under its dotted path: true/false, null (null, ~, nothing), integers, floats
// (1.0e-05, .inf) as JSON numbers, quoted or other text as strings. Lines it cannot read as
// `key: value` are passed over; the result is what could be read.
std::map<std::string, nlohmann::json> yamlScalars(const std::string& text);

} // namespace ckpt::layout
