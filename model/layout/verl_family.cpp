// verl's FSDP checkpoints, as its FSDPCheckpointManager saves them: a run folder
// (latest_checkpointed_iteration.txt beside global_step_N/ folders), one global_step_N/ folder, or
// its role folder (actor/, critic/) holding per-rank files:
//   model_world_size_W_rank_R.pt        the rank's model.state_dict(): DTensors (local shards)
//   optim_world_size_W_rank_R.pt        its optimizer.state_dict() (FSDP2: DTensor moments)
//   extra_state_world_size_W_rank_R.pt  the LR scheduler and RNG states
//   fsdp_config.json, huggingface/      FSDP version and world size; config and tokenizer
// Each parameter is assembled from the ranks' shards as verl.model_merger assembles them
// (fsdp_model_merger.py: Shard(d) shards side by side along d in mesh order, a Replicate
// dimension's copy taken once), but losslessly, in the dtype saved (the merger casts to bf16:
// `--dtype bf16` gives its output bit for bit). A step's tag is its actor; a PPO run's critic is
// listed beside it under critic/, and its folder opens as the value model it is (exported as a
// token classifier, whatever the config verl copied from the actor says). Nothing is executed: the DTensors'
// placements and mesh come from their pickled specs (torch/dtensor.h).
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/families.h"
#include "layout/file_set.h"
#include "layout/words.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>

