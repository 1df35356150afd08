// Describes a single checkpoint file, as a JSON document (the `ckpt inspect --json` contract)
// and as readable text. Reads no tensor bytes.
#pragma once

#include "layout/family.h"
#include "layout/file_set.h"
#include "ops/file_listing.h"

#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

namespace ckpt::ops {

// A checkpoint folder (DeepSpeed, ...): tags, rank files, parameters and partition maps, as the
// `ckpt inspect --json` contract. `tag` empty: every tag. `sources`: each partition's file,
// tensor and range too (--json); the text listing needs only ranks and ranges.
// The parameters are made one at a time when written: at 64 ranks x 10,000 parameters the
// whole document held at once took 4.5 GB for a 770 MB text.
struct CheckpointListing
{
    std::shared_ptr<const layout::OpenedCheckpoint> opened;
    nlohmann::ordered_json doc;           // all but each tag's "parameters", an empty array
    std::vector<const layout::Tag*> tags; // doc["tags"][i] describes tags[i]
    bool sources = true;
    nlohmann::ordered_json parameter(size_t tag, size_t index) const;
};
// `entries`: each tag's files listed whole too ("file_listings": every entry and tensor of each
// file, as a single file's listing); a checkpoint opened as one file (a Composer .pt) always is.
CheckpointListing listCheckpoint(const std::string& path, const std::string& tag = {}, bool sources = true,
                                 bool entries = false);
void writeCheckpointJson(const CheckpointListing& listing, std::ostream& out); // as dump(2), streamed
void printCheckpoint(const CheckpointListing& listing, std::ostream& out);
// The whole document at once (small checkpoints, tests).
nlohmann::ordered_json inspectCheckpoint(const std::string& path, const std::string& tag = {},
                                         bool sources = true);

// Opens `path` (torch zip, legacy torch or safetensors) and describes it.
nlohmann::ordered_json inspectFile(const std::string& path);
// The same for a file an opened checkpoint already parsed (no second parse).
nlohmann::ordered_json inspectFile(const layout::TensorFile& file);
void printInspect(const nlohmann::ordered_json& doc, std::ostream& out);
// The `ckpt inspect --json` document of one file.
nlohmann::ordered_json toJson(const FileListing& listing);

std::string humanBytes(uint64_t n);

} // namespace ckpt::ops
