// ZeRO stages 1-3 and BF16_Optimizer: the trainable parameters cut out of each rank's flat
// partitions (stage 1/2: per flat group; stage 3: per sub-group, each parameter over every
// rank), then the buffers, frozen parameters and tied aliases the model file states.
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

// A trainable parameter as param_shapes names it (name -> torch.Size), in flat group `group`.
Parameter shapedParameter(const Value* key, const Value* shape, int group, uint64_t offset,
                          const OpenFile& m0)
{
    Parameter p;
    p.name = asString(key).value_or("?");
    auto dims = asInts(shape);
    if (!dims) fail("param_shapes entry '" + p.name + "' is not a shape", m0.info.path);
    p.shape = *dims;
    p.group = group;
    p.groupOffset = offset;
    return p;
}

// A whole tensor of the model file's `module` (a buffer, or a frozen parameter at stage 1).
std::optional<Parameter> fromModule(const OpenFile& m0, const std::string& name, Parameter::Kind kind)
{
    const torch::Tensor* t = m0.file->tensor("module/" + name);
    if (!t) return std::nullopt;
    Parameter p;
    p.name = name;
    p.kind = kind;
    p.shape = t->shape;
    p.dtype = t->dtype;
    RankSlice s;
    s.length = t->numel();
    s.master.push_back(source(m0, "module/" + name, 0, t->numel()));
    p.slices.push_back(std::move(s));
    return p;
}

namespace {

// The step of a parameter's optimizer group as the optimizer saved it, from the file holding its
// first partition: what ds_to_universal writes as its step.pt. Only a tensor (torch >= 1.12) has
// pieces to read; a plain number is left to the conversion, which copies the pickle.
void addGroupStep(Parameter& p, size_t g, const OpenFile* holder)
{
    if (!holder) return;
    const std::string sp = "optimizer_state_dict/base_optimizer_state/state/" + std::to_string(g) + "/step";
    const torch::Tensor* t = holder->file->tensor(sp);
    if (!t) return;
    RankSlice r;
    r.length = t->numel();
    r.master.push_back(source(*holder, sp, 0, t->numel()));
    p.state.push_back(OptimizerState{"step", t->shape, t->dtype, {std::move(r)}, false, true});
}

} // namespace

