// Fuzzes the Megatron-Core family (issue 38): runs the real megatron-core wrote (tests/data/megatron)
// with one of their small files replaced: the tracker latest_checkpointed_iteration.txt, an
// iteration's metadata.json (its sharded backend), common.pt (the args, read by our pickle VM,
// never run), the DCP .metadata, a legacy rank's model_optim_rng.pt (the TP shards merged by
// partition dimension against the args' sizes), Megatron-Bridge's run_config.yaml or NeMo 2's
// model.yaml (our YAML scalar reader), its tokenizer.json (the vocabulary) or weights/common.pt, or an
// optimizer run's .metadata (per-parameter states, dp_reshardable buckets placed per parameter, a tied
// TP2 PP2 run's shared-embedding buckets among them) or distrib_optim.pt. The run is
// then opened as a checkpoint, every tensor read, the model read as exported (the Hugging Face mapping) and
// the optimizer state placed on its tensors read.
// An Error or a warning is fine; a crash, a hang or an unbounded allocation is not.
#include "fuzz_folder.h"

namespace {

const fuzz::VictimRuns& runs()
{
    static const fuzz::VictimRuns r(
        "fuzz_megatron", "megatron",
        {"gpt_tp2pp2_fp32", "qwen_tp1pp1_qkvbias_fp32", "legacy_tp2pp1_fp32", "bridge_llama_tp1pp1_fp32",
         "nemo2_llama_tp1pp1_fp32", "gpt_tp1pp1_dp2_distopt_fully_bf16", "gpt_tp1pp1_dp2_distopt_dp_fp32",
         "legacy_tp1pp1_dp2_distopt_fp32", "legacy_gpt2_tp2pp1_fp32", "gpt_tp2pp2_dp2_distopt_dp_tied_fp32",
         "legacy_tp2pp1_dp2_distopt_fp32"},
        {"latest_checkpointed_iteration.txt", "iter_0000020/metadata.json", "iter_0000020/common.pt",
         "iter_0000020/.metadata", "iter_0000020/mp_rank_00/model_optim_rng.pt",
         "iter_0000020/mp_rank_01/model_optim_rng.pt", "iter_0000002/run_config.yaml", "context/model.yaml",
         "context/nemo_tokenizer/tokenizer.json", "weights/common.pt", "weights/.metadata",
         "iter_0000002/.metadata", "iter_0000002/common.pt", "iter_0000002/mp_rank_00/distrib_optim.pt",
         "iter_0000002/mp_rank_00/model_optim_rng.pt", "iter_0000002/mp_rank_01/distrib_optim.pt"});
    return r;
}

void openFixture(const fuzz::fs::path& run)
{
    fuzz::openAndRead(run.string());
    fuzz::openAndRead((run / "iter_0000020").string());
    fuzz::openAndRead(
        (run / "iter_0000002").string()); // the optimizer runs' (their tensors, moments included)
    fuzz::openAndReadModel(run.string());
    fuzz::openAndReadMoments(run.string());
}

} // namespace

CKPT_FUZZ_VICTIM_TARGET(runs, openFixture)
