#include "ops/writers.h"

#include "compute_backend.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <memory>
#include <xxhash.h>

namespace ckpt::ops {

namespace {
constexpr uint64_t kChunk = 16u << 20; // bytes per write: bounds memory whatever the tensor size

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
    uint64_t largest = 1;
    for (const auto& t : tensors)
        largest = std::max(largest, t.nbytes);
    std::vector<uint8_t> buf(std::min(kChunk, largest));
    std::vector<uint64_t> hashes;
    for (const auto& t : tensors) {
        const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> st(XXH3_createState(),
                                                                          &XXH3_freeState);
        XXH3_64bits_reset(st.get());
        for (uint64_t off = 0; off < t.nbytes; off += buf.size()) {
            cancel.throwIfCancelled();
            const uint64_t count = std::min<uint64_t>(buf.size(), t.nbytes - off);
            t.fill(off, count, buf.data());
            XXH3_64bits_update(st.get(), buf.data(), count);
            out.write(buf.data(), count);
            if (onBytes) onBytes(count);
        }
        hashes.push_back(XXH3_64bits_digest(st.get()));
    }
    out.finish();
    return hashes;
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
        if (XXH3_64bits(b.data(), b.size()) != hashes[i])
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
        if (XXH3_64bits(blob.bytes.data(), blob.size()) != hashes[i])
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
