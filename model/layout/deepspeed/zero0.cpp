// DeepSpeed ZeRO stage 0 (plain data parallelism): one model file holds the whole model in
// `module`, and its `optimizer` the non-ZeRO optimizer's state — for a bf16/fp16 model
// FP16_UnfusedOptimizer's fp32 masters, a list per group of per-parameter tensors that name no
// parameter. Which master is whose is read here: from the order of the groups where that is
// certain, else from the values (each step copies a master into its module parameter, rounded).
#include "cast.h"
#include "layout/deepspeed/internal.h"
#include "torch/pickle_json.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <set>
#include <variant>

namespace ckpt::layout::ds {

namespace {

// param_shapes, frozen_param_shapes and shared_params are None at stage 0, so which module
// tensor is trainable, frozen or tied has to be read from the module and the optimizer themselves.

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string s;
    for (int64_t d : shape)
        s += (s.empty() ? "" : ", ") + std::to_string(d);
    return "[" + s + "]";
}

// A module tensor that shares its bytes with an earlier one (a tied weight: state_dict() gives
// each name its own tensor object over one storage).
bool sameBytes(const torch::Tensor& a, const torch::Tensor& b)
{
    return a.storage >= 0 && a.storage == b.storage && a.storageOffset == b.storageOffset &&
           a.shape == b.shape && a.stride == b.stride && a.dtype == b.dtype;
}

// The module's entries that are parameters (buffers out), each with the earlier name it is tied
// to ("" when none), in module order.
struct ModuleEntry
{
    std::string name;
    const torch::Tensor* tensor = nullptr;
    std::string tiedTo;
};

std::vector<ModuleEntry> moduleParameters(const OpenFile& m0, const std::set<std::string>& buffers)
{
    std::vector<ModuleEntry> out;
    std::map<std::pair<int, int64_t>, size_t> byStorage; // (storage, offset) -> first entry there
    const Value* module = dictGet(m0.file->root(), "module");
    for (const auto& [k, v] : module->entries) {
        const std::string name = asString(k).value_or("");
        const torch::Tensor* t = m0.file->tensor("module/" + name);
        if (!t || buffers.count(name)) continue;
        ModuleEntry e{name, t, {}};
        if (t->storage >= 0) {
            const auto [at, first] = byStorage.try_emplace({t->storage, t->storageOffset}, out.size());
            if (!first && sameBytes(*out[at->second].tensor, *t)) e.tiedTo = out[at->second].name;
        }
        out.push_back(std::move(e));
    }
    return out;
}

// The optimizer's per-group parameter shapes: from the fp32 masters (`fp32_groups`, a list per
// group of per-parameter tensors, FP16_UnfusedOptimizer), else from the torch state's moments
// (`param_groups[g].params` -> `state[id].exp_avg`). Empty when neither says.
struct MasterGroups
{
    std::vector<std::vector<std::vector<int64_t>>> shapes; // [group][param]
    std::vector<std::vector<std::string>> paths;           // the master tensors, when saved
};

MasterGroups optimizerShapes(const OpenFile& m0)
{
    MasterGroups g;
    const Value* groups = m0.file->value("optimizer/fp32_groups");
    if (groups && groups->kind == Kind::List) {
        for (size_t i = 0; i < groups->items.size(); ++i) {
            g.shapes.emplace_back(), g.paths.emplace_back();
            const Value* group = groups->items[i];
            for (size_t j = 0; group && j < group->items.size(); ++j) {
                const std::string path =
                    "optimizer/fp32_groups/" + std::to_string(i) + "/" + std::to_string(j);
                g.shapes.back().push_back(tensorAt(m0, path).shape);
                g.paths.back().push_back(path);
            }
        }
        return g;
    }
    const Value* paramGroups = m0.file->value("optimizer/param_groups");
    if (!paramGroups || paramGroups->kind != Kind::List) return g;
    for (const Value* pg : paramGroups->items) {
        g.shapes.emplace_back();
        const Value* ids = dictGet(pg, "params");
        for (size_t j = 0; ids && j < ids->items.size(); ++j) {
            const torch::Tensor* m = m0.file->tensor(
                "optimizer/state/" + std::to_string(asInt(ids->items[j]).value_or(-1)) + "/exp_avg");
            if (!m) return {}; // a stateless optimizer (SGD without momentum): nothing to match
            g.shapes.back().push_back(m->shape);
        }
    }
    return g;
}

// Per group and parameter, the index of its module entry.
using Match = std::vector<std::vector<size_t>>;
constexpr size_t kByValue = size_t(-1); // placed by value, not by order

// Matches each group's shapes, in order, to the untied module parameters in module order
// (torch param groups list parameters as named_parameters() yields them). Masters of a shape in
// `byValue` are left kByValue, and module entries of those shapes are not taken. Returns why the
// order cannot say when it cannot.
std::variant<Match, std::string> matchInOrder(const std::vector<ModuleEntry>& entries,
                                              const MasterGroups& groups,
                                              const std::set<std::vector<int64_t>>& byValue)
{
    Match match;
    std::vector<bool> used(entries.size(), false);
    for (size_t g = 0; g < groups.shapes.size(); ++g) {
        match.emplace_back();
        size_t at = 0;
        for (const auto& shape : groups.shapes[g]) {
            if (byValue.count(shape)) {
                match.back().push_back(kByValue);
                continue;
            }
            while (at < entries.size() &&
                   (used[at] || !entries[at].tiedTo.empty() || entries[at].tensor->shape != shape))
                ++at;
            if (at == entries.size())
                return "optimizer group " + std::to_string(g) + " holds a parameter of shape " +
                       shapeText(shape) + " that no module parameter after the group's previous ones has";
            used[at] = true;
            match.back().push_back(at++);
        }
    }
    return match;
}

// The shapes whose masters the order alone cannot place: held by more than one group, or shared
// by a module parameter the optimizer does not hold (a frozen one), which either could be.
std::map<std::vector<int64_t>, std::string> shapesOrderCannotPlace(const std::vector<ModuleEntry>& entries,
                                                                   const MasterGroups& groups)
{
    std::map<std::vector<int64_t>, std::set<size_t>> groupsOf;
    std::map<std::vector<int64_t>, size_t> masters, modules;
    for (size_t g = 0; g < groups.shapes.size(); ++g)
        for (const auto& shape : groups.shapes[g])
            groupsOf[shape].insert(g), ++masters[shape];
    for (const auto& e : entries)
        if (e.tiedTo.empty()) ++modules[e.tensor->shape];
    std::map<std::vector<int64_t>, std::string> out;
    for (const auto& [shape, gs] : groupsOf)
        if (gs.size() > 1)
            out[shape] = "parameters of shape " + shapeText(shape) + " are in more than one optimizer group";
        else if (modules[shape] > masters[shape])
            out[shape] = "a parameter the optimizer does not hold has the shape " + shapeText(shape) +
                         " of a trained one";
    return out;
}

// A contiguous tensor's bytes in its file; nullopt when it is not laid out contiguously.
std::optional<io::ByteSpan> tensorBytes(const OpenFile& f, const torch::Tensor& t, io::Blob& holder)
{
    if (t.storage < 0 || !t.isContiguous()) return std::nullopt;
    holder = f.file->storageBytes(t.storage);
    const uint64_t begin = uint64_t(t.storageOffset) * torch::elementSize(t.dtype);
    if (begin > holder.size() || t.nbytes() > holder.size() - begin) return std::nullopt;
    return holder.bytes.subspan(begin, t.nbytes());
}

std::optional<gpu::Scalar> halfScalar(torch::DType d)
{
    if (d == torch::DType::BFloat16) return gpu::Scalar::BF16;
    if (d == torch::DType::Float16) return gpu::Scalar::F16;
    return std::nullopt;
}

// Whether the fp32 `master`, rounded to the module's dtype as DeepSpeed copies it after a step
// (round to nearest even), is `module` bit for bit. Compared a block at a time: a master that is
// not the module's differs in its first block, almost always in its first element.
bool roundsTo(io::ByteSpan master, io::ByteSpan module, gpu::Scalar to)
{
    constexpr uint64_t kBlock = 4096;
    const uint64_t n = master.size() / 4, width = module.size() / std::max<uint64_t>(n, 1);
    if (n * width != module.size()) return false;
    uint8_t rounded[kBlock * 2];
    for (uint64_t i = 0; i < n; i += kBlock) {
        const uint64_t k = std::min(kBlock, n - i);
        gpu::castElements(gpu::Scalar::F32, to, master.data() + i * 4, rounded, k);
        if (std::memcmp(rounded, module.data() + i * width, k * width) != 0) return false;
    }
    return true;
}

// Places the masters `match` left kByValue by the module parameter each rounds to. Where two
// module parameters look alike, masters equal bit for bit may take them in order (either way the
// same model); masters that differ cannot, and that is said.
std::optional<std::string> matchByValue(Match& match, const std::vector<ModuleEntry>& entries,
                                        const MasterGroups& groups, const OpenFile& m0)
{
    struct Master
    {
        size_t g, j;
        io::ByteSpan bytes;
        io::Blob holder;
        std::set<size_t> candidates;
    };
    std::vector<Master> masters;
    std::set<size_t> taken;
    for (const auto& group : match)
        for (size_t i : group)
            if (i != kByValue) taken.insert(i);
    std::map<size_t, std::pair<io::ByteSpan, io::Blob>> moduleBytes;
    for (size_t g = 0; g < match.size(); ++g)
        for (size_t j = 0; j < match[g].size(); ++j) {
            if (match[g][j] != kByValue) continue;
            Master m{g, j, {}, {}, {}};
            const torch::Tensor& t = tensorAt(m0, groups.paths[g][j]);
            const auto bytes = t.dtype == torch::DType::Float32 ? tensorBytes(m0, t, m.holder) : std::nullopt;
            if (!bytes)
                return "the fp32 master " + groups.paths[g][j] + " is not a contiguous float32 tensor";
            m.bytes = *bytes;
            for (size_t i = 0; i < entries.size(); ++i) {
                const torch::Tensor& e = *entries[i].tensor;
                const auto to = halfScalar(e.dtype);
                if (taken.count(i) || !entries[i].tiedTo.empty() || e.shape != t.shape || !to) continue;
                auto it = moduleBytes.find(i);
                if (it == moduleBytes.end()) {
                    io::Blob h;
                    const auto b = tensorBytes(m0, e, h);
                    if (!b) continue;
                    it = moduleBytes.emplace(i, std::make_pair(*b, std::move(h))).first;
                }
                if (roundsTo(m.bytes, it->second.first, *to)) m.candidates.insert(i);
            }
            if (m.candidates.empty())
                return "the fp32 master " + groups.paths[g][j] +
                       " rounds to no module parameter of its shape " + shapeText(t.shape);
            masters.push_back(std::move(m));
        }
    // A master with one candidate owns it; that may leave others with one.
    for (bool changed = true; changed;) {
        changed = false;
        for (const auto& m : masters) {
            if (m.candidates.size() != 1) continue;
            const size_t owner = *m.candidates.begin();
            for (auto& other : masters)
                if (&other != &m && other.candidates.erase(owner)) changed = true;
        }
    }
    // What is left: masters sharing one set of look-alike module parameters.
    std::map<std::set<size_t>, std::vector<Master*>> alike;
    for (auto& m : masters) {
        if (m.candidates.empty()) return "two fp32 masters round to the same one module parameter";
        alike[m.candidates].push_back(&m);
    }
    for (auto& [candidates, ms] : alike) {
        const io::ByteSpan first = ms.front()->bytes; // (clang: no structured binding in a lambda)
        const auto sameAsFirst = [first](const Master* m) {
            return m->bytes.size() == first.size() &&
                   std::memcmp(m->bytes.data(), first.data(), first.size()) == 0;
        };
        if (ms.size() > 1 &&
            (ms.size() != candidates.size() || !std::all_of(ms.begin(), ms.end(), sameAsFirst))) {
            std::string names;
            for (size_t i : candidates)
                names += (names.empty() ? "'" : ", '") + entries[i].name + "'";
            return names + " hold the same " +
                   std::string(torch::name(entries[*candidates.begin()].tensor->dtype)) +
                   " values, and their fp32 masters differ: no master says which is whose";
        }
        auto next = candidates.begin();
        for (Master* m : ms)
            match[m->g][m->j] = *next++;
    }
    return std::nullopt;
}

// Which module parameter each master belongs to, per group and parameter, or why that is not
// certain. The order of the groups says it where every shape's masters lie in one group and no
// frozen parameter shares their shape; the rest are placed by value, when the masters were saved.
std::variant<Match, std::string> matchMasters(const std::vector<ModuleEntry>& entries,
                                              const MasterGroups& groups, const OpenFile& m0)
{
    const auto unsure = shapesOrderCannotPlace(entries, groups);
    std::set<std::vector<int64_t>> byValue;
    if (!groups.paths.empty())
        for (const auto& [shape, why] : unsure)
            byValue.insert(shape);
    else if (!unsure.empty())
        return unsure.begin()->second;
    auto matched = matchInOrder(entries, groups, byValue);
    if (auto* match = std::get_if<Match>(&matched); match && !byValue.empty())
        if (auto why = matchByValue(*match, entries, groups, m0)) return *why;
    return matched;
}

} // namespace

