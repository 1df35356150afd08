#include "ops/tensor_digest.h"

#include "compute_backend.h"
#include "io/error.h"
#include "io/verified_writer.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <cstdio>
#include <xxhash.h>

namespace ckpt::ops {

namespace {

constexpr uint64_t kChunk = 8u << 20;

// A strided view's elements in C order, gathered a chunk at a time (a transposed or sliced tensor
// is rare in a checkpoint, and never worth a copy of itself).
uint64_t digestStrided(const gpu::StridedView& v, const CancelToken& cancel)
{
    const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    const uint64_t per = std::max<uint64_t>(1, kChunk / v.elementSize), numel = v.numel();
    std::vector<uint8_t> buf(std::min(per, numel) * v.elementSize);
    for (uint64_t first = 0; first < numel; first += per) {
        cancel.throwIfCancelled();
        const uint64_t n = std::min(per, numel - first);
        gpu::cpuBackend().gather(v, first, n, buf.data());
        XXH3_64bits_update(state.get(), buf.data(), n * v.elementSize);
    }
    return XXH3_64bits_digest(state.get());
}

// The last byte a view reads, plus one (0 for an empty tensor); nullopt for a negative stride.
std::optional<uint64_t> viewEnd(const torch::Tensor& t)
{
    if (t.numel() == 0) return 0;
    int64_t last = t.storageOffset;
    for (size_t i = 0; i < t.shape.size(); ++i) {
        if (t.stride[i] < 0 || t.storageOffset < 0) return std::nullopt;
        last += (t.shape[i] - 1) * t.stride[i];
    }
    return (uint64_t(last) + 1) * torch::elementSize(t.dtype);
}

} // namespace

std::vector<TensorDigest> tensorDigests(const torch::TorchFile& file, const CancelToken& cancel)
{
    std::vector<TensorDigest> out;
    for (const torch::Tensor& t : file.tensors()) {
        if (t.storage < 0 || !t.note.empty() || t.stride.size() != t.shape.size()) continue;
        const io::Blob blob = file.storageBytes(t.storage);
        const io::ByteSpan bytes = blob.bytes;
        const auto end = viewEnd(t);
        if (!end || *end > bytes.size())
            throw Error("tensor '" + t.path + "' reads past the end of its storage '" +
                            file.storages()[size_t(t.storage)].key + "' (" + std::to_string(bytes.size()) +
                            " bytes)",
                        file.path());
        const uint32_t es = torch::elementSize(t.dtype);
        uint64_t digest;
        if (t.isContiguous())
            digest =
                io::hashReleasing(file, bytes.data() + uint64_t(t.storageOffset) * es, t.nbytes(), &cancel);
        else
            digest = digestStrided({bytes.data(), es, t.shape, t.stride, t.storageOffset}, cancel);
        out.push_back({t.path, digest});
    }
    return out;
}

std::vector<TensorDigest> tensorDigests(const safetensors::SafetensorsFile& file, const CancelToken& cancel)
{
    std::vector<TensorDigest> out;
    for (const safetensors::TensorInfo& t : file.tensors()) {
        const io::ByteSpan b = file.bytes(t);
        out.push_back({t.name, io::hashReleasing(*file.file(), b.data(), b.size(), &cancel)});
    }
    return out;
}

std::string digestHex(uint64_t digest)
{
    char buf[24];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(digest));
    return buf;
}

std::optional<uint64_t> parseDigestHex(const std::string& text)
{
    if (text.size() != 16) return std::nullopt;
    uint64_t v = 0;
    for (char c : text) {
        int d;
        if (c >= '0' && c <= '9')
            d = c - '0';
        else if (c >= 'a' && c <= 'f')
            d = c - 'a' + 10;
        else
            return std::nullopt;
        v = v << 4 | uint64_t(d);
    }
    return v;
}

} // namespace ckpt::ops
