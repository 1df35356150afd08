#include "layout/universal.h"

#include "compute_backend.h"
#include "io/error.h"
#include "io/input_file.h"
#include "layout/families.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

namespace ckpt::layout {

namespace fs = std::filesystem;
using pickle::Kind;
using pickle::Value;
using torch::asInt;
using torch::asString;
using torch::dictGet;

namespace {

bool isModelStates(const std::string& name)
{
    return name.size() > 18 && name.ends_with("_model_states.pt") &&
           (name.starts_with("mp_rank_") || name.starts_with("zero_pp_rank_"));
}

// The copied model-states files, in natural order (rank 0 first: `zero_pp_rank_0_...`).
std::vector<fs::path> modelFiles(const fs::path& dir)
{
    std::vector<fs::path> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file(ec) && isModelStates(e.path().filename().string())) out.push_back(e.path());
    std::sort(out.begin(), out.end(), [](const fs::path& a, const fs::path& b) {
        const std::string x = a.filename().string(), y = b.filename().string();
        return x.size() != y.size() ? x.size() < y.size() : x < y; // rank 2 before rank 10
    });
    return out;
}

std::string readName(const fs::path& file)
{
    std::string s = io::readSmallFile(file.string(), 4096);
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    return s;
}

// The tensor a Universal state file holds: 'param' of its dict, or the file's one tensor.
const torch::Tensor& stateTensor(const torch::TorchFile& f)
{
    const Value* root = f.root();
    const torch::Tensor* t = root && root->kind == Kind::Dict ? f.tensor("param") : f.tensor("");
    if (!t) throw Error("not a Universal parameter file: neither a tensor nor a dict with 'param'", f.path());
    if (t->storage < 0) throw Error("the parameter tensor has no data", f.path());
    return *t;
}

class UniversalFamily final : public Family
{
public:
    std::string_view id() const override { return "universal"; }
    std::string_view displayName() const override { return "DeepSpeed Universal checkpoint"; }
    std::string_view lookedFor() const override
    {
        return "a DeepSpeed Universal checkpoint (zero/<param>/fp32.pt beside *_model_states.pt, or a folder "
               "whose latest_universal names one)";
    }
    bool match(const std::string& path) const override
    {
        std::error_code ec;
        if (isUniversalFolder(path)) return true;
        // A root with latest_universal but no `latest`: with `latest`, the training tags are
        // what the folder holds, and DeepSpeed's family shows them.
        const fs::path p(path);
        if (!fs::is_regular_file(p / "latest_universal", ec) || fs::exists(p / "latest", ec)) return false;
        try {
            const std::string name = readName(p / "latest_universal");
            return !name.empty() && name.find('/') == std::string::npos &&
                   isUniversalFolder((p / name).string());
        } catch (const Error&) {
            return false;
        }
    }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        const fs::path p(path);
        std::error_code ec;
        if (isUniversalFolder(path)) {
            fs::path folder = p.lexically_normal();
            if (!folder.has_filename()) folder = folder.parent_path(); // "uni/"
            const fs::path parent = folder.parent_path();
            const std::string name = folder.filename().string();
            l.root = parent.empty() ? "." : parent.string();
            if (fs::is_regular_file(fs::path(l.root) / "latest_universal", ec))
                l.latest = readName(fs::path(l.root) / "latest_universal");
            l.tags.push_back({name.empty() ? path : name, path});
            return l;
        }
        l.root = path;
        l.latest = readName(p / "latest_universal");
        for (const auto& e : fs::directory_iterator(p, ec))
            if (e.is_directory(ec) && isUniversalFolder(e.path().string()))
                l.tags.push_back({e.path().filename().string(), e.path().string()});
        std::sort(l.tags.begin(), l.tags.end());
        if (l.tags.empty()) throw Error("no Universal checkpoint folder found", path);
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override;
};

// Adds one of the tag's files, named relative to the tag's folder.
void addFile(Tag& tag, const fs::path& root, const fs::path& p, FileRole role)
{
    RankFile rf;
    rf.path = p.string();
    rf.name = p.lexically_relative(root).generic_string();
    rf.role = role;
    std::error_code sizeError;
    rf.size = fs::file_size(p, sizeError);
    if (sizeError) throw Error("cannot read the file's size: " + sizeError.message(), rf.path);
    tag.files.push_back(std::move(rf));
}

// Counters and names from the first model file, as DeepSpeed's load_universal reads it.
void readCounters(const Value* mroot, Tag& tag)
{
    tag.dsVersion = asString(dictGet(mroot, "ds_version")).value_or("");
    tag.globalSteps = asInt(dictGet(mroot, "global_steps")).value_or(-1);
    tag.globalSamples = asInt(dictGet(mroot, "global_samples")).value_or(-1);
    tag.skippedSteps = asInt(dictGet(mroot, "skipped_steps")).value_or(-1);
    tag.mpWorldSize = int(asInt(dictGet(mroot, "mp_world_size")).value_or(1));
}

// The ZeRO stage and the world size the checkpoint was converted from, from
// zero/optimizer_state.pt (whose partition_count is one count or one per parameter group).
void readOptimizerState(const TensorFile& osd, Tag& tag)
{
    if (!osd.torch()) return;
    tag.zeroStage = int(asInt(dictGet(osd.torch()->root(), "zero_stage")).value_or(-1));
    const Value* pc = dictGet(osd.torch()->root(), "partition_count");
    if (auto n = asInt(pc))
        tag.worldSize = int(*n);
    else if (auto l = torch::asInts(pc); l && !l->empty())
        tag.worldSize = int(*std::max_element(l->begin(), l->end()));
}

// What the model file says of the parameters: their order, shapes, which are buffers and
// which are tied to another.
struct ModelNames
{
    std::vector<std::string> order;
    std::map<std::string, std::vector<int64_t>> shapes;
    std::set<std::string> buffers;
    std::map<std::string, std::string> tied; // alias -> target
};

// What reading the names may copy, in bytes, for each byte of the model file (and 1 MiB more): a
// memo reference costs the pickle two bytes but copies all it refers to, so param_shapes listing
// one group of 1,000 names 10,000 times would be ten million names. A real model file names each
// parameter a few times (param_shapes, module, shared_params).
constexpr uint64_t kCopiesPerByte = 16;
constexpr uint64_t kCopiesBase = 1u << 20;

ModelNames readModelNames(const torch::TorchFile& mf)
{
    const Value* mroot = mf.root();
    ModelNames m;
    uint64_t left = kCopiesBase + kCopiesPerByte * mf.fileSize();
    auto charge = [&](uint64_t bytes) {
        if (bytes > left)
            throw Error("names the same parameters over and over (more than " +
                            std::to_string(kCopiesPerByte) +
                            " times the file's size once expanded): not a DeepSpeed model file",
                        mf.path());
        left -= bytes;
    };
    auto name = [&](const Value* k) {
        auto n = asString(k);
        if (n) charge(sizeof(std::string) + n->size());
        return n;
    };
    // Order: param_shapes (the optimizer's order), then the other module tensors (buffers,
    // frozen and tied parameters, which ds_to_universal copies from `module` at stage <= 2).
    if (const Value* ps = dictGet(mroot, "param_shapes"); ps && ps->kind == Kind::List)
        for (const Value* g : ps->items)
            for (const auto& [k, v] : g->entries)
                if (auto n = name(k)) {
                    m.order.push_back(*n);
                    if (auto s = torch::asInts(v)) {
                        charge(s->size() * sizeof(int64_t));
                        m.shapes[*n] = *s;
                    }
                }
    if (const Value* b = dictGet(mroot, "buffer_names"); b && b->kind == Kind::List)
        for (const Value* x : b->items)
            if (auto n = name(x)) m.buffers.insert(*n);
    if (const Value* module = dictGet(mroot, "module"))
        for (const auto& [k, v] : module->entries)
            if (auto n = name(k)) m.order.push_back(*n);
    // Tied weights, as the ZeRO tag's model file recorded them: ds_to_universal copies the
    // alias from `module` into a folder of its own, but it is still the same tensor.
    if (const Value* shared = dictGet(mroot, "shared_params"))
        for (const auto& [k, v] : shared->entries)
            if (auto alias = name(k), target = name(v); alias && target) m.tied[*alias] = *target;
    return m;
}

// The parameter folders under zero/. Every parameter the optimizer held has its folder
// (ds_to_universal writes one for each with elements); one that is missing is a damaged or
// incomplete copy.
std::set<std::string> parameterFolders(const fs::path& root, const ModelNames& names)
{
    std::set<std::string> present;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root / "zero", ec))
        if (e.is_directory(ec)) present.insert(e.path().filename().string());
    if (ec) throw Error("cannot list the folder: " + ec.message(), (root / "zero").string());
    for (const auto& [pname, shape] : names.shapes)
        if (!present.count(pname) && gpu::numelOf(shape) > 0)
            throw Error("missing: the parameter's fp32.pt", (root / "zero" / pname / "fp32.pt").string());
    return present;
}

