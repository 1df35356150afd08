// Fuzzes the PyTorch Lightning family (issue 40): `.ckpt` files are pickles users download and
// `torch.load` blind; we read them with our pickle VM (never run). Runs lightning's ModelCheckpoint
// wrote (tests/data/lightning: single-file checkpoints, the FSDP strategy's DCP folder and the
// DeepSpeed strategy's ZeRO folder) with one file replaced: a .ckpt (its version key, the state
// dict, the optimizer states tied to parameters by id and shape), FSDP's meta.pt or .metadata, or
// DeepSpeed's `latest` and rank files. The run and one .ckpt are opened, every tensor read, and the
// model read as exported. An Error is fine; a crash, a hang or an unbounded allocation is not.
#include "fuzz_folder.h"

namespace {

const fuzz::VictimRuns& runs()
{
    static const fuzz::VictimRuns r(
        "fuzz_lightning", "lightning", {"single", "direct_sgd_bf16", "fsdp", "deepspeed_stage2"},
        {"last.ckpt", "epoch=0-step=2.ckpt", "epoch=1-step=4.ckpt/meta.pt", "epoch=1-step=4.ckpt/.metadata",
         "epoch=1-step=4.ckpt/latest", "epoch=1-step=4.ckpt/checkpoint/mp_rank_00_model_states.pt",
         "epoch=1-step=4.ckpt/checkpoint/zero_pp_rank_0_mp_rank_00_optim_states.pt"});
    return r;
}

void openFixture(const fuzz::fs::path& run)
{
    fuzz::openAndRead(run.string());
    fuzz::openAndReadModel(run.string());
    if (fuzz::fs::exists(run / "last.ckpt")) fuzz::openAndRead((run / "last.ckpt").string());
}

} // namespace

CKPT_FUZZ_VICTIM_TARGET(runs, openFixture)
