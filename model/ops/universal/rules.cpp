// Whether ds_to_universal would take the tag at all (preflight): refusals by file name, before
// anything but the first files is parsed.
#include "ops/universal/internal.h"

namespace ckpt::ops::uni {

// Refusals that need only file names and the first files, so that a missing rank file is named
// as the file that is missing (not just "rank 3"). Returns the tensor-parallel degree: the
// highest mp rank of any rank file, or more where the first model file says so
// (checkpoint_parallel_dimensions' tp_degree, mp_world_size); every (tp, dp) file must exist.
int preflight(const std::vector<layout::RankFile>& files, const std::string& tagDir, RankFiles& parsed)
{
    std::map<std::pair<int, int>, const layout::RankFile*> optims; // (tp, dp)
    std::string prefix;
    bool stage3Models = false;
    std::set<std::pair<int, int>> models; // (tp, dp); dp -1: mp_rank_XX_model_states.pt
    int tpDegree = 1;
    for (const auto& f : files) {
        if (f.role == layout::FileRole::Layer)
            throw Error("pipeline-parallel checkpoint (layer files such as " + f.name +
                            "): not converted to Universal yet",
                        tagDir);
        if (f.role == layout::FileRole::Expert || f.role == layout::FileRole::ExpertOptim)
            throw Error("MoE checkpoint (expert files such as " + f.name +
                            "): not converted to Universal yet",
                        tagDir);
        if (f.role == layout::FileRole::ModelStates || f.role == layout::FileRole::OptimStates)
            tpDegree = std::max(tpDegree, f.mpRank + 1);
        if (f.role == layout::FileRole::OptimStates) {
            optims[{f.mpRank, f.dpRank}] = &f;
            prefix = f.prefix;
        }
        if (f.role == layout::FileRole::ModelStates) {
            if (f.dpRank >= 0) stage3Models = true;
            models.insert({f.mpRank, f.dpRank});
        }
    }
    if (optims.empty())
        throw Error("no *_optim_states.pt files: a ZeRO-0 or non-ZeRO save has no optimizer partitions to "
                    "convert (ds_to_universal: \"can't find *_optim_states.pt files\")",
                    tagDir);
    const auto mp = [](int t) {
        std::string s = std::to_string(t);
        return "mp_rank_" + (s.size() < 2 ? "0" + s : s);
    };
    const auto optimName = [&](int t, int r) {
        return prefix + "zero_pp_rank_" + std::to_string(r) + "_" + mp(t) + "_optim_states.pt";
    };
    const auto modelName = [&](int t, int r) {
        return (r < 0 ? "" : "zero_pp_rank_" + std::to_string(r) + "_") + mp(t) + "_model_states.pt";
    };
    // Ranks 0..W-1 with W = partition_count of rank 0's file.
    const layout::RankFile* first = optims.count({0, 0}) ? optims.at({0, 0}) : nullptr;
    if (!first)
        throw Error("missing: the optimizer states of rank 0", (fs::path(tagDir) / optimName(0, 0)).string());
    const Value* pc = parsed.get(first->path).value("optimizer_state_dict/partition_count");
    int64_t world = 0;
    if (auto n = asInt(pc))
        world = *n;
    else if (auto l = torch::asInts(pc); l && !l->empty())
        world = *std::max_element(l->begin(), l->end());
    if (world <= 0 || world > (1 << 20))
        throw Error("no usable partition_count in the optimizer states", first->path);
    // The tensor-parallel degree the first model file declares (a missing mp_rank_01 file is named,
    // not taken for a save with one tensor-parallel rank).
    const std::string model0 = (fs::path(tagDir) / modelName(0, stage3Models ? 0 : -1)).string();
    if (models.count({0, stage3Models ? 0 : -1})) {
        const torch::TorchFile& m0 = parsed.get(model0);
        const auto declared = asInt(m0.value("checkpoint_parallel_dimensions/tp_degree"));
        const auto mpWorld = asInt(m0.value("mp_world_size"));
        for (const auto& d : {declared, mpWorld})
            if (d && *d > tpDegree && *d <= 4096) tpDegree = int(*d);
    }
    for (int t = 0; t < tpDegree; ++t) {
        const std::string of =
            tpDegree > 1 ? " of tensor-parallel rank " + std::to_string(t) + " of " + std::to_string(tpDegree)
                         : "";
        if (!stage3Models && !models.count({t, -1}))
            throw Error("missing: the model states" + of, (fs::path(tagDir) / modelName(t, -1)).string());
        for (int r = 0; r < world; ++r) {
            if (!optims.count({t, r}))
                throw Error("missing: the optimizer states of rank " + std::to_string(r) + " of " +
                                std::to_string(world) + of + " (the save did not complete on every rank)",
                            (fs::path(tagDir) / optimName(t, r)).string());
            if (stage3Models && !models.count({t, r}))
                throw Error("missing: the model states of rank " + std::to_string(r) + " of " +
                                std::to_string(world) + of,
                            (fs::path(tagDir) / modelName(t, r)).string());
        }
    }
    for (const auto& [k, f] : optims)
        if (k.second >= world)
            throw Error("optimizer states of rank " + std::to_string(k.second) + " but partition_count is " +
                            std::to_string(world) + " (a stale file from an older save?)",
                        f->path);
    return tpDegree;
}

} // namespace ckpt::ops::uni
