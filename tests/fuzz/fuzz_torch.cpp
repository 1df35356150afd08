// Fuzzes the whole torch.save reader: zip or legacy container, pickle, tensor recognition,
// bounds checks, and a contiguous gather of every tensor it accepts.
#include "compute_backend.h"
#include "torch/torch_file.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    ckpt::pickle::Limits limits;
    limits.maxNodes = 1u << 20;
    try {
        auto f = ckpt::torch::TorchFile::open(
            ckpt::io::MappedFile::fromBuffer({data, data + size}, "fuzz.pt"), limits);
        for (const auto& t : f->tensors()) {
            if (t.storage < 0 || t.nbytes() > (16u << 20)) continue;
            std::vector<uint8_t> out(t.nbytes());
            const auto blob = f->storageBytes(t.storage);
            ckpt::gpu::StridedView v{blob.bytes.data(), ckpt::torch::elementSize(t.dtype), t.shape, t.stride,
                                     t.storageOffset};
            ckpt::gpu::cpuBackend().gather(v, 0, t.numel(), out.data());
        }
    } catch (const ckpt::Error&) {
    }
    return 0;
}
