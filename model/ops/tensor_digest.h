// Per-tensor digests: xxh3-64 of a tensor's elements in C order, in the dtype they are stored in.
// The same number whether the tensor is a view into a larger storage (a torch.save file) or a
// contiguous run (safetensors), and the same number an export's writer computes from the bytes it
// streams out (io::TensorHasher): a manifest of them proves, tensor by tensor, that a file still
// holds what was recorded, and that an export holds what it read.
#pragma once

#include "ops/job.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::torch {
class TorchFile;
}
namespace ckpt::safetensors {
class SafetensorsFile;
}

namespace ckpt::ops {

// 16 lower-case hex digits, as manifests write a digest; and back (nullopt for anything else).
std::string digestHex(uint64_t digest);
std::optional<uint64_t> parseDigestHex(const std::string& text);

struct TensorDigest
{
    std::string key; // the tensor's path in its file ("state_dict/model.fc.weight", a safetensors name)
    uint64_t xxh3 = 0;

    template <class V> static void describe(V& v)
    {
        v("key", &TensorDigest::key);
        v("xxh3", [](const TensorDigest& d) { return digestHex(d.xxh3); });
    }
};

// Every tensor with data, in file order; a view past its storage's end is an Error naming both.
std::vector<TensorDigest> tensorDigests(const torch::TorchFile& file, const CancelToken& cancel);
std::vector<TensorDigest> tensorDigests(const safetensors::SafetensorsFile& file, const CancelToken& cancel);

} // namespace ckpt::ops