namespace ckpt::layout {

namespace {

using torch::shapeText;

const char* const kTracker = "latest_checkpointed_iteration.txt";
const char* const kRoles[] = {"actor", "critic"};

// N of "global_step_N", or nullopt.
std::optional<int64_t> stepOf(const std::string& name)
{
    constexpr std::string_view prefix = "global_step_";
    if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 15)
        return std::nullopt;
    if (!std::all_of(name.begin() + prefix.size(), name.end(),
                     [](char c) { return std::isdigit(uint8_t(c)); }))
        return std::nullopt;
    return std::stoll(name.substr(prefix.size()));
}

// The rank files of a role folder: "model_world_size_W_rank_R.pt" -> (W, R).
std::optional<std::pair<int, int>> rankFileOf(const std::string& name, std::string_view kind)
{
    const std::string head = std::string(kind) + "_world_size_";
    if (!name.starts_with(head) || !name.ends_with(".pt")) return std::nullopt;
    const std::string mid = name.substr(head.size(), name.size() - head.size() - 3);
    const size_t cut = mid.find("_rank_");
    if (cut == std::string::npos || cut == 0 || cut > 6 || mid.size() - cut - 6 > 6 || mid.size() == cut + 6)
        return std::nullopt;
    const std::string w = mid.substr(0, cut), r = mid.substr(cut + 6);
    const auto digits = [](const std::string& s) {
        return std::all_of(s.begin(), s.end(), [](char c) { return std::isdigit(uint8_t(c)); });
    };
    if (!digits(w) || !digits(r)) return std::nullopt;
    return std::pair{std::stoi(w), std::stoi(r)};
}

bool isRoleFolder(const io::Folder& dir)
{
    if (!dir.exists() || !dir.lists()) return false;
    for (const io::FolderEntry& e : dir.entries())
        if (!e.folder && rankFileOf(e.name, "model")) return true;
    return false;
}

// The role folder of a step folder: actor/ (what verl's merger exports), else critic/.
std::optional<io::Folder> roleOf(const io::Folder& step)
{
    for (const char* role : kRoles)
        if (step.has(role) && isRoleFolder(step.folder(role))) return step.folder(role);
    return std::nullopt;
}

// Where a DTensor's local shard lies in the whole: its offsets, or an Error (naming `file`) when
// verl's merger could not place it either (Partial, nested sharding of one dimension, a shard
// whose size is not the one torch's chunking gives).
std::vector<int64_t> shardOffsets(const torch::Tensor& t, const std::string& key, const std::string& file)
{
    const torch::DTensorSpec& d = *t.dtensor;
    std::vector<int64_t> offsets(d.globalShape.size(), 0), sizes = d.globalShape;
    std::vector<bool> sharded(d.globalShape.size(), false);
    for (size_t i = 0; i < d.placements.size(); ++i) {
        const auto& p = d.placements[i];
        using Kind = torch::DTensorSpec::Placement::Kind;
        if (p.kind == Kind::Replicate) continue;
        if (p.kind != Kind::Shard || sharded[size_t(p.dim)])
            throw Error("'" + key + "' is placed " + d.placementsText() +
                            ": only Shard and Replicate placements, one per dimension, are merged",
                        file);
        sharded[size_t(p.dim)] = true;
        // torch's Shard chunks a dimension as torch.chunk does: ceil(n / k) each, the last ones short.
        const int64_t n = d.globalShape[size_t(p.dim)], k = d.meshShape[i];
        const int64_t chunk = (n + k - 1) / k;
        offsets[size_t(p.dim)] = std::min(n, d.coordinate[i] * chunk);
        sizes[size_t(p.dim)] = std::clamp<int64_t>(n - offsets[size_t(p.dim)], 0, chunk);
    }
    if (t.shape != sizes)
        throw Error("'" + key + "': the local shard is " + shapeText(t.shape) + " where " +
                        d.placementsText() + " on a " + shapeText(d.meshShape) + " mesh gives " +
                        shapeText(sizes),
                    file);
    return offsets;
}

// A Replicate dimension holds the same shard at every coordinate: the first one's is taken.
bool firstReplica(const torch::DTensorSpec& d)
{
    for (size_t i = 0; i < d.placements.size(); ++i)
        if (d.placements[i].kind == torch::DTensorSpec::Placement::Kind::Replicate && d.coordinate[i] != 0)
            return false;
    return true;
}

struct Rank
{
    std::string path;
    std::shared_ptr<const TensorFile> parsed; // held while the tag is built
    const torch::TorchFile* file = nullptr;
};

// The whole tensor `key` from every rank's shard of it; `shape` and `dtype` its own. A plain
// tensor (a buffer, an optimizer's step) is rank 0's, whole.
std::vector<RankSlice> slicesOf(const std::vector<Rank>& ranks, const std::string& key,
                                std::vector<int64_t>& shape, torch::DType& dtype)
{
    const torch::Tensor* first = ranks.front().file->tensor(key);
    if (!first) throw Error("no tensor '" + key + "'", ranks.front().path);
    dtype = first->dtype;
    std::vector<RankSlice> slices;
    if (!first->dtensor) {
        shape = first->shape;
        RankSlice s;
        s.length = first->numel();
        s.master.push_back(Source::flat(ranks.front().path, key, 0, s.length, dtype));
        slices.push_back(std::move(s));
        return slices;
    }
    shape = first->dtensor->globalShape;
    uint64_t numel = 1, covered = 0;
    for (int64_t x : shape)
        numel *= uint64_t(x);
    std::map<std::vector<int64_t>, size_t> holder; // mesh coordinate -> the rank whose file has it
    for (size_t r = 0; r < ranks.size(); ++r) {
        const torch::Tensor* t = ranks[r].file->tensor(key);
        if (!t || !t->dtensor || t->dtensor->globalShape != shape || t->dtype != dtype)
            throw Error("'" + key + "' is not the " + std::string(torch::name(dtype)) + " DTensor " +
                            shapeText(shape) + " rank 0 holds",
                        ranks[r].path);
        if (const auto [it, fresh] = holder.emplace(t->dtensor->coordinate, r); !fresh)
            throw Error("holds the shard of '" + key + "' rank " + std::to_string(it->second) +
                            " holds (the same mesh coordinate): a file of another rank or save",
                        ranks[r].path);
        if (!firstReplica(*t->dtensor) || t->numel() == 0) continue;
        const std::vector<int64_t> offsets = shardOffsets(*t, key, ranks[r].path);
        RankSlice s;
        s.rank = int(r);
        s.length = t->numel();
        for (size_t i = 0, stride = 1; i < offsets.size(); ++i) {
            const size_t d = offsets.size() - 1 - i;
            s.paramOffset += uint64_t(offsets[d]) * stride;
            stride *= size_t(shape[d]);
        }
        if (t->shape == shape) // whole (a 0-d or replicated tensor): read flat, in place
            s.master.push_back(Source::flat(ranks[r].path, key, 0, s.length, dtype));
        else
            s.master.push_back(Source::chunk(ranks[r].path, key, dtype, offsets, t->shape));
        covered += s.length;
        slices.push_back(std::move(s));
    }
    // Distinct coordinates give disjoint blocks: their sizes adding up is their covering it.
    if (covered != numel)
        throw Error("the shards of '" + key + "' hold " + std::to_string(covered) + " of its " +
                        std::to_string(numel) + " elements: a rank's file is not of this save",
                    ranks.front().path);
    return slices;
}

// FSDP2's optimizer state, keyed by each parameter's index in model.parameters() order: the
// model state dict's DTensors in order (its plain tensors are buffers, which have no state).
void attachOptimizerState(Tag& tag, const std::vector<Rank>& optim)
{
    const torch::TorchFile& f0 = *optim.front().file;
    for (size_t i = 0; i < tag.params.size(); ++i) {
        Parameter& p = tag.params[i];
        for (const char* name : {"exp_avg", "exp_avg_sq", "momentum_buffer", "step"}) {
            const std::string key = "state/" + std::to_string(i) + "/" + name;
            const torch::Tensor* t = f0.tensor(key);
            if (!t) continue;
            if (std::string_view(name) != "step" && !t->dtensor) return; // FSDP1: flat, nothing names it
            OptimizerState st;
            st.name = name;
            st.count = std::string_view(name) == "step";
            st.slices = slicesOf(optim, key, st.shape, st.dtype);
            if (!st.count && st.shape != p.shape)
                throw Error("optimizer state " + std::to_string(i) + " (" + name + ") is " +
                                shapeText(st.shape) + ", but parameter " + std::to_string(i) + " '" + p.name +
                                "' is " + shapeText(p.shape) + ": the state is not in parameter order",
                            optim.front().path);
            p.state.push_back(std::move(st));
        }
    }
}

// The files of kind `kind` ("model", "optim", "extra_state") of a role folder, one per rank in
// rank order, all of one world size; missing ones named.
std::vector<std::pair<int, std::string>> rankFiles(const io::Folder& dir, std::string_view kind, int& world)
{
    std::map<int, std::string> found;
    for (const io::FolderEntry& e : dir.entries())
        if (const auto wr = e.folder ? std::nullopt : rankFileOf(e.name, kind)) {
            if (world && wr->first != world)
                throw Error("holds files of world sizes " + std::to_string(world) + " and " +
                                std::to_string(wr->first) + ": two saves in one folder",
                            dir.path());
            world = wr->first;
            found[wr->second] = e.name;
        }
    std::vector<std::pair<int, std::string>> out;
    for (int r = 0; r < world; ++r) {
        const auto it = found.find(r);
        const std::string name =
            std::string(kind) + "_world_size_" + std::to_string(world) + "_rank_" + std::to_string(r) + ".pt";
        if (it == found.end())
            throw Error("missing: the save has " + std::to_string(world) + " ranks", dir.file(name));
        out.push_back({r, it->second});
    }
    return out;
}

std::vector<Rank> parseRanks(const io::Folder& dir, const std::vector<std::pair<int, std::string>>& files,
                             FileSet& set, FileRole role, Tag& tag)
{
    std::vector<Rank> ranks;
    for (const auto& [r, name] : files) {
        Rank k{dir.file(name), set.get(dir.file(name)), nullptr};
        k.file = k.parsed->torch();
        if (!k.file) throw Error("not a torch.save file", k.path);
        RankFile rf;
        rf.path = k.path;
        rf.name = name;
        rf.role = role;
        rf.dpRank = r;
        rf.size = k.file->fileSize();
        tag.files.push_back(rf);
        ranks.push_back(k);
    }
    return ranks;
}

void addFacts(Tag& tag, const io::Folder& dir, const std::vector<Rank>& model, int world)
{
    stateBadge(tag, "family", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "verl");
    stateBadge(tag, "role", QT_TRANSLATE_NOOP("ckpt::layout", "role"), dir.name());
    stateBadge(tag, "world_size", QT_TRANSLATE_NOOP("ckpt::layout", "world size"), world);
    tag.worldSize = world;
    if (dir.sizeOf("fsdp_config.json")) {
        const auto j =
            nlohmann::json::parse(io::readSmallFile(dir.file("fsdp_config.json"), 1 << 20), nullptr, false);
        if (j.is_object() && j.contains("FSDP_version"))
            stateBadge(tag, "fsdp_version", QT_TRANSLATE_NOOP("ckpt::layout", "FSDP version"),
                       j["FSDP_version"]);
        if (j.is_object() && j.contains("world_size") && j["world_size"] != world)
            throw Error("says world size " + j["world_size"].dump() + ", but " + std::to_string(world) +
                            " ranks saved model files",
                        dir.file("fsdp_config.json"));
    }
    for (const torch::Tensor& t : model.front().file->tensors())
        if (t.dtensor) {
            std::string mesh = shapeText(t.dtensor->meshShape);
            if (!t.dtensor->meshDimNames.empty()) {
                mesh += " (";
                for (size_t i = 0; i < t.dtensor->meshDimNames.size(); ++i)
                    mesh += (i ? ", " : "") + t.dtensor->meshDimNames[i];
                mesh += ")";
            }
            stateBadge(tag, "device_mesh", QT_TRANSLATE_NOOP("ckpt::layout", "device mesh"), mesh);
            stateBadge(tag, "placements", QT_TRANSLATE_NOOP("ckpt::layout", "placements"),
                       t.dtensor->placementsText());
            break;
        }
}

bool hasParam(const Tag& tag, std::string_view name)
{
    return std::any_of(tag.params.begin(), tag.params.end(),
                       [&](const Parameter& p) { return p.name == name; });
}

// verl's critic is a token classifier with one label (a `score` head, no lm_head), but its
// huggingface/config.json is the actor's: "LlamaForCausalLM", which from_pretrained would load
// with a fresh lm_head and the score head dropped. The export names the class the weights are.
void nameTheValueModel(Tag& tag)
{
    if (!hasParam(tag, "score.weight") || hasParam(tag, "lm_head.weight") || !tag.config.is_object() ||
        !tag.config.contains("architectures") || !tag.config["architectures"].is_array() ||
        tag.config["architectures"].size() != 1 || !tag.config["architectures"][0].is_string())
        return;
    const std::string saved = tag.config["architectures"][0];
    if (!saved.ends_with("ForCausalLM")) return;
    const std::string named = saved.substr(0, saved.size() - 11) + "ForTokenClassification";
    nlohmann::ordered_json config = tag.config;
    config["architectures"] = {named};
    std::erase_if(tag.exportCopies, [](const auto& c) { return c.first == "config.json"; });
    tag.exportFiles.push_back({"config.json", config.dump(2) + "\n"});
    tag.warnings.push_back("verl saved this value model's config as " + saved +
                           ", but its weights are a score head without lm_head: exported as " + named);
}

// The saved config and tokenizer (huggingface/): the export's files beside the weights. The whole
// model verl writes there with save_contents "hf_model" is listed, not read: the shards are the
// save, and the same weights.
void addHuggingFace(Tag& tag, const io::Folder& dir)
{
    if (!dir.has("huggingface")) return;
    const io::Folder hf = dir.folder("huggingface");
    if (!hf.exists()) return;
    for (const io::FolderEntry& e : hf.entries()) {
        if (e.folder) continue;
        if (!e.name.ends_with(".safetensors") && !e.name.ends_with(".bin") &&
            e.name != "model.safetensors.index.json") {
            tag.exportCopies.push_back({e.name, hf.file(e.name)});
            continue;
        }
        RankFile rf;
        rf.path = hf.file(e.name);
        rf.name = "huggingface/" + e.name;
        rf.role = FileRole::Other;
        rf.size = e.size;
        tag.files.push_back(rf);
    }
    if (hf.sizeOf("config.json")) {
        tag.config =
            nlohmann::json::parse(io::readSmallFile(hf.file("config.json"), 4 << 20), nullptr, false);
        if (tag.config.is_object()) addTransformersConfigBadges(tag.config, tag, "config_dtype");
    }
    nameTheValueModel(tag);
}

Tag openRole(const std::string& name, const io::Folder& dir, FileSet& files)
{
    Tag tag;
    tag.name = name;
    tag.dir = dir.path();
    tag.sharding = Sharding::NdChunks;
    if (const auto n = stepOf(name)) tag.globalSteps = *n;
    int world = 0;
    const std::vector<Rank> model =
        parseRanks(dir, rankFiles(dir, "model", world), files, FileRole::ModelStates, tag);
    for (const torch::Tensor& t : model.front().file->tensors()) {
        if (t.storage < 0 || t.path.find('/') != std::string::npos) continue; // the state dict's own entries
        Parameter p;
        p.name = t.path;
        p.slices = slicesOf(model, t.path, p.shape, p.dtype);
        if (!t.dtensor) p.kind = Parameter::Kind::Buffer;
        tag.params.push_back(std::move(p));
    }
    if (tag.params.empty()) throw Error("holds no tensors", model.front().path);
    addFacts(tag, dir, model, world);
    const std::vector<io::FolderEntry> entries = dir.entries();
    const auto saved = [&](std::string_view kind) {
        return std::any_of(entries.begin(), entries.end(),
                           [&](const io::FolderEntry& e) { return !e.folder && rankFileOf(e.name, kind); });
    };
    int optimWorld = world;
    if (saved("optim")) {
        const std::vector<Rank> optim =
            parseRanks(dir, rankFiles(dir, "optim", optimWorld), files, FileRole::OptimStates, tag);
        attachOptimizerState(tag, optim);
        if (std::none_of(tag.params.begin(), tag.params.end(),
                         [](const Parameter& p) { return !p.state.empty(); }))
            tag.warnings.push_back(
                "the optimizer's moments are FSDP1 flat parameters' slices, which nothing in the "
                "save ties to parameter names: not shown per parameter");
    }
    int extraWorld = world;
    if (saved("extra_state")) {
        const auto extra =
            parseRanks(dir, rankFiles(dir, "extra_state", extraWorld), files, FileRole::Scheduler, tag);
        tag.lrScheduler = torch::pickleToJson(extra.front().file->value("lr_scheduler"));
        if (tag.lrScheduler.is_object() && tag.lrScheduler.contains("last_epoch"))
            stateBadge(tag, "scheduler_step", QT_TRANSLATE_NOOP("ckpt::layout", "LR scheduler step"),
                       tag.lrScheduler["last_epoch"]);
    }
    addHuggingFace(tag, dir);
    return tag;
}

// A step folder's other saves beside the model's role: the critic (a PPO run's value model) as
// tensors under critic/ (its files listed, exported with --all; its folder opens as a model of its
// own), and the trainer's dataloader state (data.pt).
void addStepExtras(Tag& tag, const io::Folder& step, const io::Folder& role, FileSet& files)
{
    for (const char* other : kRoles) {
        if (other == role.name() || !step.has(other) || !isRoleFolder(step.folder(other))) continue;
        const Tag t = openRole(tag.name, step.folder(other), files);
        const std::string prefix = std::string(other) + "/";
        for (RankFile rf : t.files) {
            rf.name = prefix + rf.name;
            tag.files.push_back(std::move(rf));
        }
        for (Parameter p : t.params) {
            p.name = prefix + p.name;
            tag.otherTensors.push_back(std::move(p));
        }
        const char* label = std::string_view(other) == "critic" ? QT_TRANSLATE_NOOP("ckpt::layout", "critic")
                                                                : QT_TRANSLATE_NOOP("ckpt::layout", "actor");
        stateBadge(tag, other, label,
                   std::to_string(t.params.size()) + " tensors (open " + prefix + " to export it)");
    }
    if (const auto size = step.sizeOf("data.pt")) {
        RankFile rf;
        rf.path = step.file("data.pt");
        rf.name = "data.pt";
        rf.role = FileRole::Other;
        rf.size = *size;
        tag.files.push_back(rf);
    }
}

class VerlFamily final : public Family
{
public:
    std::string_view id() const override { return "verl"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "verl checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a verl FSDP checkpoint (latest_checkpointed_iteration.txt beside global_step_N folders, one "
               "of "
               "them, or its actor/ folder of model_world_size_W_rank_R.pt files)";
    }
    std::vector<std::string> namesAsked() const override { return {kTracker}; }

