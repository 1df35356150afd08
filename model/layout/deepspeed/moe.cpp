// MoE (deepspeed.moe.layer.MoE): the expert parameters of each expert-parallel rank under their
// global expert ids, beside the parameters every rank shares.
#include "layout/deepspeed.h"
#include "layout/deepspeed/internal.h"

#include "compute_backend.h"
#include "io/error.h"
#include "io/input_file.h"
#include "io/location.h"
#include "io/mapped_file.h"
#include "io/zip_reader.h"
#include "layout/sharding.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>
#include <variant>

namespace ckpt::layout::ds {

// The local expert id in an MoE expert parameter's name and where it sits
// ("moe.deepspeed_moe.experts.deepspeed_experts.1.0.weight" -> 1 at 44), or npos.
std::pair<size_t, size_t> expertIdAt(const std::string& name)
{
    static const std::string kExperts = ".deepspeed_experts.";
    const size_t at = name.find(kExperts);
    if (at == std::string::npos) return {std::string::npos, 0};
    const size_t from = at + kExperts.size();
    size_t end = from;
    while (end < name.size() && std::isdigit(uint8_t(name[end])))
        ++end;
    if (end == from) return {std::string::npos, 0};
    return {from, end - from};
}

// Renames an expert group's parameters from rank 0's local ids to the global ids of ep rank
// `ep`: global = ep * local experts + local, the local experts counted per MoE layer (the
// name's part before the id) from the names param_shapes gives.
void globalExpertNames(std::vector<Parameter>& params, int ep, const OpenFile& m0)
{
    std::map<std::string, std::set<std::string>> localIds; // layer prefix -> ids
    for (const auto& p : params)
        if (const auto [at, n] = expertIdAt(p.name); at != std::string::npos)
            localIds[p.name.substr(0, at)].insert(p.name.substr(at, n));
    for (auto& p : params) {
        const auto [at, n] = expertIdAt(p.name);
        if (at == std::string::npos)
            fail("'" + p.name + "' is in an expert parameter group but names no expert", m0.info.path);
        const uint64_t local = std::stoull(p.name.substr(at, n)),
                       count = localIds[p.name.substr(0, at)].size();
        p.name = p.name.substr(0, at) + std::to_string(uint64_t(ep) * count + local) + p.name.substr(at + n);
    }
}

// The expert files' tensors by name (each file holds one global expert, names as the module's
// state dict gives them after the rewrite to global ids).
std::map<std::string, std::pair<const torch::Tensor*, const OpenFile*>>
expertTensors(const std::vector<OpenFile>& experts)
{
    std::map<std::string, std::pair<const torch::Tensor*, const OpenFile*>> out;
    for (const auto& f : experts)
        for (const auto& t : f.file->tensors())
            if (!out.emplace(t.path, std::make_pair(&t, &f)).second)
                fail("expert tensor '" + t.path + "' is in two expert files", f.info.path);
    return out;
}

// MoE (deepspeed.moe.layer.MoE): param_shapes names the non-expert groups and each expert group
// (the param group flagged `moe`) with rank 0's local expert ids; every rank's optimizer file
// holds its partition of the non-expert groups (over all W ranks) and of its own experts' groups
// (over its expert-data-parallel ranks, partition_count W / ep_size; ep_rank = rank % ep_size).
std::vector<Parameter> moeParameters(Tag& tag, const OpenTag& open, const FilesByRank& byRank,
                                     const std::vector<OpenFile>& experts)
{
    const OpenFile& m0 = open.models.front();
    const OpenFile& o0 = *byRank.front();
    const Value* paramShapes = dictGet(m0.file->root(), "param_shapes");
    if (!paramShapes || paramShapes->kind != Kind::List)
        fail("model states file has no param_shapes (not saved by a ZeRO optimizer?)", m0.info.path);
    if (tag.deepspeed->zeroStage > 2)
        fail("an MoE model with ZeRO stage 3 is not consolidated", o0.info.path);
    const auto counts = asInts(o0.file->value("optimizer_state_dict/partition_count"));
    if (!counts || counts->size() != paramShapes->items.size())
        fail("partition_count does not list one count per param_shapes group", o0.info.path);
    const int W = tag.worldSize;
    std::vector<Parameter> trainable;
    nlohmann::ordered_json ranks = nlohmann::ordered_json::object();
    for (size_t g = 0; g < counts->size(); ++g) {
        const int pc = int((*counts)[g]);
        if (pc == W) {
            flatGroup(tag, g, paramShapes->items[g], m0, byRank, trainable);
            continue;
        }
        const Value* flag = o0.file->value("optimizer_state_dict/base_optimizer_state/param_groups/" +
                                           std::to_string(g) + "/moe");
        const bool moe = flag && flag->kind == Kind::Bool && flag->boolean;
        if (!moe || pc <= 0 || W % pc)
            fail("group " + std::to_string(g) + " is partitioned over " + std::to_string(pc) + " of " +
                     std::to_string(W) + " ranks but is not an expert group",
                 o0.info.path);
        const int ep = W / pc;
        for (int e = 0; e < ep; ++e) {
            FilesByRank edp; // the expert-data-parallel ranks of ep rank e
            for (int r = e; r < W; r += ep)
                edp.push_back(byRank[size_t(r)]);
            std::vector<Parameter> params;
            flatGroup(tag, g, paramShapes->items[g], m0, edp, params);
            globalExpertNames(params, e, m0);
            std::set<uint64_t> ids; // the global experts of ep rank e
            for (auto& p : params) {
                const auto [at, n] = expertIdAt(p.name);
                ids.insert(std::stoull(p.name.substr(at, n)));
                trainable.push_back(std::move(p));
            }
            for (int r = e; r < W; r += ep)
                for (uint64_t id : ids)
                    ranks[std::to_string(r)].push_back(id);
        }
    }
    // Every trained expert parameter is one its expert file names, with that shape; what the
    // expert files hold beyond them is frozen (not in the optimizer's groups).
    const auto inFiles = expertTensors(experts);
    std::set<std::string> trained;
    for (const auto& p : trainable) {
        trained.insert(p.name);
        if (expertIdAt(p.name).first == std::string::npos) continue;
        const auto it = inFiles.find(p.name);
        if (it == inFiles.end() || it->second.first->shape != p.shape)
            fail("expert parameter '" + p.name + "' (a global id from partition_count " +
                     "and param_shapes) is not in any expert file with that shape",
                 m0.info.path);
    }
    for (const auto& [name, at] : inFiles)
        if (!trained.count(name)) {
            Parameter p = wholeTensor(*at.second, name, name, Parameter::Kind::Frozen);
            tag.params.push_back(std::move(p));
        }
    tag.deepspeed->experts =
        MoeExperts{torch::pickleToJson(dictGet(m0.file->root(), "num_experts")), experts.size(), ranks};
    return trainable;
}

} // namespace ckpt::layout::ds
