// Fuzzes the Hugging Face folder's index (model.safetensors.index.json, pytorch_model.bin.index.json
// or another *.index.json with a weight_map): hostile JSON, shard names that leave the folder or
// name files that are no shard (config.json, the index itself), tensors listed twice, in no shard
// or in another shard than the index says must end in an Error or a warning, never in a crash.
// The first input byte picks the fixture folder (tests/data/hf: sharded safetensors, sharded .bin,
// the damaged index, and the unsharded folders) and the index's file name; the rest is the index.
// The folder is opened as a checkpoint and every tensor read.
#include "fuzz_folder.h"

namespace {

constexpr const char* kIndexNames[] = {"model.safetensors.index.json", "pytorch_model.bin.index.json",
                                       "custom.index.json"};
constexpr size_t kNames = std::size(kIndexNames);

struct Fixture
{
    fuzz::fs::path dir;
    fuzz::fs::path source;
};

const std::vector<Fixture>& fixtures()
{
    static const std::vector<Fixture> all = [] {
        std::vector<Fixture> out;
        for (const char* name :
             {"safetensors_sharded", "bin_sharded", "damaged_index", "safetensors", "bin"}) {
            Fixture f;
            f.source = fuzz::fs::path(CKPT_TEST_DATA) / "hf" / name;
            f.dir = fuzz::privateDir("fuzz_hf_index") / name;
            fuzz::copyFixture(f.source, f.dir);
            out.push_back(f);
        }
        return out;
    }();
    return all;
}

uint8_t selector(size_t fixture, size_t name)
{
    return uint8_t(fixture + name * fixtures().size());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const auto& all = fixtures();
    if (!fuzz::seedDir()) return 0;
    const auto st = all[0].source / kIndexNames[0], bin = all[1].source / kIndexNames[1];
    fuzz::writeSeed("seed-st-sharded", selector(0, 0), st);
    fuzz::writeSeed("seed-bin-sharded", selector(1, 1), bin);
    fuzz::writeSeed("seed-damaged", selector(2, 0), all[2].source / kIndexNames[0]);
    fuzz::writeSeed("seed-st-unsharded", selector(3, 0), st); // names shards that are not there
    fuzz::writeSeed("seed-bin-unsharded", selector(4, 1), bin);
    fuzz::writeSeed("seed-second-index", selector(0, 2), bin); // beside the folder's own index
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = fixtures();
    const Fixture& fx = all[data[0] % all.size()];
    const char* name = kIndexNames[(data[0] / all.size()) % kNames];
    fuzz::writeFile(fx.dir / name, data + 1, size - 1);
    fuzz::openAndRead(fx.dir.string());
    // Back to the fixture: its own index restored, any other removed.
    std::error_code ec;
    if (fuzz::fs::exists(fx.source / name, ec))
        fuzz::fs::copy_file(fx.source / name, fx.dir / name, fuzz::fs::copy_options::overwrite_existing);
    else
        fuzz::fs::remove(fx.dir / name, ec);
    return 0;
}