void openStageZero(Tag& tag, const OpenFile& m0)
{
    tag.deepspeed->zeroStage = 0;
    tag.worldSize = int(asInt(dictGet(m0.file->root(), "dp_world_size")).value_or(0));
    const Value* module = dictGet(m0.file->root(), "module");
    if (!module || module->kind == Kind::None) {
        tag.deepspeed->optimizer = "none";
        tag.notExportable = "tag '" + tag.name +
                            "' has neither ZeRO optimizer states nor weights in the 'module' of " +
                            m0.info.name;
        return;
    }
    const Value* optimizer = dictGet(m0.file->root(), "optimizer");
    tag.deepspeed->optimizer = dictGet(optimizer, "fp32_groups")            ? "fp16_unfused"
                               : dictGet(optimizer, "fp32_groups_flat")     ? "fp16_fused"
                               : optimizer && optimizer->kind != Kind::None ? "torch"
                                                                            : "none";
    std::set<std::string> buffers;
    if (const Value* names = dictGet(m0.file->root(), "buffer_names"))
        for (const Value* b : names->items)
            buffers.insert(asString(b).value_or(""));
    const std::vector<ModuleEntry> entries = moduleParameters(m0, buffers);
    const MasterGroups groups = optimizerShapes(m0);
    const auto matched = groups.shapes.empty()
                             ? std::variant<Match, std::string>(std::string("no optimizer state names them"))
                             : matchMasters(entries, groups, m0);
    const auto* match = std::get_if<0>(&matched);
    if (tag.deepspeed->optimizer == "fp16_fused") {
        // fp32_groups_flat: one flat tensor per group, not yet cut by parameter
        tag.notExportable = m0.info.name +
                            ": the fp32 masters are FP16_Optimizer's flat groups "
                            "(fp32_groups_flat), which this version does not cut into parameters";
        return;
    }
    if (tag.deepspeed->optimizer == "fp16_unfused" && !match) {
        // The module's own weights are the model DeepSpeed last synchronised from the masters:
        // exported as the module holds them (bf16), never widened to look like the masters.
        tag.exportDtype = std::nullopt;
        tag.warnings.push_back(m0.info.name +
                               ": the fp32 masters are not exported: which module parameter each of "
                               "FP16_UnfusedOptimizer's masters belongs to is not certain (" +
                               std::get<1>(matched) + "); the model is the module's own " + tag.dtype +
                               " weights, exported as the module holds them unless --dtype says otherwise");
    } else if (!match) {
        tag.warnings.push_back(m0.info.name +
                               ": the optimizer's state does not say which parameters are "
                               "trained (" +
                               std::get<1>(matched) + "): all are exported as trained");
    }
    // Trained parameters by module index -> their master (fp16_unfused) or "" (the module's own).
    std::map<size_t, std::pair<int, std::string>> trained;
    if (match)
        for (size_t g = 0; g < match->size(); ++g)
            for (size_t j = 0; j < (*match)[g].size(); ++j)
                trained[(*match)[g][j]] = {int(g), groups.paths.empty() ? "" : groups.paths[g][j]};
    // zero_to_fp32's order: buffers, frozen parameters, trainable ones, tied aliases
    for (const auto& [k, v] : module->entries)
        if (const std::string name = asString(k).value_or(""); buffers.count(name))
            if (m0.file->tensor("module/" + name))
                tag.params.push_back(wholeTensor(m0, name, "module/" + name, Parameter::Kind::Buffer));
    for (size_t i = 0; i < entries.size(); ++i)
        if (match && entries[i].tiedTo.empty() && !trained.count(i))
            tag.params.push_back(
                wholeTensor(m0, entries[i].name, "module/" + entries[i].name, Parameter::Kind::Frozen));
    // the trained ones in the optimizer's order (group by group), as its masters are
    std::vector<size_t> order;
    if (match)
        for (const auto& group : *match)
            order.insert(order.end(), group.begin(), group.end());
    else
        for (size_t i = 0; i < entries.size(); ++i)
            if (entries[i].tiedTo.empty()) order.push_back(i);
    for (size_t i : order) {
        const auto it = trained.find(i);
        const bool master = it != trained.end() && !it->second.second.empty();
        Parameter p =
            wholeTensor(m0, entries[i].name, master ? it->second.second : "module/" + entries[i].name,
                        Parameter::Kind::Trainable);
        if (it != trained.end()) p.group = it->second.first;
        tag.params.push_back(std::move(p));
    }
    for (const auto& e : entries)
        if (!e.tiedTo.empty()) {
            const auto target = std::find_if(tag.params.begin(), tag.params.end(),
                                             [&](const Parameter& p) { return p.name == e.tiedTo; });
            Parameter p;
            p.name = e.name;
            p.kind = target->kind;
            p.shape = target->shape;
            p.dtype = target->dtype;
            p.tiedTo = e.tiedTo;
            tag.params.push_back(std::move(p));
        }
}

} // namespace ckpt::layout::ds
