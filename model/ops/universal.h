// `ckpt universal`: converts one DeepSpeed ZeRO 1/2/3 tag (any number of tensor-parallel mp ranks,
// merged by universal_checkpoint_info's rules as ds_to_universal merges them) into a DeepSpeed Universal
// checkpoint with the files, keys, value types and tensor bits DeepSpeed's ds_to_universal.py writes, so
// DeepSpeed's load_universal resumes it on another world size. Each rank file is parsed once
// (when the tag is opened), no temporary tree: each parameter's fragments are read from the mapped rank files
// and streamed into its files as they are written; every file is re-read and checked, and the whole output
// (and `latest_universal` beside it) appears at once or not at all.
#pragma once

#include "layout/family.h"
#include "ops/job.h"
#include "ops/sharded.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ckpt::ops {

struct UniversalOptions
{
    std::string tag; // empty: the tag `latest` names (or the only one)
    // What ds_to_universal's --inject_missing_state does: a model file without
    // universal_checkpoint_info converts as plain data parallelism (Hugging Face models).
    bool injectMissingState = false;
    // The output folder holds files: replace the conversion in it (else refused).
    bool overwrite = false;
    // One process's part of a conversion split across processes, or its finalize
    // (ops/sharded.h): the units are the parameters' folders, balanced by bytes; finalize writes
    // zero/optimizer_state.pt, the model-states files and latest_universal.
    ShardSpec shard;
};

struct UniversalResult
{
    std::string tag, tagDir;
    std::string output, latestFile; // the folder, and `latest_universal` in its parent
    int zeroStage = 0, worldSize = 0;
    int tensorParallel = 1; // mp ranks merged (mp_rank_00 .. mp_rank_NN)
    std::string optimizer;  // "zero" or "bf16_optimizer"
    size_t parameters = 0;  // folders under zero/
    size_t files = 0;       // files written, latest_universal included
    uint64_t tensorBytes = 0, copiedBytes = 0, bytesWritten = 0;
    std::vector<std::string> warnings;

    // Its fields as `ckpt universal --json` and Python name them (ops/describe.h).
    template <class V> static void describe(V& v)
    {
        using R = UniversalResult;
        v("tag", &R::tag);
        v("tag_dir", &R::tagDir);
        v("output", &R::output);
        v("latest_universal", &R::latestFile);
        v("zero_stage", &R::zeroStage);
        v("world_size", &R::worldSize);
        v("tensor_parallel", &R::tensorParallel);
        v("optimizer", &R::optimizer);
        v("parameters", &R::parameters);
        v("files", &R::files);
        v("tensor_bytes", &R::tensorBytes);
        v("copied_bytes", &R::copiedBytes);
        v("bytes_written", &R::bytesWritten);
        v("warnings", &R::warnings);
    }
};
// `ckpt universal --json` (the command adds its input and the seconds it took).
nlohmann::ordered_json toJson(const UniversalResult& r);

// One DeepSpeed ZeRO tag of an opened checkpoint (options.tag is not read) into `output`, the
// Universal folder, as ds_to_universal's --output_folder. Reads the rank files through the
// checkpoint's FileSet: nothing the opening parsed is parsed again. Throws Error naming the file
// on anything it cannot convert exactly.
UniversalResult universal(const layout::OpenedTag& in, const std::string& output,
                          const UniversalOptions& options, const ProgressSink& progress,
                          const CancelToken& cancel);
// `input` a checkpoint root (tag from `latest` unless options.tag) or a tag folder: the outputs
// and the rank files' presence are checked first, then the tag is opened through the registry.
UniversalResult universal(const std::string& input, const std::string& output,
                          const UniversalOptions& options, const ProgressSink& progress,
                          const CancelToken& cancel);

} // namespace ckpt::ops
