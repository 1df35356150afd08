// Exports every tensor of a torch.save file as one safetensors file: contiguous, named by its
// path, values exactly those torch.load gives. Written under a temporary name, re-read and
// verified, then renamed.
#pragma once

#include "io/error.h"
#include "ops/job.h"

#include <memory>
#include <nlohmann/json_fwd.hpp>

#include <string>
#include <vector>

namespace ckpt::layout {
struct OpenedCheckpoint;
struct OpenedTag;
struct Tag;
} // namespace ckpt::layout

namespace ckpt::ops {

// Thrown when a file holds tensors safetensors cannot hold and leaving them out was not asked
// for; the message lists them. The CLI names its flag, the window its checkbox.
class UnsupportedTensors : public Error
{
public:
    using Error::Error;
};

struct ExportOptions
{
    // Tensors safetensors cannot hold (complex128, quantized, meta, ...) are an error unless
    // this is set, in which case they are left out and listed as warnings.
    bool skipUnsupported = false;
    std::string manifestOut; // as ConsolidateOptions::manifestOut
};

struct ExportResult
{
    std::string path;
    size_t tensors = 0;
    uint64_t bytes = 0;
    std::vector<std::string> warnings;
    std::string manifest; // written, where options.manifestOut asked for one

    template <class V> static void describe(V& v)
    {
        v("file", &ExportResult::path);
        v("tensors", &ExportResult::tensors);
        v("bytes", &ExportResult::bytes);
        v("warnings", &ExportResult::warnings);
        v("manifest", &ExportResult::manifest);
    }
};
// The single-file export's result as a document (`ckpt export --json`).
nlohmann::ordered_json toJson(const ExportResult& r);

ExportResult exportFileToSafetensors(const std::string& input, const std::string& output,
                                     const ExportOptions& options, const ProgressSink& progress,
                                     const CancelToken& cancel);
// The same for a single file the registry opened (the window's): nothing is parsed again.
ExportResult exportFileToSafetensors(const layout::OpenedTag& in, const std::string& output,
                                     const ExportOptions& options, const ProgressSink& progress,
                                     const CancelToken& cancel);

// Writes the parameters of `tag` (any part of a tag of `opened`: one parameter and its optimizer
// moments, say) into one file, each under its name: a torch.save zip when `output` ends in .pt or
// .bin, else safetensors: `consolidate` with a one-file output (streamed, re-read and verified, then
// renamed).
ExportResult exportTagTensors(std::shared_ptr<const layout::OpenedCheckpoint> opened, const layout::Tag& tag,
                              const std::string& output, const ProgressSink& progress,
                              const CancelToken& cancel);

} // namespace ckpt::ops
