// Fuzzes the DeepSpeed layouts zero_to_fp32 refuses and we consolidate: a pipeline tag (per-stage
// mp_rank_MM model files with module None, layer_LL-model_states.pt files, per-stage optimizer
// files), an MoE tag (layer_L_expert_E_mp_rank_MM_model_states.pt, expert groups partitioned over
// the expert-data-parallel ranks) and ZeRO stage 0 (one model file holding the optimizer's fp32
// groups). One file of a real fixture (tests/data/deepspeed-layouts) is replaced by the fuzzed
// bytes — hostile trees, lying shapes, partitions past their buffers, expert ids out of range —
// and the tag opened and every tensor read: an Error, never a crash. The first input byte picks
// the fixture and the file.
#include "fuzz_folder.h"

namespace {

struct Fixture
{
    fuzz::fs::path dir, source;
    std::vector<std::string> files;
};

const std::vector<Fixture>& fixtures()
{
    static const std::vector<Fixture> all = [] {
        std::vector<Fixture> out;
        for (const char* name :
             {"pipe_zero1_fp32_w2_pp2", "pipe_tied_zero1_fp32_w2_pp2", "moe_zero2_fp32_w4_ep2",
              "moe_zero1_fp32_w2_ep2", "zero0_bf16_w2", "zero0_fp32_w2"}) {
            Fixture f;
            f.source = fuzz::fs::path(CKPT_TEST_DATA) / "deepspeed-layouts" / name / "global_step2";
            f.dir = fuzz::privateDir("fuzz_deepspeed_layouts") / name / "global_step2";
            f.files = fuzz::copyFixture(f.source, f.dir);
            out.push_back(f);
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
    // Each fixture's files, a seed each (the selector's file index is the byte over the count).
    for (size_t i = 0; i < all.size(); ++i)
        for (size_t f = 0; f < all[i].files.size() && i + f * all.size() < 256; ++f)
            fuzz::writeSeed("seed-" + std::to_string(i) + "-" + std::to_string(f),
                            uint8_t(i + f * all.size()), all[i].source / all[i].files[f]);
    std::exit(0);
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    if (size < 1) return 0;
    const auto& all = fixtures();
    const Fixture& fx = all[data[0] % all.size()];
    const std::string& victim = fx.files[(data[0] / all.size()) % fx.files.size()];
    fuzz::writeFile(fx.dir / victim, data + 1, size - 1);
    fuzz::openAndRead(fx.dir.string());
    fuzz::fs::copy_file(fx.source / victim, fx.dir / victim, fuzz::fs::copy_options::overwrite_existing);
    return 0;
}
