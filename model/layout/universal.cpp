#include "layout/universal.h"

#include "compute_backend.h"
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "io/mapped_file.h"
#include "layout/families.h"
#include "layout/words.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace ckpt::layout {

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

// Model-states file names in natural order (rank 0 first: `zero_pp_rank_0_...`, rank 2 before 10).
bool naturalLess(const std::string& x, const std::string& y)
{
    return x.size() != y.size() ? x.size() < y.size() : x < y;
}

std::string readName(const std::string& file)
{
    std::string s = io::readSmallFile(file, 4096);
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    return s;
}

std::string withoutSlash(std::string s)
{
    while (s.size() > 1 && s.back() == '/')
        s.pop_back();
    return s;
}

std::string optimizerStatePath(const std::string& dir)
{
    return io::childPath(dir, "zero/optimizer_state.pt");
}

// The files of a Universal folder by their path in it, with sizes. Where the folder can be listed
// (a local one, S3, GCS, the Hub) one recursive listing gives them all; a plain HTTP server lists
// nothing, so the names come from the format: the model files, then every parameter's files
// from the names the model file gives, each set asked for in one wave (probeFiles).
class FolderFiles
{
public:
    explicit FolderFiles(std::string dir) : m_dir(std::move(dir))
    {
        if (m_dir.lists())
            for (const auto& f : m_dir.filesBelow())
                m_size[f.relative] = f.size;
    }
    const std::string& dir() const { return m_dir.path(); }
    std::string path(const std::string& rel) const { return m_dir.file(rel); }
    bool has(const std::string& rel) const { return m_size.count(rel) > 0; }
    uint64_t size(const std::string& rel) const { return m_size.at(rel); }
    // Asks for these names where nothing lists the folder, all in one wave. Where it lists, opens
    // those of `parsed` it has in one wave too (they are parsed next), so a tag of a thousand
    // remote parameters is not a thousand round trips in a row; `listedOnly` are not opened.
    void probe(const std::vector<std::string>& parsed, const std::vector<std::string>& listedOnly = {})
    {
        const bool listed = m_dir.lists();
        std::vector<std::string> asked;
        std::set<std::string> once; // the model file names a parameter twice (param_shapes, module)
        for (const auto* names : {&parsed, &listedOnly})
            for (const auto& r : *names)
                if ((listed ? names == &parsed && has(r) : true) && once.insert(r).second) asked.push_back(r);
        const auto sizes = m_dir.probe(asked);
        for (size_t i = 0; i < asked.size(); ++i)
            if (sizes[i]) m_size[asked[i]] = *sizes[i];
    }
    // The files directly in the folder (not in zero/), by name.
    std::vector<std::string> topFiles() const
    {
        std::vector<std::string> out;
        for (const auto& [rel, size] : m_size)
            if (rel.find('/') == std::string::npos) out.push_back(rel);
        return out;
    }
    // The parameter folders zero/<name> holding a file.
    std::set<std::string> parameterFolders() const
    {
        std::set<std::string> out;
        for (const auto& [rel, size] : m_size)
            if (rel.starts_with("zero/") && rel.find('/', 5) != std::string::npos)
                out.insert(rel.substr(5, rel.find('/', 5) - 5));
        return out;
    }

private:
    io::Folder m_dir;
    std::map<std::string, uint64_t> m_size;
};

// DeepSpeed's names for the model files of `mp` model-parallel ranks and `dp` data-parallel
// ones (ZeRO-3 writes one per rank): what a plain HTTP folder is asked for.
std::vector<std::string> modelFileNames(int mp, int dp)
{
    std::vector<std::string> names;
    char buf[96];
    for (int m = 0; m < std::max(mp, 1); ++m) {
        std::snprintf(buf, sizeof buf, "mp_rank_%02d_model_states.pt", m);
        names.push_back(buf);
        for (int r = 0; r < std::max(dp, 1); ++r) {
            std::snprintf(buf, sizeof buf, "zero_pp_rank_%d_mp_rank_%02d_model_states.pt", r, m);
            names.push_back(buf);
        }
    }
    return names;
}