    bool match(const std::string& path) const override
    {
        const io::Folder dir(path);
        if (!dir.exists() || !dir.lists()) return false;
        if (isRoleFolder(dir) || roleOf(dir)) return true;
        if (!dir.sizeOf(kTracker)) return false;
        for (const io::FolderEntry& e : dir.entries())
            if (e.folder && stepOf(e.name)) return true;
        return false;
    }

    TagList listTags(const std::string& path) const override
    {
        const io::Folder dir(path);
        TagList l;
        l.root = path;
        if (isRoleFolder(dir) || roleOf(dir)) {
            const std::string name = isRoleFolder(dir) ? dir.parent().name() : dir.name();
            l.tags.push_back({stepOf(name) ? name : dir.name(), path});
            l.latest = l.tags.front().first;
            return l;
        }
        std::vector<std::pair<int64_t, std::string>> steps;
        for (const io::FolderEntry& e : dir.entries())
            if (const auto n = e.folder ? stepOf(e.name) : std::nullopt) steps.push_back({*n, e.name});
        std::sort(steps.begin(), steps.end());
        for (const auto& [n, name] : steps)
            l.tags.push_back({name, dir.folder(name).path()});
        std::string tracked = io::readSmallFile(dir.file(kTracker), 64);
        std::erase_if(tracked, [](char c) { return std::isspace(uint8_t(c)); });
        const std::string latest = "global_step_" + tracked;
        if (!stepOf(latest)) throw Error("holds '" + tracked + "': not a step number", dir.file(kTracker));
        if (std::none_of(steps.begin(), steps.end(), [&](const auto& s) { return s.second == latest; }))
            throw Error("names step " + tracked + ", but no " + latest + " folder is here",
                        dir.file(kTracker));
        l.latest = latest;
        return l;
    }

    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, where] = list.tags.at(index);
        const io::Folder dir(where);
        const auto role = isRoleFolder(dir) ? std::optional<io::Folder>(dir) : roleOf(dir);
        if (!role) throw Error("no actor/ or critic/ folder of model_world_size_W_rank_R.pt files", where);
        Tag tag = openRole(name, *role, files);
        tag.latest = name == list.latest;
        if (!isRoleFolder(dir)) addStepExtras(tag, dir, *role, files);
        return tag;
    }
};

} // namespace

const Family& verlFamily()
{
    static const VerlFamily f;
    return f;
}

} // namespace ckpt::layout
