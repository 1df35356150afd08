// Fuzzes what a Hugging Face Trainer run folder says about itself: trainer_state.json (hostile
// JSON: deep nesting, wrong types, huge or non-finite numbers, an endless log_history) parsed
// alone, and the run-folder discovery around it — a run of the real Trainer (tests/data/trainer)
// with one of its small files replaced: a checkpoint's trainer_state.json, config.json, `latest`
// (the DeepSpeed tag it names), tokenizer_config.json, or training_args.bin / scheduler.pt / an RNG
// state (pickles our VM reads, never runs). The first input byte picks the run and the file; the
// run folder is then opened as a checkpoint and every tensor read. An Error or a warning is fine.
#include "fuzz_folder.h"
#include "layout/trainer_state.h"

namespace {

// Files of a checkpoint the fuzzer may replace, relative to checkpoint-2/ of each run; "" is the
// trainer_state.json parser on its own.
constexpr const char* kVictims[] = {"",
                                    "checkpoint-2/trainer_state.json",
                                    "checkpoint-4/trainer_state.json",
                                    "checkpoint-2/config.json",
                                    "checkpoint-2/latest",
                                    "checkpoint-2/training_args.bin",
                                    "checkpoint-2/scheduler.pt",
                                    "checkpoint-2/rng_state_0.pth",
                                    "checkpoint-2/tokenizer_config.json"};
constexpr size_t kVictimCount = std::size(kVictims);

struct Run
{
    fuzz::fs::path dir, source;
};

const std::vector<Run>& runs()
{
    static const std::vector<Run> all = [] {
        std::vector<Run> out;
        for (const char* name : {"gpt2_zero2_fp32_w2", "gpt2_plain_w1", "gpt2_save_only_model_w2"}) {
            Run r;
            r.source = fuzz::fs::path(CKPT_TEST_DATA) / "trainer" / name;
            r.dir = fuzz::privateDir("fuzz_trainer") / name;
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
            const auto file = all[r].source / (v == 0 ? "checkpoint-4/trainer_state.json" : kVictims[v]);
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
    if (!*victim) {
        try {
            ckpt::layout::parseTrainerState(
                std::string_view(reinterpret_cast<const char*>(data + 1), size - 1), "trainer_state.json");
        } catch (const ckpt::Error&) {
        }
        return 0;
    }
    std::error_code ec;
    const bool existed = fuzz::fs::exists(run.source / victim, ec);
    if (!fuzz::fs::is_directory((run.dir / victim).parent_path(), ec)) return 0; // a run without it
    fuzz::writeFile(run.dir / victim, data + 1, size - 1);
    fuzz::openAndRead(run.dir.string());
    fuzz::openAndRead((run.dir / "checkpoint-2").string());
    if (existed)
        fuzz::fs::copy_file(run.source / victim, run.dir / victim,
                            fuzz::fs::copy_options::overwrite_existing);
    else
        fuzz::fs::remove(run.dir / victim, ec);
    return 0;
}