// The copied model-states files found so far, in natural order.
std::vector<std::string> modelFiles(const FolderFiles& files)
{
    std::vector<std::string> out;
    for (const auto& n : files.topFiles())
        if (isModelStates(n)) out.push_back(n);
    std::sort(out.begin(), out.end(), naturalLess);
    return out;
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
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed Universal checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a DeepSpeed Universal checkpoint (zero/<param>/fp32.pt beside *_model_states.pt, or a folder "
               "whose latest_universal names one)";
    }
    std::vector<std::string> namesAsked() const override
    {
        const auto models = modelFileNames(1, 1);
        return {"zero/optimizer_state.pt", models[0], models[1], "latest_universal", "latest"};
    }
    bool match(const std::string& path) const override
    {
        // Over plain HTTP only a URL ending in '/' is a folder: a file's URL with a query would
        // otherwise answer for every name asked below it.
        const io::Folder folder(path);
        if (!folder.exists()) return false;
        if (isUniversalFolder(path)) return true;
        // A root with latest_universal but no `latest`: with `latest`, the training tags are
        // what the folder holds, and DeepSpeed's family shows them. A listing that has no
        // latest_universal costs no request.
        if (!folder.has("latest_universal")) return false;
        const auto found = folder.probe({"latest_universal", "latest"});
        if (!found[0] || found[1]) return false;
        try {
            const std::string name = readName(folder.file("latest_universal"));
            return !name.empty() && name.find('/') == std::string::npos &&
                   isUniversalFolder(folder.folder(name).path());
        } catch (const Error&) {
            return false;
        }
    }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        if (isUniversalFolder(path)) {
            const std::string folder = withoutSlash(path); // "uni/"
            const std::string parent = io::parentPath(folder);
            const std::string name = io::fileName(folder);
            l.root = parent.empty() ? "." : parent;
            if (const io::Folder root(l.root); root.sizeOf("latest_universal"))
                l.latest = readName(root.file("latest_universal"));
            l.tags.push_back({name.empty() ? path : name, path});
            return l;
        }
        l.root = path;
        const io::Folder root(path);
        l.latest = readName(root.file("latest_universal"));
        if (!root.lists()) { // plain HTTP: the one latest_universal names (a folder ends in '/')
            if (const std::string folder = root.folder(l.latest).path(); isUniversalFolder(folder))
                l.tags.push_back({l.latest, folder});
        } else {
            for (const auto& e : root.entries())
                if (e.folder && isUniversalFolder(io::childPath(path, e.name)))
                    l.tags.push_back({e.name, io::childPath(path, e.name)});
        }
        std::sort(l.tags.begin(), l.tags.end());
        if (l.tags.empty()) throw Error("no Universal checkpoint folder found", path);
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override;
};

// Adds one of the tag's files, named by its path in the tag's folder.
void addFile(Tag& tag, const FolderFiles& folder, const std::string& rel, FileRole role)
{
    RankFile rf;
    rf.path = folder.path(rel);
    rf.name = rel;
    rf.role = role;
    rf.size = folder.size(rel);
    tag.files.push_back(std::move(rf));
}

