#include "ops/writers.h"

#include "compute_backend.h"
#include "io/tensor_hasher.h"
#include "io/verified_writer.h"
#include "safetensors/safetensors_file.h"
#include "torch/chunk_stream.h"
#include "torch/torch_file.h"

#include <memory>
#include <xxhash.h>

namespace ckpt::ops {

namespace {
[[noreturn]] void mismatch(const io::AtomicFile& out, const std::string& what)
{
    throw Error("verification after writing failed: " + what, out.finalPath());
}
} // namespace

std::vector<uint64_t> writeSafetensors(io::AtomicFile& out, std::vector<torch::OutTensor>& tensors,
                                       const std::map<std::string, std::string>& metadata,
                                       const std::function<void(uint64_t)>& onBytes,
                                       const CancelToken& cancel)
{
    const std::string header = safetensors::buildHeader(tensors, metadata);
    const uint64_t n = header.size();
    out.write(&n, 8);
    out.write(header.data(), header.size());
    io::TensorHasher hasher(tensors.size());
    torch::streamChunks(
        tensors,
        [&](size_t i, const uint8_t* data, uint64_t size) {
            hasher.update(i, data, size);
            out.write(data, size);
            if (onBytes) onBytes(size);
        },
        cancel);
    out.finish();
    return hasher.digests();
}

void verifySafetensors(const io::AtomicFile& out, const std::vector<torch::OutTensor>& tensors,
                       const std::vector<uint64_t>& hashes, const CancelToken& cancel)
{
    const auto check = safetensors::SafetensorsFile::open(out.tempPath());
    if (check->tensors().size() != tensors.size()) mismatch(out, "tensor count differs");
    std::map<std::string, const safetensors::TensorInfo*> byName;
    for (const auto& t : check->tensors())
        byName[t.name] = &t;
    for (size_t i = 0; i < tensors.size(); ++i) {
        cancel.throwIfCancelled();
        auto it = byName.find(tensors[i].name);
        if (it == byName.end() || it->second->shape != tensors[i].shape ||
            it->second->dtype != tensors[i].dtype)
            mismatch(out, "tensor '" + tensors[i].name + "' is missing or has another shape or dtype");
        const auto b = check->bytes(*it->second);
        if (io::hashReleasing(*check->file(), b.data(), b.size(), &cancel) != hashes[i])
            mismatch(out, "tensor '" + tensors[i].name + "' differs");
    }
}

void verifyTorchZip(const io::AtomicFile& out, const std::vector<torch::OutTensor>& tensors,
                    const std::vector<torch::Alias>& aliases, const std::vector<uint64_t>& hashes,
                    const CancelToken& cancel)
{
    const auto check = torch::TorchFile::open(out.tempPath());
    if (check->tensors().size() != tensors.size() + aliases.size()) mismatch(out, "tensor count differs");
    for (size_t i = 0; i < tensors.size(); ++i) {
        cancel.throwIfCancelled();
        const torch::Tensor* t = check->tensor(tensors[i].name);
        if (!t || t->shape != tensors[i].shape || t->dtype != tensors[i].dtype)
            mismatch(out, "tensor '" + tensors[i].name + "' is missing or has another shape or dtype");
        const auto blob = check->storageBytes(t->storage);
        if (blob.size() != t->nbytes())
            mismatch(out, "tensor '" + tensors[i].name + "' does not own compact storage");
        if (io::hashReleasing(check->mapped(), blob.bytes.data(), blob.size(), &cancel) != hashes[i])
            mismatch(out, "tensor '" + tensors[i].name + "' differs");
    }
    for (const auto& a : aliases) {
        const torch::Tensor* t = check->tensor(a.name);
        const torch::Tensor* target = check->tensor(a.target);
        if (!t || !target || t->storage != target->storage)
            mismatch(out, "alias '" + a.name + "' is not shared");
    }
}

} // namespace ckpt::ops
