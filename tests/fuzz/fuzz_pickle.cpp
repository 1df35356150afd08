// Fuzzes the pickle VM, the Python-style rendering of whatever it builds, and the writer: any
// tree the VM accepts and the writer writes must parse back to a tree that renders the same
// (protocol 5, where every node kind has an opcode of its own). A difference is a crash.
#include "pickle/machine.h"
#include "pickle/writer.h"
#include "torch/torch_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    ckpt::pickle::Arena arena;
    ckpt::pickle::Limits limits;
    limits.maxNodes = 1u << 20;
    const auto pid = [](const ckpt::pickle::Value*) { return int64_t(-1); };
    ckpt::pickle::Result r;
    try {
        r = ckpt::pickle::parse({data, size}, arena, pid, limits);
    } catch (const ckpt::Error&) {
        return 0;
    }
    const std::string before = ckpt::torch::pyRepr(r.root, 1000);
    std::string written;
    try {
        written = ckpt::pickle::write(r.root, {5, 2000});
    } catch (const ckpt::Error&) {
        return 0; // trees no pickle can express (a cycle through constructor arguments), or too deep
    }
    ckpt::pickle::Arena again;
    limits.maxNodes = 4u << 20; // the writer may spell a node with a few more (memo, marks)
    const auto r2 = ckpt::pickle::parse({reinterpret_cast<const uint8_t*>(written.data()), written.size()},
                                        again, pid, limits); // throws (a crash here) if we wrote nonsense
    if (ckpt::torch::pyRepr(r2.root, 1000) != before) __builtin_trap();
    return 0;
}