// Counters and names from the first model file, as DeepSpeed's load_universal reads it.
void readCounters(const Value* mroot, Tag& tag)
{
    tag.deepspeed->version = asString(dictGet(mroot, "ds_version")).value_or("");
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
    tag.deepspeed->zeroStage = int(asInt(dictGet(osd.torch()->root(), "zero_stage")).value_or(-1));
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
std::set<std::string> parameterFolders(const FolderFiles& folder, const ModelNames& names)
{
    const std::set<std::string> present = folder.parameterFolders();
    for (const auto& [pname, shape] : names.shapes)
        if (!present.count(pname) && gpu::numelOf(shape) > 0)
            throw Error("missing: the parameter's fp32.pt", folder.path("zero/" + pname + "/fp32.pt"));
    return present;
}

// The files of a parameter's folder, by their path in the Universal folder.
std::string stateFile(const std::string& pname, const char* state)
{
    return "zero/" + pname + "/" + state + ".pt";
}

// The parameter's Adam moments beside its fp32.pt, as its state; whether it has any (only a
// trained parameter does).
bool readMoments(const std::string& pname, const torch::Tensor& t, Parameter& p, const FolderFiles& folder,
                 FileSet& files, Tag& tag)
{
    bool moments = false;
    for (const char* state : {"exp_avg", "exp_avg_sq"}) {
        const std::string rel = stateFile(pname, state), sp = folder.path(rel);
        if (!folder.has(rel)) continue;
        addFile(tag, folder, rel, FileRole::Other);
        const auto sf = files.get(sp);
        if (!sf->torch()) throw Error("not a torch.save file", sp);
        const torch::Tensor& st = stateTensor(*sf->torch());
        if (st.numel() != t.numel())
            throw Error("holds " + std::to_string(st.numel()) + " elements, fp32.pt beside it " +
                            std::to_string(t.numel()),
                        sp);
        p.addStatePieces(state, 0, {Source::flat(sp, st.path, 0, st.numel(), st.dtype)});
        moments = true;
    }
    return moments;
}

// One parameter from its folder zero/<name>: fp32.pt (shaped from param_shapes, since ZeRO-3
// writes it flat), its moments and its step.
Parameter readParameter(const std::string& pname, const ModelNames& names, const FolderFiles& folder,
                        FileSet& files, Tag& tag)
{
    const std::string rel = stateFile(pname, "fp32"), fp32 = folder.path(rel);
    if (!folder.has(rel)) throw Error("missing: the parameter's fp32.pt", fp32);
    addFile(tag, folder, rel, FileRole::Other);
    const auto f = files.get(fp32);
    if (!f->torch()) throw Error("not a torch.save file", fp32);
    const torch::Tensor& t = stateTensor(*f->torch());
    Parameter p;
    p.name = pname;
    p.dtype = t.dtype;
    p.shape = t.shape;
    if (auto it = names.shapes.find(pname); it != names.shapes.end() && it->second != t.shape) {
        if (gpu::numelOf(it->second) != t.numel())
            throw Error("holds " + std::to_string(t.numel()) + " elements but param_shapes gives '" + pname +
                            "' " + std::to_string(gpu::numelOf(it->second)),
                        fp32);
        p.shape = it->second; // ZeRO-3 writes the flat tensor
    }
    RankSlice s;
    s.length = t.numel();
    s.master.push_back(Source::flat(fp32, t.path, 0, s.length, t.dtype));
    const bool moments = readMoments(pname, t, p, folder, files, tag);
    if (folder.has(stateFile(pname, "step"))) addFile(tag, folder, stateFile(pname, "step"), FileRole::Other);
    p.kind = moments                      ? Parameter::Kind::Trainable
             : names.buffers.count(pname) ? Parameter::Kind::Buffer
                                          : Parameter::Kind::Frozen;
    p.slices.push_back(std::move(s));
    p.alignStates();
    return p;
}

// The module's own tensor `name` in the model file, as stored; nullptr when it has none with data.
const torch::Tensor* moduleTensor(const torch::TorchFile& mf, const std::string& name)
{
    const torch::Tensor* t = mf.tensor("module/" + name);
    return t && t->storage >= 0 ? t : nullptr;
}

// Makes `p` read the model file's tensor `t` (one slice, as stored).
void readFromModelFile(Parameter& p, const torch::Tensor& t, const std::string& modelFile)
{
    p.dtype = t.dtype;
    p.shape = t.shape;
    RankSlice s;
    s.length = t.numel();
    s.master.push_back(Source::flat(modelFile, t.path, 0, s.length, t.dtype));
    p.slices.assign(1, std::move(s));
}

// ds_to_universal writes every tensor of the module as a float fp32.pt, an integer buffer
// (position_ids, a step counter) too; the model file beside it holds the original, which is what
// DeepSpeed's load_universal puts back into the module. An export never casts an integer or bool
// tensor, so such a parameter is read from there, as stored.
void keepStoredInteger(Parameter& p, const torch::TorchFile& mf, const std::string& modelFile)
{
    const torch::Tensor* t = moduleTensor(mf, p.name);
    if (t && !torch::info(t->dtype).isFloat && t->numel() == p.numel()) readFromModelFile(p, *t, modelFile);
}

// A buffer with no folder under zero/ (ZeRO-3 conversions write folders only for the optimizer's
// parameters): DeepSpeed restores it from the module in the model file, and so it is read there.
std::optional<Parameter> bufferOfTheModule(const std::string& name, const ModelNames& names,
                                           const torch::TorchFile& mf, const std::string& modelFile)
{
    const torch::Tensor* t = names.buffers.count(name) ? moduleTensor(mf, name) : nullptr;
    if (!t) return std::nullopt;
    Parameter p;
    p.name = name;
    p.kind = Parameter::Kind::Buffer;
    readFromModelFile(p, *t, modelFile);
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
    tag.deepspeed.emplace();
    tag.name = name;
    tag.dir = dir;
    tag.latest = name == list.latest;
    tag.deepspeed->optimizer = "universal";
    tag.dtype = "fp32";
    tag.exportDtype = torch::DType::Float32;
    FolderFiles folder(dir);
    const std::string osdRel = "zero/optimizer_state.pt";
    const std::vector<std::string> firstNames = modelFileNames(1, 1);
    folder.probe({osdRel, firstNames[0], firstNames[1]});
    const std::vector<std::string> first = modelFiles(folder);
    if (first.empty()) throw Error("no *_model_states.pt file beside zero/", dir);
    const auto m0 = files.get(folder.path(first.front()));
    const torch::TorchFile* mf = m0->torch();
    if (!mf) throw Error("not a torch.save file", folder.path(first.front()));
    const Value* mroot = mf->root();
    readCounters(mroot, tag);
    if (!folder.has(osdRel)) throw Error("missing: zero/optimizer_state.pt", folder.path(osdRel));
    const auto osd = files.get(folder.path(osdRel)); // held, as m0 is, while the tag opens
    readOptimizerState(*osd, tag);
    ModelNames names = readModelNames(*mf);
    // Every parameter's files, and the files only listed (the other model files, the steps).
    std::vector<std::string> parsed, listed = modelFileNames(tag.mpWorldSize, tag.worldSize);
    for (const std::string& pname : names.order) {
        for (const char* state : {"fp32", "exp_avg", "exp_avg_sq"})
            parsed.push_back(stateFile(pname, state));
        listed.push_back(stateFile(pname, "step"));
    }
    folder.probe(parsed, listed);
    for (const auto& m : modelFiles(folder))
        addFile(tag, folder, m, FileRole::ModelStates);
    addFile(tag, folder, osdRel, FileRole::OptimStates);
    const std::set<std::string> present = parameterFolders(folder, names);
    for (const auto& n : present) // folders no model file names, last, by name
        names.order.push_back(n);
    std::set<std::string> seen;
    const std::string modelFile = folder.path(first.front());
    for (const std::string& pname : names.order) {
        if (!seen.insert(pname).second) continue;
        if (!present.count(pname)) {
            if (auto b = bufferOfTheModule(pname, names, *mf, modelFile)) tag.params.push_back(std::move(*b));
            continue;
        }
        tag.params.push_back(readParameter(pname, names, folder, files, tag));
        keepStoredInteger(tag.params.back(), *mf, modelFile);
    }
    if (tag.params.empty()) throw Error("no parameter folders under zero/", dir);
    applyTiedWeights(tag.params, names.tied);
    return tag;
}

} // namespace

