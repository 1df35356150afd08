// PyTorch Lightning checkpoints: a `.ckpt` file (torch.save of the dict Lightning's
// _CheckpointConnector.dump_checkpoint makes: epoch, global_step, pytorch-lightning_version,
// state_dict, loops, callbacks, optimizer_states, lr_schedulers, hyper_parameters), or a
// ModelCheckpoint folder of them (epoch=E-step=S.ckpt, last.ckpt), each a tag. A `.ckpt` folder
// (the DeepSpeed strategy's DeepSpeed tag, the FSDP strategy's DCP folder) is a tag read through
// that family. The model is the LightningModule's state dict under its own names, less the one
// attribute every key starts with when the module holds its network as a single attribute
// (`self.model = ...`: "model.layer.weight"), which is said; each optimizer's moments belong to the
// parameters in the order the optimizer was given them (named_parameters(), the state dict's
// order less its buffers), checked by shape.
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "io/location.h"
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

const char* const kVersionKey = "pytorch-lightning_version";

// A Lightning .ckpt file by its first bytes: a torch zip whose pickle (its first record, stored)
// names Lightning's version key among the first keys dump_checkpoint writes.
bool isLightningFile(const std::string& path)
{
    if (!path.ends_with(".ckpt")) return false;
    try {
        if (io::pathKind(path) != io::PathKind::File) return false;
        return io::readHead(path, 4096).find(kVersionKey) != std::string::npos;
    } catch (const Error&) {
        return false;
    }
}

// A strategy's .ckpt folder: a DeepSpeed tag (and `latest`) or a DCP folder (and meta.pt).
const Family* strategyFamily(const std::string& path)
{
    if (!path.ends_with(".ckpt") || io::pathKind(path) != io::PathKind::Folder) return nullptr;
    for (const Family* f : {&deepSpeedFamily(), &dcpFamily()})
        if (f->match(path)) return f;
    return nullptr;
}

// Training order (trainingOrder), last.ckpt (ModelCheckpoint's save_last) after every other.
std::pair<bool, std::pair<std::vector<uint64_t>, std::string>> order(const std::string& name)
{
    return {name.starts_with("last"), trainingOrder(name)};
}

bool isBuffer(const std::string& name)
{
    for (const char* b : {"running_mean", "running_var", "num_batches_tracked"})
        if (name.ends_with(b)) return true;
    return false;
}

// The one attribute every state dict key starts with ("model."), or "".
std::string commonPrefix(const std::vector<const torch::Tensor*>& model)
{
    if (model.empty()) return {};
    const std::string& first = model.front()->path;
    const size_t dot = first.find('.', 11);
    if (dot == std::string::npos) return {};
    const std::string prefix = first.substr(11, dot - 10); // after "state_dict/", with its dot
    for (const torch::Tensor* t : model)
        if (t->path.compare(11, prefix.size(), prefix) != 0 || t->path.size() == 11 + prefix.size())
            return {};
    return prefix;
}

// The tensor `t` of the file as a parameter; one without data says why.
Parameter fileTensor(const std::string& file, const torch::Tensor& t, std::string name)
{
    Parameter p = wholeTensor(file, t.path, std::move(name), t.dtype, t.shape);
    p.path = t.path;
    if (t.storage < 0 || !t.note.empty()) {
        p.unreadable = t.note.empty() ? "no data" : t.note;
        p.slices.front().master.clear();
    }
    return p;
}

// Each optimizer's state: its param_groups list the ids of the parameters in the order they were
// given (named_parameters(): the state dict's order less its buffers); attached only when every
// moment has its parameter's shape, else left keyed by id and said.
void attachMoments(Tag& tag, const torch::TorchFile& f, const std::string& path)
{
    std::vector<Parameter*> trainable;
    for (Parameter& p : tag.params)
        if (p.kind == Parameter::Kind::Trainable) trainable.push_back(&p);
    for (size_t o = 0;; ++o) {
        const std::string base = "optimizer_states/" + std::to_string(o);
        const pickle::Value* groups = f.value(base + "/param_groups");
        if (!groups) return;
        std::vector<int64_t> ids;
        for (size_t g = 0; const pickle::Value* group = torch::seqAt(groups, g); ++g)
            if (const auto params = torch::asInts(torch::dictGet(group, "params")))
                ids.insert(ids.end(), params->begin(), params->end());
        std::vector<std::pair<Parameter*, OptimizerState>> found;
        bool fits = ids.size() <= trainable.size();
        for (size_t i = 0; fits && i < ids.size(); ++i)
            for (const char* name : {"exp_avg", "exp_avg_sq", "momentum_buffer", "step"}) {
                const torch::Tensor* t = f.tensor(base + "/state/" + std::to_string(ids[i]) + "/" + name);
                if (!t || t->storage < 0) continue;
                OptimizerState st;
                st.name = name;
                st.count = std::string_view(name) == "step";
                st.shape = t->shape;
                st.dtype = t->dtype;
                st.slices = fileTensor(path, *t, t->path).slices;
                fits = st.count || st.shape == trainable[i]->shape;
                found.push_back({trainable[i], std::move(st)});
            }
        if (!fits) {
            tag.warnings.push_back("optimizer " + std::to_string(o) +
                                   "'s state does not follow the parameters' order: kept under its ids");
            continue;
        }
        for (auto& [p, st] : found)
            p->state.push_back(std::move(st));
        // Tied to their parameters now: not listed again under their ids.
        std::erase_if(tag.otherTensors,
                      [&](const Parameter& x) { return x.name.starts_with(base + "/state/"); });
    }
}

