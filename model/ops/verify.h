// `ckpt verify`: proves a checkpoint whole before anyone spends GPU hours on it, from what its
// files can prove without a manifest and from a manifest where one is given or found:
//   - the family's own completeness: the tags it must read (every rank's files, the files a
//     `.metadata` names, each chunk inside its file), and `latest` naming a tag that is there;
//   - every zip container (each torch.save file): the directory against the local headers, each
//     record's CRC-32 and sizes (which torch.load never compares), the pickle parses and every
//     storage it names is there with its length;
//   - safetensors: the header, offsets that cover the data exactly, the file's size;
//   - tarballs and compressed files: read to their end; JSON files parse;
//   - a manifest (ours, or Megatron-Core's integrity.json found beside the files): each file's
//     size and SHA-256, and (ours) each tensor's xxh3-64, so damage is named down to the tensor.
// What nothing covers (a .distcp's tensor bytes without a manifest) is said as such. Files are
// checked in parallel, each read once in chunks whose pages are then released; nothing is
// written into the checkpoint (a manifest only where the user names its path).
#pragma once

#include "ops/job.h"
#include "ops/tensor_digest.h"

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ckpt::ops {

struct VerifyOptions
{
    std::string tag;               // empty: the tag `latest` names (or the only one)
    bool allTags = false;          // every tag of the checkpoint
    std::string manifest;          // check against this manifest (ours or Megatron's integrity.json)
    std::string writeManifest;     // write a manifest of the files verified here
    bool megatronManifest = false; // ...in Megatron-Core's integrity.json format
};

// One file and what was found.
struct FileVerdict
{
    std::string path; // as opened (local path or URL)
    std::string name; // relative to the folder verified
    uint64_t size = 0;
    std::string format; // "torch zip", "torch legacy", "safetensors", "archive", "json", "data", ...
    std::string status; // "ok", "damaged", "missing", "not covered"
    std::vector<std::string> problems; // each what is wrong, naming the record or tensor where known
    std::string sha256;                // when a manifest is written or checked
    // Each tensor's digest (ops/tensor_digest.h) when a manifest is written, or the one checked
    // records the file's tensors.
    std::vector<TensorDigest> tensors;

    template <class V> static void describe(V& v)
    {
        v("path", &FileVerdict::path);
        v("name", &FileVerdict::name);
        v("size", &FileVerdict::size);
        v("format", &FileVerdict::format);
        v("status", &FileVerdict::status);
        v("problems", &FileVerdict::problems);
        v("sha256", &FileVerdict::sha256); // "" unless a manifest was written or checked
        v("tensors", &FileVerdict::tensors);
    }
};

struct VerifyReport
{
    std::string checkpoint; // as given
    std::string family;     // its family's display name
    std::vector<std::string> tags;
    std::vector<FileVerdict> files;
    // What is wrong beyond one file's bytes: a tag its family cannot read whole, `latest` naming a
    // tag that is not there, a file the manifest names that is gone. Each names the file.
    std::vector<std::string> problems;
    std::vector<std::string> notes; // what could not be checked, and why
    std::string manifest;           // the manifest checked, where one was
    std::string manifestWritten;    // the manifest written, where one was
    uint64_t bytes = 0;             // read

    bool whole() const { return problems.empty() && damagedFiles() == 0; }
    size_t damagedFiles() const;

    template <class V> static void describe(V& v)
    {
        v("checkpoint", &VerifyReport::checkpoint);
        v("family", &VerifyReport::family);
        v("whole", &VerifyReport::whole);
        v("tags", &VerifyReport::tags);
        v("problems", &VerifyReport::problems);
        v("notes", &VerifyReport::notes);
        v("manifest", &VerifyReport::manifest); // "" when none was checked
        v("manifest_written", &VerifyReport::manifestWritten);
        v("bytes", &VerifyReport::bytes);
        v("files", &VerifyReport::files);
    }
};

// Verifies `path` (a checkpoint folder, a tag folder or one file; local or remote). Throws Error
// only when it cannot check at all (nothing there, no family reads it, a manifest that does not
// parse); damage is in the report.
VerifyReport verify(const std::string& path, const VerifyOptions& options, const ProgressSink& progress,
                    const CancelToken& cancel);

// One file of a manifest: its size, and its SHA-256 and tensors' digests where known.
struct ManifestEntry
{
    std::string name; // relative to the manifest's folder
    uint64_t size = 0;
    std::string sha256; // "": not recorded
    std::vector<TensorDigest> tensors;
};
// Writes our manifest format as every output is written (never on, in or around `inputs`); `source`
// says what the files were made from (an export's checkpoint and tag), where not null.
void writeManifest(const std::vector<std::string>& inputs, const std::string& path,
                   const std::vector<ManifestEntry>& files, const nlohmann::ordered_json& source);

// The report as `ckpt verify --json` prints it.
nlohmann::ordered_json toJson(const VerifyReport& r);

} // namespace ckpt::ops