bool isUniversalFolder(const std::string& path)
{
    const io::Folder folder(path);
    if (!folder.exists()) return false;
    if (!folder.lists()) { // plain HTTP: the names DeepSpeed gives, asked for together
        const auto models = modelFileNames(1, 1);
        const auto found = folder.probe({"zero/optimizer_state.pt", models[0], models[1]});
        return found[0] && (found[1] || found[2]);
    }
    // Listed: zero/ and a model file, from the listing; then zero/optimizer_state.pt and the
    // model files, opened in one wave (the tag's open parses them next).
    bool zero = false;
    std::vector<std::pair<std::string, uint64_t>> open{{optimizerStatePath(path), 0}};
    for (const auto& e : folder.entries()) {
        zero = zero || (e.folder && e.name == "zero");
        if (!e.folder && isModelStates(e.name)) open.push_back({folder.file(e.name), e.size});
    }
    if (!zero || open.size() < 2) return false;
    // The latest_universal above, which says whether this folder is the latest, in the same wave.
    const std::string above = folder.parent().file("latest_universal");
    if (io::pathKind(above) == io::PathKind::File) open.push_back({above, 0});
    io::MappedFile::prefetch(open);
    return bool(folder.sizeOf("zero/optimizer_state.pt"));
}

const Family& universalFamily()
{
    static const UniversalFamily f;
    return f;
}

} // namespace ckpt::layout