// The parameter's Adam moments beside its fp32.pt, as states of its slice; whether it has any
// (only a trained parameter does).
bool readMoments(const fs::path& pdir, const torch::Tensor& t, RankSlice& s, const fs::path& root,
                 FileSet& files, Tag& tag)
{
    std::error_code ec;
    bool moments = false;
    for (const char* state : {"exp_avg", "exp_avg_sq"}) {
        const fs::path sp = pdir / (std::string(state) + ".pt");
        if (!fs::is_regular_file(sp, ec)) continue;
        addFile(tag, root, sp, FileRole::Other);
        const auto sf = files.get(sp.string());
        if (!sf->torch()) throw Error("not a torch.save file", sp.string());
        const torch::Tensor& st = stateTensor(*sf->torch());
        if (st.numel() != t.numel())
            throw Error("holds " + std::to_string(st.numel()) + " elements, fp32.pt beside it " +
                            std::to_string(t.numel()),
                        sp.string());
        s.states.push_back({state, {{sp.string(), st.path, 0, st.numel(), st.dtype, {}, {}}}});
        moments = true;
    }
    return moments;
}

// One parameter from its folder zero/<name>: fp32.pt (shaped from param_shapes, since ZeRO-3
// writes it flat), its moments and its step.
Parameter readParameter(const std::string& pname, const ModelNames& names, const fs::path& root,
                        FileSet& files, Tag& tag)
{
    std::error_code ec;
    const fs::path pdir = root / "zero" / pname;
    const fs::path fp32 = pdir / "fp32.pt";
    if (!fs::is_regular_file(fp32, ec)) throw Error("missing: the parameter's fp32.pt", fp32.string());
    addFile(tag, root, fp32, FileRole::Other);
    const auto f = files.get(fp32.string());
    if (!f->torch()) throw Error("not a torch.save file", fp32.string());
    const torch::Tensor& t = stateTensor(*f->torch());
    Parameter p;
    p.name = pname;
    p.dtype = t.dtype;
    p.shape = t.shape;
    if (auto it = names.shapes.find(pname); it != names.shapes.end() && it->second != t.shape) {
        if (gpu::numelOf(it->second) != t.numel())
            throw Error("holds " + std::to_string(t.numel()) + " elements but param_shapes gives '" + pname +
                            "' " + std::to_string(gpu::numelOf(it->second)),
                        fp32.string());
        p.shape = it->second; // ZeRO-3 writes the flat tensor
    }
    RankSlice s;
    s.length = t.numel();
    s.master.push_back({fp32.string(), t.path, 0, s.length, t.dtype, {}, {}});
    const bool moments = readMoments(pdir, t, s, root, files, tag);
    if (fs::is_regular_file(pdir / "step.pt", ec)) addFile(tag, root, pdir / "step.pt", FileRole::Other);
    p.kind = moments                      ? Parameter::Kind::Trainable
             : names.buffers.count(pname) ? Parameter::Kind::Buffer
                                          : Parameter::Kind::Frozen;
    p.slices.push_back(std::move(s));
    return p;
}

