// Fuzzes the DCP-over-safetensors family (issue 40): the shard files HuggingFaceStorageWriter
// wrote (tests/data/dcp-safetensors: fp32 and FP8) with one replaced — its header, its
// DCP_SHARDING_INFO (JSON inside the header's JSON: offsets of any rank, size or sign), its data —
// or the consolidated index beside them, which the shapes are checked against. The shard folder is
// then opened, every tensor read, and the model read as exported. An Error or a warning is fine.
#include "fuzz_folder.h"

namespace {

const fuzz::VictimRuns& runs()
{
    static const fuzz::VictimRuns r("fuzz_dcp_safetensors", "dcp-safetensors", {"fp32_w2", "fp8_w2"},
                                    {"sharded/shard-00001-model-00001-of-00002.safetensors",
                                     "sharded/shard-00002-model-00001-of-00002.safetensors",
                                     "sharded/shard-00002-model-00002-of-00002.safetensors",
                                     "model.safetensors.index.json", "model-00001-of-00002.safetensors"});
    return r;
}

void openFixture(const fuzz::fs::path& run)
{
    fuzz::openAndRead((run / "sharded").string());
    fuzz::openAndReadModel((run / "sharded").string());
}

} // namespace

CKPT_FUZZ_VICTIM_TARGET(runs, openFixture)