// Step 8a, ZeRO-1/2 and BF16_Optimizer: each flat group is cut into one partition per rank of
// the group's partition (`byRank`: every rank, or an MoE expert group's expert-data-parallel
// ranks); rank r holds [r * P, r * P + L_r) of it. Slices are labelled with the files' ranks.
void flatGroup(const Tag& tag, size_t g, const Value* shapes, const OpenFile& m0, const FilesByRank& byRank,
               std::vector<Parameter>& trainable)
{
    const uint64_t W = byRank.size();
    // Per-rank partition: saved length L_r (padding dropped, except BF16_Optimizer),
    // stride P = the moments' length (always the full partition).
    std::vector<uint64_t> saved(W), start(W);
    uint64_t P = 0;
    for (uint64_t r = 0; r < W; ++r) {
        const OpenFile& o = *byRank[r];
        saved[r] =
            tensorAt(o, "optimizer_state_dict/single_partition_of_fp32_groups/" + std::to_string(g)).numel();
        if (const torch::Tensor* m = o.file->tensor("optimizer_state_dict/base_optimizer_state/state/" +
                                                    std::to_string(g) + "/exp_avg"))
            P = std::max<uint64_t>(P, m->numel());
        P = std::max(P, saved[r]);
    }
    for (uint64_t r = 0; r < W; ++r)
        start[r] = r * P;
    uint64_t offset = 0;
    for (const auto& [k, v] : shapes->entries) {
        Parameter p = shapedParameter(k, v, int(g), offset, m0);
        const uint64_t n = p.numel();
        const OpenFile* firstHolder = nullptr;
        for (uint64_t r = 0; r < W; ++r) {
            const uint64_t lo = std::max(offset, start[r]), hi = std::min(offset + n, start[r] + saved[r]);
            if (lo >= hi) continue;
            if (!firstHolder) firstHolder = byRank[r];
            RankSlice s;
            s.rank = byRank[r]->info.dpRank;
            s.paramOffset = lo - offset;
            s.length = hi - lo;
            const OpenFile& o = *byRank[r];
            const std::string gs = std::to_string(g);
            s.master.push_back(source(o, "optimizer_state_dict/single_partition_of_fp32_groups/" + gs,
                                      lo - start[r], hi - lo));
            for (const char* st : {"exp_avg", "exp_avg_sq"}) {
                const std::string sp = "optimizer_state_dict/base_optimizer_state/state/" + gs + "/" + st;
                if (o.file->tensor(sp))
                    p.addStatePieces(st, p.slices.size(), {source(o, sp, lo - start[r], hi - lo)});
            }
            p.slices.push_back(std::move(s));
        }
        p.alignStates();
        addGroupStep(p, g, firstHolder);
        uint64_t covered = 0;
        for (const auto& s : p.slices)
            covered += s.length;
        if (covered != n)
            fail("parameter '" + p.name + "' needs " + std::to_string(n) +
                     " elements but the rank partitions hold " + std::to_string(covered) +
                     " (partition layout does not match param_shapes)",
                 byRank[0]->info.path);
        offset += n;
        trainable.push_back(std::move(p));
    }
    uint64_t total = 0;
    for (uint64_t r = 0; r < W; ++r)
        total += saved[r];
    const uint64_t align = 2 * W;
    if ((offset + align - 1) / align != (total + align - 1) / align && tag.deepspeed->optimizer == "zero")
        fail("consumed " + std::to_string(offset) + " elements out of " + std::to_string(total) +
                 " in group " + std::to_string(g) + ": partition layout does not match param_shapes",
             byRank[0]->info.path);
}

std::vector<Parameter> flatGroupParameters(const Tag& tag, const Value* paramShapes, const OpenFile& m0,
                                           const FilesByRank& byRank)
{
    std::vector<Parameter> trainable;
    for (size_t g = 0; g < paramShapes->items.size(); ++g)
        flatGroup(tag, g, paramShapes->items[g], m0, byRank, trainable);
    return trainable;
}

