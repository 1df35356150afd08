// Fuzzes the verl family (issue 40) and the DTensor spec reader above all: verl checkpoints are
// downloaded from strangers, and every parameter of them is a pickled DTensor whose placements,
// device mesh and coordinate our pickle VM reads (never runs). Runs verl's FSDPCheckpointManager
// wrote (tests/data/verl: FSDP2 on a 1-D mesh, FSDP1 HSDP on a 2-D one) with one file replaced:
// a rank's model or optimizer file, the extra state, fsdp_config.json or the tracker. The run is
// opened, every tensor read, and the model read as exported. An Error is fine; a crash, a hang or
// an unbounded allocation is not.
#include "fuzz_folder.h"

namespace {

const fuzz::VictimRuns& runs()
{
    static const fuzz::VictimRuns r(
        "fuzz_verl", "verl", {"fsdp2_w2", "hsdp_fsdp1_w4"},
        {"latest_checkpointed_iteration.txt", "global_step_4/actor/model_world_size_2_rank_0.pt",
         "global_step_4/actor/model_world_size_2_rank_1.pt",
         "global_step_4/actor/optim_world_size_2_rank_1.pt",
         "global_step_4/actor/model_world_size_4_rank_0.pt",
         "global_step_4/actor/model_world_size_4_rank_3.pt",
         "global_step_4/actor/extra_state_world_size_2_rank_0.pt", "global_step_4/actor/fsdp_config.json"});
    return r;
}

void openFixture(const fuzz::fs::path& run)
{
    fuzz::openAndRead(run.string());
    fuzz::openAndReadModel(run.string());
}

} // namespace

CKPT_FUZZ_VICTIM_TARGET(runs, openFixture)
