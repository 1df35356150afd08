// Whether ds_to_universal would take the tag at all (preflight), and universal_checkpoint_info's
// merge rules (how merge_tp_slices merges each parameter's tensor-parallel slices).
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

// ---------------------------------------------------------------------------------------------
// universal_checkpoint_info: how ds_to_universal merges the tensor-parallel slices of a parameter
// (merge_tp_slices). With one tensor-parallel rank only the keys it writes and the vocabulary
// cut remain.

Pattern compiled(const std::string& s, const std::string& file)
{
    try {
        return {s, std::regex(s)};
    } catch (const std::regex_error& e) {
        throw Error("universal_checkpoint_info pattern '" + s +
                        "' is not a regular expression we can read (" + e.what() + ")",
                    file);
    }
}

// Python's re.match: anchored at the start only.
bool reMatch(const Pattern& p, const std::string& name)
{
    return std::regex_search(name, p.re, std::regex_constants::match_continuous);
}

Rules readRules(const Value* info, const std::string& file)
{
    Rules r;
    if (!info) return r;
    if (info->kind != Kind::Dict) throw Error("universal_checkpoint_info is not a dict", file);
    for (const char* refused : {"affine_map", "autotp_unsupported_parameter_patterns"}) {
        const Value* v = dictGet(info, refused);
        if (v && !(v->kind == Kind::Dict && v->entries.empty()) && v->kind != Kind::None)
            throw Error(std::string("universal_checkpoint_info has '") + refused +
                            "' (AutoTP metadata): not converted to Universal yet",
                        file);
    }
    std::set<std::string> all;
    r.replicated = Rules::list(info, "tp_replicated_parameter_patterns", all, file);
    r.average = Rules::list(info, "parameter_to_average_patterns", all, file);
    r.row = Rules::list(info, "parameter_with_row_parallelism_patterns", all, file);
    r.vocab = Rules::list(info, "vocabulary_parameter_patterns", all, file);
    r.twoSub = Rules::list(info, "parameter_with_2_sub_params_cat_dim_0", all, file);
    if (const Value* sp = dictGet(info, "parameter_with_sub_params"); sp && sp->kind != Kind::None) {
        if (sp->kind != Kind::List && sp->kind != Kind::Tuple)
            throw Error("universal_checkpoint_info 'parameter_with_sub_params' is not a list", file);
        for (const Value* e : sp->items) {
            // SubparamShape(**entry): exactly these three keys.
            if (!e || e->kind != Kind::Dict || e->entries.size() != 3 || !dictGet(e, "patterns") ||
                !dictGet(e, "shape") || !dictGet(e, "partition_dim"))
                throw Error(
                    "universal_checkpoint_info 'parameter_with_sub_params' holds an entry that is not "
                    "{patterns, shape, partition_dim}",
                    file);
            SubParams s;
            s.patternsNode = dictGet(e, "patterns");
            s.shapeNode = dictGet(e, "shape");
            s.dimNode = dictGet(e, "partition_dim");
            const auto dim = asInt(s.dimNode);
            if (!dim || *dim < 0 || (s.shapeNode->kind != Kind::Tuple && s.shapeNode->kind != Kind::List) ||
                size_t(*dim) >= s.shapeNode->items.size())
                throw Error("universal_checkpoint_info 'parameter_with_sub_params': partition_dim is not a "
                            "dimension of its shape",
                            file);
            s.partitionDim = *dim;
            if (s.patternsNode->kind != Kind::List && s.patternsNode->kind != Kind::Tuple)
                throw Error("universal_checkpoint_info 'parameter_with_sub_params' patterns are not a list",
                            file);
            for (const Value* p : s.patternsNode->items) {
                const auto text = asString(p);
                if (!text)
                    throw Error(
                        "universal_checkpoint_info 'parameter_with_sub_params' holds a non-string pattern",
                        file);
                s.patterns.push_back(compiled(*text, file));
                all.insert(*text);
            }
            r.subParams.push_back(std::move(s));
        }
    }
    r.shardWidths = dictGet(info, "sub_param_shard_widths");
    r.version = torch::asFloat(dictGet(info, "universal_checkpoint_version"))
                    .value_or(double(asInt(dictGet(info, "universal_checkpoint_version")).value_or(0)));
    r.originalVocab = asInt(dictGet(info, "original_vocab_size"));
    if (!r.vocab.empty() && !r.originalVocab)
        throw Error("universal_checkpoint_info has vocabulary patterns but no original_vocab_size", file);
    r.unused = all;
    return r;
}

} // namespace ckpt::ops::uni