// Step 8b, ZeRO-3: each rank's virtual concatenation of its sub-group flats; a parameter with
// n elements takes ceil(n/W) per rank at a running offset.
std::vector<Parameter> subGroupParameters(const Tag& tag, const Value* paramShapes, const OpenFile& m0,
                                          const FilesByRank& byRank)
{
    const uint64_t W = uint64_t(tag.worldSize);
    std::vector<Parameter> trainable;
    std::vector<std::vector<uint64_t>> flatStart(W);
    for (uint64_t r = 0; r < W; ++r) {
        const Value* flats = byRank[r]->file->value("optimizer_state_dict/fp32_flat_groups");
        if (!flats || flats->kind != Kind::List)
            fail("no fp32_flat_groups in optimizer states", byRank[r]->info.path);
        uint64_t acc = 0;
        for (size_t s = 0; s < flats->items.size(); ++s) {
            flatStart[r].push_back(acc);
            acc += tensorAt(*byRank[r], "optimizer_state_dict/fp32_flat_groups/" + std::to_string(s)).numel();
        }
        flatStart[r].push_back(acc);
    }
    uint64_t O = 0;
    for (size_t g = 0; g < paramShapes->items.size(); ++g) {
        for (const auto& [k, v] : paramShapes->items[g]->entries) {
            Parameter p = shapedParameter(k, v, int(g), O, m0);
            const uint64_t n = p.numel(), per = (n + W - 1) / W;
            for (uint64_t r = 0; r < W; ++r) {
                const uint64_t lo = std::min(r * per, n), hi = std::min((r + 1) * per, n);
                RankSlice s;
                s.rank = int(r);
                s.paramOffset = lo;
                s.length = hi - lo;
                s.padding = per - (hi - lo);
                if (hi > lo) {
                    // locate [O, O + len) in this rank's sub-group flats (may cross one boundary)
                    uint64_t want = O, left = hi - lo;
                    const auto& fsr = flatStart[r];
                    size_t sg = 0;
                    while (sg + 1 < fsr.size() && fsr[sg + 1] <= want)
                        ++sg;
                    while (left) {
                        if (sg + 1 >= fsr.size())
                            fail("consumed more elements than rank " + std::to_string(r) +
                                     "'s fp32_flat_groups hold",
                                 byRank[r]->info.path);
                        const uint64_t take = std::min(left, fsr[sg + 1] - want);
                        const std::string gs = std::to_string(sg);
                        const OpenFile& o = *byRank[r];
                        s.master.push_back(
                            source(o, "optimizer_state_dict/fp32_flat_groups/" + gs, want - fsr[sg], take));
                        for (const char* st : {"exp_avg", "exp_avg_sq"}) {
                            const std::string sp =
                                "optimizer_state_dict/optimizer_state_dict/state/" + gs + "/" + st;
                            if (!o.file->tensor(sp)) continue;
                            p.addStatePieces(st, p.slices.size(), {source(o, sp, want - fsr[sg], take)});
                        }
                        want += take, left -= take, ++sg;
                    }
                }
                p.slices.push_back(std::move(s));
            }
            O += per;
            p.alignStates();
            trainable.push_back(std::move(p));
        }
    }
    if (O != flatStart[0].back())
        fail("consumed " + std::to_string(O * W) + " elements out of " +
                 std::to_string(flatStart[0].back() * W) + ": partition layout does not match param_shapes",
             byRank[0]->info.path);
    return trainable;
}

// Step 8: the trainable parameters from param_shapes and the partition layout of the stage.
std::vector<Parameter> trainableParameters(const Tag& tag, const OpenFile& m0, const FilesByRank& byRank)
{
    const Value* paramShapes = dictGet(m0.file->root(), "param_shapes");
    if (!paramShapes || paramShapes->kind != Kind::List)
        fail("model states file has no param_shapes (not saved by a ZeRO optimizer?)", m0.info.path);
    if (tag.deepspeed->zeroStage <= 2) return flatGroupParameters(tag, paramShapes, m0, byRank);
    if (tag.deepspeed->zeroStage == 3) return subGroupParameters(tag, paramShapes, m0, byRank);
    fail("unknown ZeRO stage " + std::to_string(tag.deepspeed->zeroStage), byRank.front()->info.path);
}

// Step 9: buffers, whole in the first model file's `module`.
void addBuffers(Tag& tag, const OpenFile& m0)
{
    const Value* bufferNames = dictGet(m0.file->root(), "buffer_names");
    if (!bufferNames || bufferNames->kind != Kind::List || !dictGet(m0.file->root(), "module")) return;
    for (const Value* b : bufferNames->items) {
        const std::string name = asString(b).value_or("");
        if (auto p = fromModule(m0, name, Parameter::Kind::Buffer))
            tag.params.push_back(std::move(*p));
        else // zero_to_fp32 leaves it out as silently; a model loading the result will not
            tag.warnings.push_back(m0.info.name + ": buffer '" + name +
                                   "' is listed in buffer_names but is not a tensor in 'module': left out");
    }
}

