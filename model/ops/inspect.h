// Describes a single checkpoint file, as a JSON document (the `ckpt inspect --json` contract)
// and as readable text. Reads no tensor bytes.
#pragma once

#include "layout/file_set.h"

#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

namespace ckpt::ops {

// A checkpoint folder (DeepSpeed): tags, rank files, parameters and partition maps. `tag`
// empty: every tag.
// `sources`: each partition's file, tensor and range too (--json); the text listing needs only
// ranks and ranges, and at 64 ranks x 10,000 parameters the sources are most of the document.
nlohmann::ordered_json inspectCheckpoint(const std::string& path, const std::string& tag = {},
                                         bool sources = true);
void printCheckpoint(const nlohmann::ordered_json& doc, std::ostream& out);

// Opens `path` (torch zip, legacy torch or safetensors) and describes it.
nlohmann::ordered_json inspectFile(const std::string& path);
// The same for a file an opened checkpoint already parsed (no second parse).
nlohmann::ordered_json inspectFile(const layout::TensorFile& file);
void printInspect(const nlohmann::ordered_json& doc, std::ostream& out);

std::string humanBytes(uint64_t n);

} // namespace ckpt::ops
