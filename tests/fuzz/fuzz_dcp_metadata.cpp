// Fuzzes the `.metadata` parser of a PyTorch Distributed Checkpoint folder: a hostile pickle
// (wrong classes, fields of the wrong type, chunks that overlap, leave their tensor or have no
// storage item, items past their data file) must end in an Error, never in an out-of-bounds read
// or a runaway allocation. The first input byte picks the fixture folder (tests/data/dcp), the rest
// is its `.metadata`: parsed on its own, and when it parses, the folder is opened as a checkpoint
// and every tensor read, so the chunk items it describes are followed into the .distcp files.
#include "fuzz_folder.h"
#include "layout/dcp_metadata.h"

namespace {

const std::vector<fuzz::fs::path>& fixtures()
{
    static const std::vector<fuzz::fs::path> all = [] {
        std::vector<fuzz::fs::path> out;
        for (const char* name : {"fsdp2_fp32_w2", "fsdp2_bf16_w3", "dtensor_mixed_w3", "torchtitan_fp32_w2",
                                 "composer_bf16_w2"}) {
            const fuzz::fs::path dst = fuzz::privateDir("fuzz_dcp_metadata") / name;
            fuzz::copyFixture(fuzz::fs::path(CKPT_TEST_DATA) / "dcp" / name, dst);
            out.push_back(dst);
        }
        return out;
    }();
    return all;
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const auto& all = fixtures();
    if (!fuzz::seedDir()) return 0;
    for (size_t i = 0; i < all.size(); ++i)
        fuzz::writeSeed("seed-" + std::to_string(i), uint8_t(i), all[i] / ".metadata");
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = fixtures();
    const fuzz::fs::path& dir = all[data[0] % all.size()];
    try {
        const ckpt::io::ByteSpan bytes(data + 1, size - 1);
        const auto md = ckpt::layout::dcp::parseMetadata(bytes, ".metadata");
        // What the parser promises: every tensor chunk has a storage item, and fits its tensor.
        for (const auto& e : md.entries)
            for (const auto& c : e.chunks) {
                if (c.item.file.empty() || c.offsets.size() != e.shape.size() ||
                    c.sizes.size() != e.shape.size())
                    __builtin_trap();
                for (size_t i = 0; i < c.sizes.size(); ++i)
                    if (c.offsets[i] < 0 || c.sizes[i] < 0 || c.offsets[i] + c.sizes[i] > e.shape[i])
                        __builtin_trap();
            }
    } catch (const ckpt::Error&) {
        return 0;
    }
    fuzz::writeFile(dir / ".metadata", data + 1, size - 1);
    fuzz::openAndRead(dir.string());
    return 0;
}
