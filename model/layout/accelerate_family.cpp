// Hugging Face Accelerate's save_state folders (accelerate/checkpointing.py save_accelerator_state):
// model.safetensors or pytorch_model.bin (model_1..., pytorch_model_1... for more prepared models),
// optimizer.bin (optimizer_1...), scheduler.bin, sampler.bin, scaler.pt, random_states_N.pkl,
// custom_checkpoint_N.pkl; with FSDP, pytorch_model_fsdp_0/ and optimizer_0/ DCP folders. A
// project's checkpoints/checkpoint_N folders (automatic naming) are a run, each a tag, the highest
// latest as load_state takes it. (A DeepSpeed save_state is a DeepSpeed folder: `latest` naming its
// pytorch_model/ tag; the DeepSpeed family reads it.) The first prepared model is the model; the
// others are listed under model_<i>/ and exported with --all. An optimizer's state is keyed by the
// order it was given the parameters (named_parameters()): tied to names where the model file keeps
// that order (pytorch_model.bin) and the shapes agree, and where a safetensors file (its header
// sorted by name) leaves no doubt; otherwise kept by id, and said.
#include "io/error.h"
#include "io/folder.h"
#include "layout/families.h"
#include "layout/file_set.h"
#include "layout/words.h"
#include "safetensors/safetensors_file.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>

