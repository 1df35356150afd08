// Fuzzes the pickle VM and the Python-style rendering of whatever it builds.
#include "pickle/machine.h"
#include "torch/torch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    ckpt::pickle::Arena arena;
    ckpt::pickle::Limits limits;
    limits.maxNodes = 1u << 20;
    try {
        auto r = ckpt::pickle::parse(
            {data, size}, arena, [](const ckpt::pickle::Value*) { return int64_t(-1); }, limits);
        (void)ckpt::torch::pyRepr(r.root, 1000);
    } catch (const ckpt::Error&) {
    }
    return 0;
}