// Step 10: frozen parameters: from frozen_param_fragments (ZeRO-3: one fragment per rank), or
// at stage 1, where DeepSpeed saves no fragments, whole from `module`.
void addFrozen(Tag& tag, const OpenTag& open, const std::vector<Parameter>& trainable)
{
    const OpenFile& m0 = open.models.front();
    const Value* root = m0.file->root();
    const Value* frozenShapes = dictGet(root, "frozen_param_shapes");
    const Value* module = dictGet(root, "module");
    if (frozenShapes && frozenShapes->entries.size()) {
        for (const auto& [k, v] : frozenShapes->entries) {
            Parameter p;
            p.name = asString(k).value_or("?");
            p.kind = Parameter::Kind::Frozen;
            const auto dims = asInts(v);
            if (!dims) fail("frozen_param_shapes entry '" + p.name + "' is not a shape", m0.info.path);
            p.shape = *dims;
            const uint64_t n = p.numel();
            const std::string path = "frozen_param_fragments/" + p.name;
            if (tag.deepspeed->zeroStage == 3) {
                // each rank's model file holds a ceil(n/W) fragment
                uint64_t got = 0;
                for (const auto& m : open.digests) {
                    if (got >= n) break;
                    const auto it = m.frozenFragments.find(p.name);
                    if (it == m.frozenFragments.end())
                        fail("expected a tensor at '" + path + "'", m.info.path);
                    p.dtype = it->second.dtype;
                    RankSlice s;
                    s.rank = m.info.dpRank;
                    s.paramOffset = got;
                    s.length = std::min<uint64_t>(it->second.numel, n - got);
                    s.master.push_back(Source::flat(m.info.path, path, 0, s.length, it->second.dtype));
                    got += s.length;
                    p.slices.push_back(std::move(s));
                }
                if (got != n)
                    fail("frozen parameter '" + p.name + "' fragments are incomplete", m0.info.path);
            } else {
                const torch::Tensor& t = tensorAt(m0, path);
                p.dtype = t.dtype;
                RankSlice s;
                s.length = n;
                s.master.push_back(source(m0, path, 0, n));
                p.slices.push_back(std::move(s));
            }
            tag.params.push_back(std::move(p));
        }
    } else if (tag.deepspeed->zeroStage == 1 && module) {
        // zero_to_fp32 silently drops stage-1 frozen parameters; they are whole in `module`.
        std::set<std::string> known;
        for (const auto& p : trainable)
            known.insert(p.name);
        std::set<std::string> buffers;
        if (const Value* bufferNames = dictGet(root, "buffer_names"))
            for (const Value* b : bufferNames->items)
                buffers.insert(asString(b).value_or(""));
        const Value* shared = dictGet(root, "shared_params");
        for (const auto& [k, v] : module->entries) {
            const std::string name = asString(k).value_or("");
            if (known.count(name) || buffers.count(name) || dictGet(shared, name)) continue;
            auto p = fromModule(m0, name, Parameter::Kind::Frozen);
            if (!p) continue;
            tag.params.push_back(std::move(*p));
            tag.warnings.push_back("frozen parameter '" + name +
                                   "' recovered from the module weights (zero_to_fp32 drops it at stage 1)");
        }
    }
}

// Step 11: tied parameters, aliases of one already in the tag.
void addTiedAliases(Tag& tag, const OpenFile& m0)
{
    const Value* shared = dictGet(m0.file->root(), "shared_params");
    if (!shared) {
        tag.warnings.push_back("model states file has no shared_params (saved before DeepSpeed 0.9): "
                               "tied weights are not known");
        return;
    }
    for (const auto& [k, v] : shared->entries) {
        const std::string alias = asString(k).value_or(""), target = asString(v).value_or("");
        auto it = std::find_if(tag.params.begin(), tag.params.end(),
                               [&](const Parameter& p) { return p.name == target; });
        if (it == tag.params.end()) {
            tag.warnings.push_back(m0.info.name + ": tied parameter '" + alias + "' is an alias of '" +
                                   target + "', which the checkpoint does not hold: left out");
            continue;
        }
        Parameter p;
        p.name = alias;
        p.kind = it->kind;
        p.shape = it->shape;
        p.dtype = it->dtype;
        p.tiedTo = target;
        tag.params.push_back(std::move(p));
    }
}

} // namespace ckpt::layout::ds