namespace ckpt::layout {

namespace {

const char* const kRunFolder = "checkpoints";

// What only save_state writes beside a model, from one listing of the folder.
bool isSaveState(const io::Folder& dir)
{
    if (!dir.exists() || !dir.lists()) return false;
    bool state = false, model = false, deepspeed = false;
    for (const io::FolderEntry& e : dir.entries()) {
        state = state || (!e.folder && (e.name == "random_states_0.pkl" || e.name == "optimizer.bin"));
        model = model || (!e.folder && (e.name == "model.safetensors" || e.name == "pytorch_model.bin")) ||
                (e.folder && e.name == "pytorch_model_fsdp_0");
        deepspeed = deepspeed || e.name == "latest"; // a DeepSpeed save_state: the DeepSpeed family's
    }
    return state && model && !deepspeed;
}

std::optional<int64_t> checkpointNumber(const std::string& name)
{
    constexpr std::string_view prefix = "checkpoint_";
    if (!name.starts_with(prefix) || name.size() == prefix.size() || name.size() > prefix.size() + 12)
        return std::nullopt;
    if (!std::all_of(name.begin() + prefix.size(), name.end(),
                     [](char c) { return std::isdigit(uint8_t(c)); }))
        return std::nullopt;
    return std::stoll(name.substr(prefix.size()));
}

// The folder whose checkpoint_N subfolders are save_state folders: itself or its checkpoints/.
std::optional<io::Folder> runFolder(const io::Folder& dir)
{
    if (!dir.exists() || !dir.lists()) return std::nullopt;
    const auto holdsCheckpoints = [](const io::Folder& f) {
        for (const io::FolderEntry& e : f.entries())
            if (e.folder && checkpointNumber(e.name) && isSaveState(f.folder(e.name))) return true;
        return false;
    };
    if (holdsCheckpoints(dir)) return dir;
    if (dir.has(kRunFolder) && holdsCheckpoints(dir.folder(kRunFolder))) return dir.folder(kRunFolder);
    return std::nullopt;
}

// Model `i`'s tensors, in the file's order, named `prefix` + name; whether that order is the
// module's (a torch.save of the state dict keeps it; safetensors sorts its header); nullopt when
// there is no model `i`.
std::optional<bool> addModel(Tag& tag, const io::Folder& dir, int i, FileSet& files,
                             std::vector<Parameter>& into, const std::string& prefix)
{
    const std::string suffix = i ? "_" + std::to_string(i) : std::string();
    for (const std::string& name : {"model" + suffix + ".safetensors", "pytorch_model" + suffix + ".bin"}) {
        if (!dir.sizeOf(name)) continue;
        const std::string path = dir.file(name);
        const auto f = files.get(path);
        RankFile rf;
        rf.path = path;
        rf.name = name;
        rf.role = FileRole::ModelStates;
        if (const torch::TorchFile* t = f->torch()) {
            rf.size = t->fileSize();
            for (const torch::Tensor& x : t->tensors())
                if (x.storage >= 0 && x.note.empty())
                    into.push_back(wholeTensor(path, x.path, prefix + x.path, x.dtype, x.shape));
        } else {
            rf.size = f->safetensors()->file()->size();
            for (const auto& x : f->safetensors()->tensors())
                into.push_back(wholeTensor(path, x.name, prefix + x.name, x.dtype, x.shape));
        }
        tag.files.push_back(rf);
        return f->torch() != nullptr;
    }
    return std::nullopt;
}

// Optimizer 0's moments on model 0's parameters: by the order the optimizer got them where the
// model file keeps it, else where each moment's shape fits one parameter alone.
void attachMoments(Tag& tag, const torch::TorchFile& opt, const std::string& path, bool ordered)
{
    std::vector<int64_t> ids;
    const pickle::Value* groups = opt.value("param_groups");
    for (size_t g = 0; const pickle::Value* group = torch::seqAt(groups, g); ++g)
        if (const auto params = torch::asInts(torch::dictGet(group, "params")))
            ids.insert(ids.end(), params->begin(), params->end());
    std::map<std::vector<int64_t>, int> shapes; // how many parameters have each shape
    for (const Parameter& p : tag.params)
        ++shapes[p.shape];
    std::vector<std::pair<size_t, OptimizerState>> found;
    for (size_t i = 0; i < ids.size(); ++i)
        for (const char* name : {"exp_avg", "exp_avg_sq", "momentum_buffer", "step"}) {
            const std::string key = "state/" + std::to_string(ids[i]) + "/" + name;
            const torch::Tensor* t = opt.tensor(key);
            if (!t || t->storage < 0) continue;
            OptimizerState st;
            st.name = name;
            st.count = std::string_view(name) == "step";
            st.shape = t->shape;
            st.dtype = t->dtype;
            st.slices = wholeTensor(path, key, key, t->dtype, t->shape).slices;
            found.push_back({i, std::move(st)});
        }
    // The parameter each id is: the i-th in order, or the one of that shape.
    std::map<size_t, size_t> owner;
    for (const auto& [i, st] : found) {
        if (st.count) continue;
        if (ordered && i < tag.params.size() && tag.params[i].shape == st.shape) {
            owner[i] = i;
        } else if (!ordered && shapes[st.shape] == 1) {
            for (size_t k = 0; k < tag.params.size(); ++k)
                if (tag.params[k].shape == st.shape) owner[i] = k;
        } else {
            tag.warnings.push_back(
                std::string("optimizer.bin's state is keyed by the order the optimizer was given "
                            "the parameters, which ") +
                (ordered ? "does not match the model's shapes"
                         : "a safetensors model file (its header sorted by name) does not keep, "
                           "and parameters of one shape leave in doubt") +
                ": its moments are listed by id");
            return;
        }
    }
    for (auto& [i, st] : found)
        if (const auto it = owner.find(i); it != owner.end())
            tag.params[it->second].state.push_back(std::move(st));
    std::erase_if(tag.otherTensors,
                  [](const Parameter& x) { return x.name.starts_with("optimizer/state/"); });
}

// A DCP folder of a FSDP save_state, read through the DCP family.
Tag dcpTag(const io::Folder& dir, FileSet& files)
{
    const TagList sub = dcpFamily().listTags(dir.path());
    return dcpFamily().openTag(sub, 0, files);
}

Tag openSaveState(const std::string& name, const io::Folder& dir, FileSet& files)
{
    Tag tag;
    tag.name = name;
    tag.dir = dir.path();
    stateBadge(tag, "family", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "accelerate");
    bool ordered = false;
    if (dir.has("pytorch_model_fsdp_0")) {
        Tag model = dcpTag(dir.folder("pytorch_model_fsdp_0"), files);
        tag.params = std::move(model.params);
        tag.files = std::move(model.files);
        tag.sharding = model.sharding;
        if (dir.has("optimizer_0")) {
            Tag opt = dcpTag(dir.folder("optimizer_0"), files);
            for (auto* list : {&opt.params, &opt.otherTensors})
                for (Parameter& p : *list)
                    tag.otherTensors.push_back(std::move(p)); // keyed by name: attached as every tag's
            tag.files.insert(tag.files.end(), opt.files.begin(), opt.files.end());
        }
        stateBadge(tag, "fsdp", QT_TRANSLATE_NOOP("ckpt::layout", "FSDP sharded state dict"), "yes");
    } else {
        ordered = addModel(tag, dir, 0, files, tag.params, "").value_or(false);
    }
    int models = 1;
    while (addModel(tag, dir, models, files, tag.otherTensors, "model_" + std::to_string(models) + "/"))
        ++models;
    if (models > 1) stateBadge(tag, "models", QT_TRANSLATE_NOOP("ckpt::layout", "prepared models"), models);
    if (tag.params.empty()) throw Error("no model file (model.safetensors, pytorch_model.bin)", dir.path());
    for (const io::FolderEntry& e : dir.entries()) {
        if (e.folder) continue;
        RankFile rf;
        rf.path = dir.file(e.name);
        rf.name = e.name;
        rf.size = e.size;
        if (e.name.starts_with("optimizer")) {
            rf.role = FileRole::OptimStates;
            const torch::TorchFile* opt = files.get(rf.path)->torch();
            if (!opt) throw Error("not a torch.save file", rf.path);
            const std::string base = e.name.substr(0, e.name.find('.')) + "/";
            for (const torch::Tensor& t : opt->tensors())
                if (t.storage >= 0)
                    tag.otherTensors.push_back(wholeTensor(rf.path, t.path, base + t.path, t.dtype, t.shape));
            if (e.name == "optimizer.bin") attachMoments(tag, *opt, rf.path, ordered);
        } else if (e.name.starts_with("scheduler")) {
            rf.role = FileRole::Scheduler;
            if (const torch::TorchFile* s = files.get(rf.path)->torch(); s && e.name == "scheduler.bin")
                tag.lrScheduler = torch::pickleToJson(s->root());
        } else if (e.name.starts_with("random_states_")) {
            rf.role = FileRole::Rng;
        } else if (!e.name.ends_with(".safetensors") && !e.name.ends_with(".bin")) {
            rf.role = FileRole::Other;
        } else {
            continue; // the model files, listed above
        }
        tag.files.push_back(rf);
    }
    if (const auto n = checkpointNumber(name))
        stateBadge(tag, "save", QT_TRANSLATE_NOOP("ckpt::layout", "save number"), *n);
    return tag;
}

class AccelerateFamily final : public Family
{
public:
    std::string_view id() const override { return "accelerate"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "Accelerate save_state checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "an Accelerate save_state folder (a model file beside optimizer.bin or random_states_0.pkl) "
               "or a "
               "project's checkpoints/checkpoint_N folders of them";
    }
    bool match(const std::string& path) const override
    {
        const io::Folder dir(path);
        return isSaveState(dir) || runFolder(dir).has_value();
    }
    TagList listTags(const std::string& path) const override
    {
        const io::Folder dir(path);
        TagList l;
        l.root = path;
        if (isSaveState(dir)) {
            l.tags.push_back({dir.name(), path});
            l.latest = dir.name();
            return l;
        }
        const auto run = runFolder(dir);
        if (!run) throw Error("no checkpoint_N save_state folders", path);
        std::vector<std::pair<int64_t, std::string>> found;
        for (const io::FolderEntry& e : run->entries())
            if (const auto n = e.folder ? checkpointNumber(e.name) : std::nullopt)
                found.push_back({*n, e.name});
        std::sort(found.begin(), found.end());
        for (const auto& [n, name] : found)
            l.tags.push_back({name, run->folder(name).path()});
        l.latest = found.back().second; // load_state's choice: the highest number
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, where] = list.tags.at(index);
        Tag tag = openSaveState(name, io::Folder(where), files);
        tag.latest = name == list.latest;
        return tag;
    }
};

} // namespace

const Family& accelerateFamily()
{
    static const AccelerateFamily f;
    return f;
}

} // namespace ckpt::layout
