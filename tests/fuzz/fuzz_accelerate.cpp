// Fuzzes the Accelerate family (issue 40): save_state folders are uploaded to the Hub as they are,
// and optimizer.bin, scheduler.bin, the RNG states and custom objects are pickles we read with our
// pickle VM (never run). Folders accelerate's save_state wrote (tests/data/accelerate: a
// checkpoints/checkpoint_N run, two models, pytorch_model.bin instead of safetensors, FSDP's DCP
// folders) with one file replaced: a model file, an optimizer (its moments tied to parameters by
// order or shape), the scheduler, an RNG state, a custom checkpoint or FSDP's .metadata. The
// folder is opened, every tensor read, and the model read as exported. An Error is fine; a crash,
// a hang or an unbounded allocation is not.
#include "fuzz_folder.h"

namespace {

const fuzz::VictimRuns& runs()
{
    static const fuzz::VictimRuns r(
        "fuzz_accelerate", "accelerate", {"plain", "two_models", "safe_false", "fsdp"},
        {"checkpoints/checkpoint_1/model.safetensors", "checkpoints/checkpoint_1/optimizer.bin",
         "checkpoints/checkpoint_1/custom_checkpoint_0.pkl", "model_1.safetensors", "optimizer_1.bin",
         "pytorch_model.bin", "optimizer.bin", "scheduler.bin", "random_states_0.pkl",
         "optimizer_0/.metadata", "pytorch_model_fsdp_0/.metadata", "pytorch_model_fsdp_0/__1_0.distcp"});
    return r;
}

void openFixture(const fuzz::fs::path& run)
{
    fuzz::openAndRead(run.string());
    fuzz::openAndReadModel(run.string());
}

} // namespace

CKPT_FUZZ_VICTIM_TARGET(runs, openFixture)
