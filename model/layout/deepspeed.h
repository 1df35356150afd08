// Recognises DeepSpeed checkpoint folders (ZeRO 1/2/3, the bf16 optimizer, pipeline and MoE
// files) and builds the domain model from their pickles. Specs: shared/specs/deepspeed-format.md.
#pragma once

#include "layout/checkpoint.h"
#include "layout/file_set.h"

#include <string>

namespace ckpt::layout {

// A checkpoint root (holding `latest` and tag folders) or a single tag folder.
bool looksLikeDeepSpeed(const std::string& path);
// What looksLikeDeepSpeed asks for by name in a folder nothing lists: `latest` and rank 0's files.
std::vector<std::string> deepSpeedNamesAsked();

// What a file in a tag folder is, from its name (role, ranks), and its size. Throws Error
// naming it when the size cannot be read (the file vanished while the folder was read).
RankFile classifyTagFile(const std::string& path);

// Opens one tag fully, throwing Error (naming the file) on anything inconsistent: missing or
// extra rank files, truncated files, files from different saves.
// Rank files are parsed through `files` (a local set when null) so the caller can keep them.
Tag openDeepSpeedTag(const std::string& tagDir, const std::string& tagName, bool latest,
                     FileSet* files = nullptr);

// The same for rank files that are not a folder of their own (members of Composer's per-rank
// tarballs): each file's `path` is its FileSet id, adopted into `files` beforehand, and `name`
// its file name (classifyTagFileName). `tagDir` is only shown.
Tag openDeepSpeedTagFiles(std::vector<RankFile> rankFiles, const std::string& tagDir,
                          const std::string& tagName, bool latest, FileSet& files);
// What DeepSpeed says of a tag, for people: optimizer and ZeRO stage, ranks, dtype, version,
// step (Tag::facts of DeepSpeed tags, also those inside Composer's tarballs).
std::vector<Fact> deepSpeedFacts(const Tag& tag);

// What a rank file is from its name alone (path and size left for the caller).
RankFile classifyTagFileName(const std::string& name);

} // namespace ckpt::layout