void addFacts(Tag& tag, const torch::TorchFile& f)
{
    stateBadge(tag, "family", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "lightning");
    if (const auto v = torch::asString(f.value(kVersionKey)))
        stateBadge(tag, "lightning_version", QT_TRANSLATE_NOOP("ckpt::layout", "Lightning version"), *v);
    if (const auto e = torch::asInt(f.value("epoch")))
        stateBadge(tag, "epoch", QT_TRANSLATE_NOOP("ckpt::layout", "epoch"), *e);
    if (const auto s = torch::asInt(f.value("global_step"))) {
        stateBadge(tag, "global_step", QT_TRANSLATE_NOOP("ckpt::layout", "global step"), *s);
        tag.globalSteps = *s;
    }
    const auto hp = torch::pickleToJson(f.value("hyper_parameters"));
    if (hp.is_object())
        for (const auto& [k, v] : hp.items())
            tag.facts.push_back({"hparam " + k, v.is_string() ? v.get<std::string>() : v.dump()});
    tag.clientState = nlohmann::ordered_json::object();
    for (const char* key : {"hyper_parameters", "callbacks", "loops"})
        if (const pickle::Value* v = f.value(key)) tag.clientState[key] = torch::pickleToJson(v);
    if (const pickle::Value* s = f.value("lr_schedulers")) tag.lrScheduler = torch::pickleToJson(s);
}

Tag openFile(const std::string& name, const std::string& path, FileSet& files)
{
    const torch::TorchFile* f = files.get(path)->torch();
    if (!f || !f->value(kVersionKey))
        throw Error("not a Lightning checkpoint (no " + std::string(kVersionKey) + ")", path);
    Tag tag;
    tag.name = name;
    tag.dir = path;
    tag.warnings = f->warnings();
    RankFile rf;
    rf.path = path;
    rf.name = io::fileName(path);
    rf.role = FileRole::ModelStates;
    rf.size = f->fileSize();
    tag.files.push_back(rf);
    std::vector<const torch::Tensor*> model;
    for (const torch::Tensor& t : f->tensors())
        if (t.path.starts_with("state_dict/")) model.push_back(&t);
    const std::string prefix = commonPrefix(model);
    for (const torch::Tensor* t : model) {
        Parameter p = fileTensor(path, *t, t->path.substr(11 + prefix.size()));
        if (isBuffer(p.name)) p.kind = Parameter::Kind::Buffer;
        if (t->aliasOf >= 0) p.tiedTo = f->tensors()[size_t(t->aliasOf)].path.substr(11 + prefix.size());
        tag.params.push_back(std::move(p));
    }
    for (const torch::Tensor& t : f->tensors())
        if (!t.path.starts_with("state_dict/")) tag.otherTensors.push_back(fileTensor(path, t, t.path));
    addFacts(tag, *f);
    if (!prefix.empty())
        tag.facts.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "names without the prefix"),
                             prefix + " (every key had it: the module's one attribute)"});
    attachMoments(tag, *f, path);
    return tag;
}

class LightningFamily final : public Family
{
public:
    std::string_view id() const override { return "lightning"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "PyTorch Lightning checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a PyTorch Lightning .ckpt file, or a folder of them (ModelCheckpoint's, .ckpt folders of its "
               "DeepSpeed and FSDP strategies too)";
    }
    // A folder is ModelCheckpoint's when its first .ckpt is Lightning's: one file's head read, not
    // every file's (each a request when the folder is in a store).
    bool match(const std::string& path) const override
    {
        if (isLightningFile(path)) return true;
        const io::Folder dir(path);
        if (!dir.exists() || !dir.lists()) return false;
        for (const io::FolderEntry& e : dir.entries())
            if (e.name.ends_with(".ckpt"))
                return e.folder ? strategyFamily(dir.file(e.name)) != nullptr
                                : isLightningFile(dir.file(e.name));
        return false;
    }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        l.root = path;
        if (isLightningFile(path)) {
            l.tags.push_back({io::fileName(path), path});
            l.latest = l.tags.front().first;
            return l;
        }
        const io::Folder dir(path);
        std::vector<std::string> names;
        // Every .ckpt is a tag: one that is not Lightning's says so when it is opened.
        for (const io::FolderEntry& e : dir.entries())
            if (e.name.ends_with(".ckpt")) names.push_back(e.name);
        std::sort(names.begin(), names.end(),
                  [](const auto& a, const auto& b) { return order(a) < order(b); });
        for (const std::string& n : names)
            l.tags.push_back({n, dir.file(n)});
        if (!names.empty()) l.latest = names.back(); // last.ckpt where it was saved, else the newest
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, path] = list.tags.at(index);
        Tag tag;
        if (const Family* f = strategyFamily(path)) {
            const TagList sub = f->listTags(path);
            size_t at = 0;
            for (size_t i = 0; i < sub.tags.size(); ++i)
                if (sub.tags[i].first == sub.latest) at = i;
            tag = f->openTag(sub, at, files);
            tag.facts.insert(tag.facts.begin(), {QT_TRANSLATE_NOOP("ckpt::layout", "Lightning strategy save"),
                                                 std::string(f->displayName())});
            tag.name = name;
        } else if (io::pathKind(path) == io::PathKind::Folder) {
            throw Error(
                "a .ckpt folder that is neither a DeepSpeed tag (latest) nor a DCP folder (.metadata)", path);
        } else {
            tag = openFile(name, path, files);
        }
        tag.latest = name == list.latest;
        return tag;
    }
};

} // namespace

const Family& lightningFamily()
{
    static const LightningFamily f;
    return f;
}

} // namespace ckpt::layout
