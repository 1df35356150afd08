#include "ops/export.h"

#include "compute_backend.h"
#include "io/atomic_file.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <map>
#include <memory>
#include <set>
#include <xxhash.h>

namespace ckpt::ops {

namespace {
constexpr uint64_t kChunk = 16u << 20; // bytes per write: bounds memory whatever the tensor size
}

ExportResult exportFileToSafetensors(const std::string& input, const std::string& output,
                                     const ExportOptions& options, const ProgressSink& progress,
                                     const CancelToken& cancel)
{
    const auto f = torch::TorchFile::open(input);
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
        o.fill = [&f, &t, storage, cache = std::make_shared<std::pair<int, io::Blob>>(-1, io::Blob{})](
                     uint64_t offset, uint64_t count, uint8_t* dst) {
            // Stored zip entries are spans of the map; a deflated one is inflated once per tensor.
            if (cache->first != storage) *cache = {storage, f->storageBytes(storage)};
            const io::Blob& blob = cache->second;
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
            throw Error("cannot be exported to safetensors: " + list +
                            " (use --skip-unsupported to leave them out)",
                        input);
        }
        for (const auto& u : unsupported)
            result.warnings.push_back("left out " + u);
    }

    const std::string header = safetensors::buildHeader(out, metadata);
    uint64_t total = 0;
    for (const auto& o : out)
        total += o.nbytes;

    io::AtomicFile file(output);
    const uint64_t n = header.size();
    file.write(&n, 8);
    file.write(header.data(), header.size());
    std::vector<uint8_t> buf(std::min<uint64_t>(kChunk, std::max<uint64_t>(total, 1)));
    std::vector<uint64_t> hashes;
    uint64_t done = 0;
    for (const auto& o : out) {
        const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(),
                                                                             &XXH3_freeState);
        XXH3_state_t* st = state.get();
        XXH3_64bits_reset(st);
        for (uint64_t off = 0; off < o.nbytes; off += buf.size()) {
            cancel.throwIfCancelled();
            const uint64_t count = std::min<uint64_t>(buf.size(), o.nbytes - off);
            o.fill(off, count, buf.data());
            XXH3_64bits_update(st, buf.data(), count);
            file.write(buf.data(), count);
            done += count;
            if (progress) progress({int(total ? done * 900 / total : 900), "writing " + o.name, done, total});
        }
        hashes.push_back(XXH3_64bits_digest(st));
    }
    file.finish();

    // Verify by re-reading what landed on disk before it takes the final name.
    if (progress) progress({900, "verifying", done, total});
    const auto check = safetensors::SafetensorsFile::open(file.tempPath());
    if (check->tensors().size() != out.size())
        throw Error("verification failed: tensor count differs", output);
    std::map<std::string, const safetensors::TensorInfo*> byName;
    for (const auto& t : check->tensors())
        byName[t.name] = &t;
    for (size_t i = 0; i < out.size(); ++i) {
        cancel.throwIfCancelled();
        auto it = byName.find(out[i].name);
        if (it == byName.end() || it->second->shape != out[i].shape || it->second->dtype != out[i].dtype ||
            XXH3_64bits(check->bytes(*it->second).data(), check->bytes(*it->second).size()) != hashes[i])
            throw Error("verification failed: tensor '" + out[i].name + "' differs after writing", output);
    }
    file.commit();
    if (progress) progress({1000, "done", done, total});
    result.tensors = out.size();
    result.bytes = 8 + header.size() + total;
    return result;
}

} // namespace ckpt::ops
