// `ckpt export DIR OUT`: the model of any checkpoint family as a Hugging Face style folder; for
// a DeepSpeed ZeRO checkpoint, with the names, order, dtypes, values, shard names and index of
// DeepSpeed's zero_to_fp32. Streams the
// fp32 partitions straight from the mapped rank files: memory is a constant plus the
// 16 MiB chunk buffer, whatever the checkpoint size.
#pragma once

#include "compute_backend.h"
#include "layout/family.h"
#include "ops/job.h"
#include "ops/sharded.h"
#include "ops/verify.h"
#include "torch/dtype.h"

#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::ops {

struct ConsolidateOptions
{
    std::string tag; // empty: the one `latest` names
    enum class Format { Safetensors, Bin } format = Format::Safetensors;
    uint64_t maxShardSize = 5'000'000'000; // decimal, as huggingface_hub parses "5GB"
    bool excludeFrozen = false;
    bool all = false; // every tensor, not only the model's (optimizer state, ...)
    // The model under the checkpoint's own names where the family maps it to another's (Megatron's
    // decoder.layers.* rather than a Hugging Face class's); required where no class matches.
    bool raw = false;
    std::vector<std::string> ignore; // Composer ignore_keys globs over `/` paths
    // Floating tensors are written in this dtype; integer buffers keep theirs. nullopt: the
    // family's default (Tag::exportDtype: zero_to_fp32's float32 for ZeRO, frozen and buffers
    // included; as stored for other families).
    std::optional<torch::DType> dtype;
    std::shared_ptr<gpu::ComputeBackend> backend; // casts run here; nullptr = CPU
    // The output folder holds files: replace the export in it (else refused). What an earlier
    // export wrote goes (the weights named by its index, the usual weight and index names, the
    // files this export writes); other files are kept. The set is swapped in atomically.
    bool overwrite = false;
    // Write one file named as the output (every tensor in it, no index, no files beside), in
    // `format`; an output named *.safetensors is one file without asking.
    bool oneFile = false;
    // One process's part of a job split across processes, or the job's finalize (ops/sharded.h):
    // the units are the output's shard files; finalize writes the configuration files and index.
    ShardSpec shard;
    // Also write a manifest here (ops/verify.h): each output file's size and each tensor's digest
    // as it was streamed out of the checkpoint, so `ckpt verify OUT --manifest` proves the export
    // holds what was read. Never on or inside the checkpoint.
    std::string manifestOut;
};

struct ConsolidateResult
{
    std::string tag;
    std::vector<std::string> files; // written, index last
    size_t tensors = 0;
    uint64_t bytes = 0;
    std::vector<std::string> warnings;
    std::string manifest; // written, where options.manifestOut asked for one
    // Each written weight file's tensors and digests (the manifest's content; not in --json).
    std::vector<ManifestEntry> digests;

    template <class V> static void describe(V& v)
    {
        v("tag", &ConsolidateResult::tag);
        v("files", &ConsolidateResult::files);
        v("tensors", &ConsolidateResult::tensors);
        v("bytes", &ConsolidateResult::bytes);
        v("warnings", &ConsolidateResult::warnings);
        v("manifest", &ConsolidateResult::manifest);
    }
};
// The export's result as a document (Python's export() returns it).
nlohmann::ordered_json toJson(const ConsolidateResult& r);

// The tag's model (options.tag is not read: the tag is given) into `outDir`.
ConsolidateResult consolidate(const layout::OpenedTag& in, const std::string& outDir,
                              const ConsolidateOptions& options, const ProgressSink& progress,
                              const CancelToken& cancel);
// The same from a path: the output is checked first, then the tag is opened through the registry.
ConsolidateResult consolidate(const std::string& checkpoint, const std::string& outDir,
                              const ConsolidateOptions& options, const ProgressSink& progress,
                              const CancelToken& cancel);

// huggingface_hub's parse_size_to_int: "5GB" = 5e9, "500MB", "1.5GB"; a plain number is bytes.
uint64_t parseShardSize(const std::string& text);

} // namespace ckpt::ops
