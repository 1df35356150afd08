#include "ops/export.h"

#include "compute_backend.h"
#include "io/output.h"
#include "layout/family.h"
#include "ops/consolidate.h"
#include "ops/tensor_source.h"
#include "ops/verify.h"
#include "ops/writers.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"
#include "torch/torch_writer.h"

#include <filesystem>
#include <map>
#include <memory>
#include <set>

namespace ckpt::ops {

ExportResult exportFileToSafetensors(const std::string& input, const std::string& output,
                                     const ExportOptions& options, const ProgressSink& progress,
                                     const CancelToken& cancel)
{
    // Before any work: the output may not be, or be inside, the input.
    io::OutputTransaction::precheck({input}, output, io::OutputTransaction::Shape::File);
    if (!options.manifestOut.empty())
        io::OutputTransaction::precheck({input}, options.manifestOut, io::OutputTransaction::Shape::File);
    return exportFileToSafetensors(layout::openTag(input, {}), output, options, progress, cancel);
}

ExportResult exportFileToSafetensors(const layout::OpenedTag& in, const std::string& output,
                                     const ExportOptions& options, const ProgressSink& progress,
                                     const CancelToken& cancel)
{
    const std::string& input = in.checkpoint->model.opened;
    io::OutputTransaction tx(in.inputs(), output, io::OutputTransaction::Shape::File);
    reportNotes(progress, tx.notes());
    if (!in.checkpoint->model.singleFile || in->files.size() != 1)
        throw Error("not a single torch.save file: export it to a folder", input);
    // The file as the opening parsed it (the registry's single-file family): never parsed again.
    const auto parsed = in.files().get(in->files.front().path);
    if (!parsed->torch()) throw Error("already a safetensors file", input);
    const torch::TorchFile* f = parsed->torch();
    ExportResult result;
    result.path = output;

    std::vector<safetensors::OutTensor> out;
    std::map<std::string, std::string> metadata{{"format", "pt"}};
    std::vector<std::string> unsupported;
    std::set<std::string> names;
    const auto& tensors = f->tensors();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const torch::Tensor& t = tensors[i];
        // The same Python object reached twice: one copy, the alias recorded as safetensors'
        // save_model does (metadata[removed] = kept).
        if (t.aliasOf >= 0) {
            metadata[t.path] = tensors[size_t(t.aliasOf)].path;
            continue;
        }
        std::string why;
        if (t.storage < 0)
            why = t.note;
        else if (!t.note.empty())
            why = t.note;
        else if (torch::info(t.dtype).safetensors.empty())
            why = std::string(torch::name(t.dtype)) + " has no safetensors dtype";
        if (!why.empty()) {
            unsupported.push_back("'" + t.path + "' (" + why + ")");
            continue;
        }
        if (!names.insert(t.path).second)
            throw Error("two tensors would both be named '" + t.path + "'", input);
        safetensors::OutTensor o;
        o.name = t.path;
        o.dtype = t.dtype;
        o.shape = t.shape;
        o.nbytes = t.nbytes();
        const int storage = t.storage;
        o.fill = [&f, &t, storage](uint64_t offset, uint64_t count, uint8_t* dst) {
            // Stored zip entries are spans of the map; TorchFile inflates a deflated one once and
            // keeps only the recent ones (a cache here would hold every tensor's until the end).
            const io::Blob blob = f->storageBytes(storage);
            gpu::StridedView v{blob.bytes.data(), torch::elementSize(t.dtype), t.shape, t.stride,
                               t.storageOffset};
            const uint32_t es = v.elementSize;
            gpu::cpuBackend().gather(v, offset / es, count / es, dst);
        };
        out.push_back(std::move(o));
    }
    if (!unsupported.empty()) {
        if (!options.skipUnsupported) {
            std::string list;
            for (size_t i = 0; i < unsupported.size() && i < 3; ++i)
                list += (i ? ", " : "") + unsupported[i];
            if (unsupported.size() > 3) list += " and " + std::to_string(unsupported.size() - 3) + " more";
            throw UnsupportedTensors("cannot be exported to safetensors: " + list, input);
        }
        for (const auto& u : unsupported)
            result.warnings.push_back("left out " + u);
    }

    uint64_t total = 0;
    for (const auto& o : out)
        total += o.nbytes;
    uint64_t done = 0;
    VerifiedWriter writer(tx, cancel, [&](const std::string&, uint64_t n) {
        done += n;
        if (progress) progress({int(total ? done * 900 / total : 900), "writing", done, total});
    });
    const io::AtomicFile& file = writer.safetensors({}, out, metadata);
    if (progress) progress({900, "verifying", done, total});
    writer.verified();
    tx.commit();
    result.tensors = out.size();
    result.bytes = file.written();
    if (!options.manifestOut.empty()) {
        writeManifest(in.inputs(), options.manifestOut,
                      {{std::filesystem::path(output).filename().string(), result.bytes, "",
                        writer.digests().begin()->second}},
                      {{"checkpoint", input}});
        result.manifest = options.manifestOut;
    }
    if (progress) progress({1000, "done", done, total});
    return result;
}

ExportResult exportTagTensors(std::shared_ptr<const layout::OpenedCheckpoint> opened, const layout::Tag& tag,
                              const std::string& output, const ProgressSink& progress,
                              const CancelToken& cancel)
{
    // The export of a model, written as one file: the same plan, writer and checks.
    const auto ends = [&](const std::string& e) {
        return output.size() > e.size() && output.compare(output.size() - e.size(), e.size(), e) == 0;
    };
    ConsolidateOptions options;
    options.oneFile = true;
    options.format = ends(".pt") || ends(".bin") ? ConsolidateOptions::Format::Bin
                                                 : ConsolidateOptions::Format::Safetensors;
    const ConsolidateResult r =
        consolidate(layout::OpenedTag{std::move(opened), &tag}, output, options, progress, cancel);
    ExportResult result;
    result.path = output;
    result.tensors = r.tensors;
    result.bytes = r.bytes;
    result.warnings = r.warnings;
    return result;
}

} // namespace ckpt::ops
