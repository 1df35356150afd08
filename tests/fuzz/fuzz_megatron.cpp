// Fuzzes the Megatron-Core family (issue 38): runs the real megatron-core wrote (tests/data/megatron)
// with one of their small files replaced: the tracker latest_checkpointed_iteration.txt, an
// iteration's metadata.json (its sharded backend), common.pt (the args, read by our pickle VM,
// never run), the DCP .metadata, or a legacy rank's model_optim_rng.pt (the TP shards merged by
// partition dimension against the args' sizes). The first input byte picks the run and the file;
// the run is then opened as a checkpoint and every tensor read, and its Hugging Face mapping
// planned. An Error or a warning is fine; a crash, a hang or an unbounded allocation is not.
#include "fuzz_folder.h"

namespace {

constexpr const char* kVictims[] = {"latest_checkpointed_iteration.txt",
                                    "iter_0000020/metadata.json",
                                    "iter_0000020/common.pt",
                                    "iter_0000020/.metadata",
                                    "iter_0000020/mp_rank_00/model_optim_rng.pt",
                                    "iter_0000020/mp_rank_01/model_optim_rng.pt"};
constexpr size_t kVictimCount = std::size(kVictims);

struct Run
{
    fuzz::fs::path dir, source;
};

const std::vector<Run>& runs()
{
    static const std::vector<Run> all = [] {
        std::vector<Run> out;
        for (const char* name : {"gpt_tp2pp2_fp32", "qwen_tp1pp1_qkvbias_fp32", "legacy_tp2pp1_fp32"}) {
            Run r;
            r.source = fuzz::fs::path(CKPT_TEST_DATA) / "megatron" / name;
            r.dir = fuzz::privateDir("fuzz_megatron") / name;
            fuzz::copyFixture(r.source, r.dir);
            out.push_back(r);
        }
        return out;
    }();
    return all;
}

uint8_t selector(size_t run, size_t victim)
{
    return uint8_t(run + victim * runs().size());
}

} // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***)
{
    const auto& all = runs();
    if (!fuzz::seedDir()) return 0;
    for (size_t r = 0; r < all.size(); ++r)
        for (size_t v = 0; v < kVictimCount; ++v) {
            const auto file = all[r].source / kVictims[v];
            std::error_code ec;
            if (fuzz::fs::is_regular_file(file, ec))
                fuzz::writeSeed("seed-" + std::to_string(r) + "-" + std::to_string(v), selector(r, v), file);
        }
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = runs();
    const Run& run = all[data[0] % all.size()];
    const char* victim = kVictims[(data[0] / all.size()) % kVictimCount];
    std::error_code ec;
    if (!fuzz::fs::is_regular_file(run.source / victim, ec)) return 0; // a run without it
    fuzz::writeFile(run.dir / victim, data + 1, size - 1);
    fuzz::openAndRead(run.dir.string());
    fuzz::openAndRead((run.dir / "iter_0000020").string());
    try { // the model as exported: the Hugging Face mapping (QKV per query group, fc1 halves, vocab)
        const auto model = ckpt::ops::anyTensors(run.dir.string(), {});
        std::vector<uint8_t> buf;
        for (const auto& t : model.tensors)
            if (t.tensor.fill && t.tensor.nbytes <= (16u << 20)) {
                buf.resize(t.tensor.nbytes);
                t.tensor.fill(0, t.tensor.nbytes, buf.data());
            }
    } catch (const ckpt::Error&) {
    }
    fuzz::fs::copy_file(run.source / victim, run.dir / victim, fuzz::fs::copy_options::overwrite_existing);
    return 0;
}