// Makes each tied alias point at its target (when that exists with as many elements).
void applyTiedWeights(std::vector<Parameter>& params, const std::map<std::string, std::string>& tied)
{
    for (auto& p : params) {
        const auto t = tied.find(p.name);
        if (t == tied.end()) continue;
        const auto target = std::find_if(params.begin(), params.end(),
                                         [&](const Parameter& q) { return q.name == t->second; });
        if (target == params.end() || target->numel() != p.numel()) continue;
        p.tiedTo = target->name;
        p.kind = target->kind; // its moments are the target's: it is no frozen parameter
        p.slices.clear();      // an alias has no data of its own, as in the ZeRO tag
    }
}

Tag UniversalFamily::openTag(const TagList& list, size_t index, FileSet& files) const
{
    const auto& [name, dir] = list.tags.at(index);
    Tag tag;
    tag.name = name;
    tag.dir = dir;
    tag.latest = name == list.latest;
    tag.optimizer = "universal";
    tag.dtype = "fp32";
    tag.exportDtype = torch::DType::Float32;
    const fs::path root(dir);
    const std::vector<fs::path> models = modelFiles(root);
    if (models.empty()) throw Error("no *_model_states.pt file beside zero/", dir);
    const auto m0 = files.get(models.front().string());
    const torch::TorchFile* mf = m0->torch();
    if (!mf) throw Error("not a torch.save file", models.front().string());
    const Value* mroot = mf->root();
    readCounters(mroot, tag);
    for (const auto& m : models)
        addFile(tag, root, m, FileRole::ModelStates);
    const fs::path osdPath = root / "zero" / "optimizer_state.pt";
    addFile(tag, root, osdPath, FileRole::OptimStates);
    const auto osd = files.get(osdPath.string()); // held, as m0 is, while the tag opens
    readOptimizerState(*osd, tag);

    ModelNames names = readModelNames(*mf);
    const std::set<std::string> present = parameterFolders(root, names);
    for (const auto& n : present) // folders no model file names, last, by name
        names.order.push_back(n);
    std::set<std::string> seen;
    for (const std::string& pname : names.order) {
        if (!present.count(pname) || !seen.insert(pname).second) continue;
        tag.params.push_back(readParameter(pname, names, root, files, tag));
    }
    if (tag.params.empty()) throw Error("no parameter folders under zero/", dir);
    applyTiedWeights(tag.params, names.tied);
    return tag;
}

} // namespace

bool isUniversalFolder(const std::string& path)
{
    std::error_code ec;
    const fs::path p(path);
    if (!fs::is_regular_file(p / "zero" / "optimizer_state.pt", ec)) return false;
    for (const auto& e : fs::directory_iterator(p, ec))
        if (e.is_regular_file(ec) && isModelStates(e.path().filename().string())) return true;
    return false;
}

const Family& universalFamily()
{
    static const UniversalFamily f;
    return f;
}

} // namespace ckpt::layout
