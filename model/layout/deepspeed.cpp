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

namespace ckpt::layout {

using pickle::Kind;
using pickle::Value;
using torch::asInt;
using torch::asInts;
using torch::asString;
using torch::dictGet;
using torch::seqAt;

namespace ds {

[[noreturn]] void fail(const std::string& what, const std::string& file)
{
    throw Error(what, file);
}

// The element count of a tensor at a path, or throw naming the file.
const torch::Tensor& tensorAt(const OpenFile& f, const std::string& path)
{
    const torch::Tensor* t = f.file->tensor(path);
    if (!t) fail("expected a tensor at '" + path + "'", f.info.path);
    return *t;
}

Source source(const OpenFile& f, const std::string& path, uint64_t offset, uint64_t count)
{
    return {f.info.path, path, offset, count, tensorAt(f, path).dtype, {}, {}};
}

// A whole tensor of a file as a parameter.
Parameter wholeTensor(const OpenFile& f, const std::string& name, const std::string& path,
                      Parameter::Kind kind)
{
    const torch::Tensor& t = tensorAt(f, path);
    Parameter p;
    p.name = name;
    p.kind = kind;
    p.shape = t.shape;
    p.dtype = t.dtype;
    RankSlice s;
    s.length = t.numel();
    s.master.push_back(source(f, path, 0, t.numel()));
    p.slices.push_back(std::move(s));
    return p;
}

} // namespace ds

namespace {

using ds::fail;
using ds::OpenFile;
using ds::openStageZero;
using ds::source;
using ds::tensorAt;
using ds::wholeTensor;

// Natural order, as zero_to_fp32 sorts: digit runs compare as numbers.
bool naturalLess(const std::string& a, const std::string& b)
{
    size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (std::isdigit(uint8_t(a[i])) && std::isdigit(uint8_t(b[j]))) {
            size_t ie = i, je = j;
            while (ie < a.size() && std::isdigit(uint8_t(a[ie])))
                ++ie;
            while (je < b.size() && std::isdigit(uint8_t(b[je])))
                ++je;
            const auto na = std::stoull(a.substr(i, std::min<size_t>(ie - i, 18)));
            const auto nb = std::stoull(b.substr(j, std::min<size_t>(je - j, 18)));
            if (na != nb) return na < nb;
            i = ie, j = je;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i, ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

RankFile classifyName(const std::string& name)
{
    static const std::regex modelMp(R"(mp_rank_(\d+)_model_states\.pt)");
    static const std::regex modelZero(R"(zero_pp_rank_(\d+)_mp_rank_(\d+)_model_states\.pt)");
    static const std::regex optim(R"((bf16_|fp16_)?zero_pp_rank_(\d+)_mp_rank_(\d+)_?optim_states\.pt)");
    static const std::regex layer(R"(layer_(\d+)-model_(?:(\d+)-model_)?states\.pt)");
    static const std::regex expert(R"((?:layer_\d+_)?expert_(\d+)_mp_rank_(\d+)_model_states\.pt)");
    static const std::regex expOptim(R"(expp_rank_(\d+)_mp_rank_(\d+)_optim_states\.pt)");
    RankFile f;
    f.name = name;
    std::smatch m;
    if (std::regex_match(f.name, m, modelZero)) {
        f.role = FileRole::ModelStates, f.dpRank = std::stoi(m[1]), f.mpRank = std::stoi(m[2]);
    } else if (std::regex_match(f.name, m, modelMp)) {
        f.role = FileRole::ModelStates, f.mpRank = std::stoi(m[1]);
    } else if (std::regex_match(f.name, m, optim)) {
        f.role = FileRole::OptimStates, f.prefix = m[1], f.dpRank = std::stoi(m[2]),
        f.mpRank = std::stoi(m[3]);
    } else if (std::regex_match(f.name, m, layer)) {
        f.role = FileRole::Layer, f.mpRank = m[2].matched ? std::stoi(m[2]) : 0;
    } else if (std::regex_match(f.name, m, expert)) {
        f.role = FileRole::Expert, f.mpRank = std::stoi(m[2]);
    } else if (std::regex_match(f.name, m, expOptim)) {
        f.role = FileRole::ExpertOptim, f.mpRank = std::stoi(m[2]);
    }
    return f;
}

// Folders and files through io/location.h: a tag folder may be local or in an object store.
RankFile classify(const std::string& dir, const io::FolderEntry& e)
{
    RankFile f = classifyName(e.name);
    f.path = io::childPath(dir, e.name);
    f.size = e.size;
    return f;
}

// Never throws: a folder that cannot be listed has no rank files.
std::vector<io::FolderEntry> entriesOf(const std::string& dir)
{
    try {
        return io::listFolder(dir);
    } catch (const Error&) {
        return {};
    }
}

// A folder whose server cannot list it (plain HTTP): its files by the names DeepSpeed gives
// them, asked for in waves — the first model and optimizer files of rank 0, then the ranks
// after, doubling, until one is missing. Model parallelism (mp_rank_01…) is not looked for.
const std::vector<std::string> kRank0Names = {
    "mp_rank_00_model_states.pt", "zero_pp_rank_0_mp_rank_00_model_states.pt",
    "zero_pp_rank_0_mp_rank_00_optim_states.pt", "bf16_zero_pp_rank_0_mp_rank_00_optim_states.pt"};

std::vector<io::FolderEntry> entriesByName(const std::string& dir)
{
    const std::vector<std::string>& rank0 = kRank0Names;
    std::vector<io::FolderEntry> out;
    std::vector<std::string> patterns; // per-rank names whose rank 0 exists, "{}" for the rank
    const auto add = [&](const std::vector<std::string>& names) {
        std::vector<std::string> paths;
        for (const auto& n : names)
            paths.push_back(io::childPath(dir, n));
        const auto sizes = io::probeFiles(paths);
        for (size_t i = 0; i < names.size(); ++i)
            if (sizes[i]) out.push_back({names[i], false, *sizes[i]});
        return sizes;
    };
    const auto first = add(rank0);
    for (size_t i = 1; i < rank0.size(); ++i)
        if (first[i])
            patterns.push_back(rank0[i].substr(0, rank0[i].find("rank_0_") + 5) + "{}" +
                               rank0[i].substr(rank0[i].find("rank_0_") + 6));
    for (int from = 1, count = 8; !patterns.empty() && from < 65536; from += count, count *= 2) {
        std::vector<std::string> names;
        for (int r = from; r < from + count; ++r)
            for (const auto& p : patterns)
                names.push_back(p.substr(0, p.find("{}")) + std::to_string(r) + p.substr(p.find("{}") + 2));
        const auto sizes = add(names);
        if (std::any_of(sizes.begin(), sizes.end(), [](const auto& s) { return !s; })) break;
    }
    return out;
}

bool hasRankFiles(const std::string& dir)
{
    const auto entries = io::canList(dir) ? entriesOf(dir) : entriesByName(dir);
    if (io::isRemotePath(dir) && io::canList(dir)) {
        // A store's rank files are sniffed below and opened next: all of them in one wave now,
        // with the `latest` of the folder above (which says whether this tag is the latest).
        std::vector<std::pair<std::string, uint64_t>> open;
        for (const auto& e : entries)
            if (!e.folder && e.name.ends_with("_states.pt"))
                open.push_back({io::childPath(dir, e.name), e.size});
        const std::string above = io::childPath(io::parentPath(dir), "latest");
        if (!open.empty() && io::parentPath(dir) != dir && io::pathKind(above) == io::PathKind::File)
            open.push_back({above, 0});
        io::MappedFile::prefetch(open);
    }
    for (const auto& e : entries) {
        const std::string& n = e.name;
        if (!e.folder && n.size() > 3 && n.substr(n.size() - 3) == ".pt" &&
            (n.find("_model_states") != std::string::npos || n.find("optim_states") != std::string::npos)) {
            // The name says where to look; the content decides: a torch.save zip or legacy pickle.
            const std::string head = io::readHead(io::childPath(dir, n), 2);
            if (head == "PK" || (head.size() == 2 && uint8_t(head[0]) == 0x80)) return true;
        }
    }
    return false;
}

std::string readLatest(const std::string& root)
{
    const std::string path = io::childPath(root, "latest");
    // Anything there is read, so that a FIFO or device named `latest` is refused, not skipped.
    if (io::canList(root) ? io::pathKind(path) == io::PathKind::Missing : !io::probeFiles({path})[0])
        return {};
    // DeepSpeed writes the tag name and nothing else; anything longer is not a `latest` file.
    std::string s = io::readSmallFile(path, 4096);
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    while (!s.empty() && std::isspace(uint8_t(s.front())))
        s.erase(s.begin());
    return s;
}

std::string dtypeOfConfig(const nlohmann::ordered_json& cfg)
{
    auto enabled = [&](const char* k) {
        return cfg.is_object() && cfg.contains(k) && cfg[k].is_object() && cfg[k].value("enabled", false);
    };
    return enabled("bf16") ? "bf16" : enabled("fp16") ? "fp16" : "fp32";
}

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

} // namespace

RankFile classifyTagFile(const std::string& path)
{
    return classify(io::parentPath(path), {io::fileName(path), false, io::fileSize(path)});
}

RankFile classifyTagFileName(const std::string& name)
{
    return classifyName(name);
}

std::vector<std::string> deepSpeedNamesAsked()
{
    std::vector<std::string> names = kRank0Names;
    names.push_back("latest");
    return names;
}

bool looksLikeDeepSpeed(const std::string& path)
{
    try {
        if (io::pathKind(path) != io::PathKind::Folder) return false;
    } catch (const Error&) {
        return false; // match() never throws; opening says what is wrong
    }
    if (hasRankFiles(path)) return true;
    try {
        const std::string latest = io::childPath(path, "latest");
        if (io::canList(path) ? io::pathKind(latest) != io::PathKind::Missing
                              : bool(io::probeFiles({latest})[0]))
            return true;
    } catch (const Error&) {
    }
    for (const auto& e : entriesOf(path))
        if (e.folder && hasRankFiles(io::childPath(path, e.name))) return true;
    return false;
}

namespace {

// What the tag needs from a model file other than the first: ZeRO-3 saves one per rank, each
// with a placeholder tensor per parameter, so keeping them all parsed would cost memory in
// proportion to parameters x ranks. They are parsed one at a time, digested, and let go (the
// FileSet keeps them only within its budget).
struct ModelDigest
{
    RankFile info;
    std::optional<int64_t> globalSteps;
    struct Fragment
    {
        torch::DType dtype;
        uint64_t numel;
    };
    std::map<std::string, Fragment> frozenFragments; // frozen_param_fragments/<name>
};

// The rank files of a tag, opened (parsed), in name order: the first model file whole, every
// model file digested (the first one included), the optimizer files whole.
struct OpenTag
{
    // The first model file (it speaks for the tag), then the other mp_rank_MM files (one per
    // pipeline stage or tensor-parallel rank, small): ZeRO-3's per-rank files are only digested.
    std::vector<OpenFile> models;
    std::vector<ModelDigest> digests;
    std::vector<OpenFile> optims;
    std::vector<RankFile> layers;  // pipeline layer_LL files, parsed when consolidated
    std::vector<OpenFile> experts; // MoE layer_L_expert_E files (one expert's tensors each, small)
};

// Optimizer files of data-parallel ranks 0..W-1 (mp rank 0), by rank.
using FilesByRank = std::vector<const OpenFile*>;

// Step 1: what the tag folder holds, classified by file name.
std::vector<RankFile> listTagFolder(const std::string& tagDir)
{
    std::vector<RankFile> files;
    for (const auto& e : io::canList(tagDir) ? io::listFolder(tagDir) : entriesByName(tagDir))
        if (!e.folder) files.push_back(classify(tagDir, e));
    std::sort(files.begin(), files.end(),
              [](const RankFile& a, const RankFile& b) { return naturalLess(a.name, b.name); });
    return files;
}

// A rank file, parsed through the job's FileSet (once, however many operations read it).
OpenFile openRankFile(const RankFile& f, FileSet& files)
{
    auto owner = files.get(f.path);
    if (!owner->torch())
        fail("not a torch.save file (DeepSpeed writes its rank files with torch.save)", f.path);
    const torch::TorchFile* file = owner->torch();
    return {f, std::move(owner), file};
}

ModelDigest digestModelFile(const OpenFile& m)
{
    ModelDigest d;
    d.info = m.info;
    d.globalSteps = asInt(dictGet(m.file->root(), "global_steps"));
    static const std::string kFragments = "frozen_param_fragments/";
    for (const torch::Tensor& t : m.file->tensors())
        if (t.path.compare(0, kFragments.size(), kFragments) == 0)
            d.frozenFragments.emplace(t.path.substr(kFragments.size()),
                                      ModelDigest::Fragment{t.dtype, t.numel()});
    return d;
}

// Step 2: parse the model and optimizer files; other files become warnings.
OpenTag openRankFiles(Tag& tag, FileSet& files)
{
    std::vector<std::string> parsed;
    for (const auto& f : tag.files)
        if (f.role == FileRole::ModelStates || f.role == FileRole::OptimStates || f.role == FileRole::Expert)
            if (!files.find(f.path)) parsed.push_back(f.path);
    io::ZipReader::warmRemote(parsed); // a remote tag's files fetched side by side, then parsed in order
    OpenTag open;
    for (const auto& f : tag.files) {
        if (f.role == FileRole::ModelStates) {
            OpenFile m = openRankFile(f, files);
            open.digests.push_back(digestModelFile(m));
            if (open.models.empty() || f.dpRank < 0) open.models.push_back(std::move(m));
        } else if (f.role == FileRole::OptimStates)
            open.optims.push_back(openRankFile(f, files));
        else if (f.role == FileRole::Layer)
            open.layers.push_back(f);
        else if (f.role == FileRole::Expert)
            open.experts.push_back(openRankFile(f, files));
        else if (f.role == FileRole::ExpertOptim)
            tag.warnings.push_back(
                f.name + ": " + roleName(f.role) +
                " file (written by DeepSpeed without ZeRO: its optimizer state is not read)");
        else if (f.name.size() < 3 || f.name.substr(f.name.size() - 3) != ".pt")
            continue;
        else
            tag.warnings.push_back(f.name + ": not a file name DeepSpeed writes");
    }
    if (open.models.empty()) fail("no *_model_states.pt file in the tag folder", tag.dir);
    files.remember(open.models.front().info.path, open.models.front().owner);
    return open;
}

// Step 3: configuration, versions and counters, from the first model file (it speaks for the
// tag, as in zero_to_fp32); keys DeepSpeed does not own become the client state.
void readModelFacts(Tag& tag, const OpenFile& m0)
{
    const Value* root = m0.file->root();
    if (!root || root->kind != Kind::Dict) fail("model states file does not hold a dict", m0.info.path);
    static const std::set<std::string> kDeepSpeedKeys = {"module",
                                                         "buffer_names",
                                                         "optimizer",
                                                         "param_shapes",
                                                         "frozen_param_shapes",
                                                         "shared_params",
                                                         "frozen_param_fragments",
                                                         "lr_scheduler",
                                                         "data_sampler",
                                                         "random_ltd",
                                                         "sparse_tensor_module_names",
                                                         "skipped_steps",
                                                         "global_steps",
                                                         "global_samples",
                                                         "dp_world_size",
                                                         "mp_world_size",
                                                         "ds_config",
                                                         "ds_version",
                                                         "checkpoint_parallel_dimensions",
                                                         "num_experts",
                                                         "universal_checkpoint_info"};
    tag.clientState = nlohmann::ordered_json::object();
    for (const auto& [k, v] : root->entries)
        if (k && k->kind == Kind::Str && !kDeepSpeedKeys.count(k->text))
            tag.clientState[k->text] = torch::pickleToJson(v);
    tag.config = torch::pickleToJson(dictGet(root, "ds_config"));
    tag.lrScheduler = torch::pickleToJson(dictGet(root, "lr_scheduler"));
    tag.dsVersion = asString(dictGet(root, "ds_version")).value_or("");
    tag.globalSteps = asInt(dictGet(root, "global_steps")).value_or(-1);
    tag.globalSamples = asInt(dictGet(root, "global_samples")).value_or(-1);
    tag.skippedSteps = asInt(dictGet(root, "skipped_steps")).value_or(-1);
    tag.mpWorldSize = int(asInt(dictGet(root, "mp_world_size")).value_or(1));
    tag.dtype = dtypeOfConfig(tag.config);
}

// Step 4: every model file was written by the same save (same global step). A save without
// the key (an older or edited one) has none in every file, and that agrees too.
void checkModelFilesAgree(const OpenTag& open)
{
    const ModelDigest& m0 = open.digests.front();
    auto text = [](std::optional<int64_t> s) { return s ? std::to_string(*s) : std::string("(none)"); };
    for (const auto& m : open.digests)
        if (m.globalSteps != m0.globalSteps)
            fail("model states file is from step " + text(m.globalSteps) + ", " + m0.info.name +
                     " from step " + text(m0.globalSteps) + ": the tag mixes files from different saves",
                 m.info.path);
}

// Step 5: which optimizer saved the tag (ZeRO stage or BF16_Optimizer) and over how many ranks.
void readOptimizerKind(Tag& tag, const OpenFile& o0)
{
    const Value* osd0 = dictGet(o0.file->root(), "optimizer_state_dict");
    if (!osd0) fail("optimizer states file has no 'optimizer_state_dict'", o0.info.path);
    if (auto z = asInt(dictGet(osd0, "zero_stage"))) {
        tag.optimizer = "zero";
        tag.zeroStage = int(*z);
    } else if (dictGet(osd0, "single_partition_of_fp32_groups")) {
        tag.optimizer = "bf16_optimizer"; // BF16_Optimizer: ZeRO-1 layout, padded partitions
        tag.zeroStage = 1;
    } else {
        fail("optimizer states file is neither a ZeRO nor a BF16_Optimizer checkpoint", o0.info.path);
    }
    const Value* pc = dictGet(osd0, "partition_count");
    if (auto n = asInt(pc))
        tag.worldSize = int(*n);
    else if (auto l = asInts(pc); l && !l->empty())
        tag.worldSize = int(*std::max_element(l->begin(), l->end()));
    else
        fail("optimizer states file has no partition_count", o0.info.path);
    if (tag.worldSize <= 0 || tag.worldSize > 1 << 20)
        fail("implausible partition_count " + std::to_string(tag.worldSize), o0.info.path);
}

// Step 6: exactly one optimizer file per rank 0..W-1 (of mp rank `mp`: a pipeline's stage).
FilesByRank optimizerFilesByRank(const Tag& tag, const OpenTag& open, int mp = 0)
{
    FilesByRank byRank(size_t(tag.worldSize), nullptr);
    for (const auto& o : open.optims) {
        if (o.info.mpRank != mp) continue;
        if (o.info.dpRank < 0 || o.info.dpRank >= tag.worldSize)
            fail("optimizer file for rank " + std::to_string(o.info.dpRank) + " but partition_count is " +
                     std::to_string(tag.worldSize) + " (a stale file from an older save?)",
                 o.info.path);
        if (byRank[size_t(o.info.dpRank)])
            fail("two optimizer files for rank " + std::to_string(o.info.dpRank), o.info.path);
        byRank[size_t(o.info.dpRank)] = &o;
    }
    for (int r = 0; r < tag.worldSize; ++r)
        if (!byRank[size_t(r)])
            fail("optimizer states of rank " + std::to_string(r) + " are missing (partition_count is " +
                     std::to_string(tag.worldSize) + "): the save did not complete on every rank",
                 tag.dir);
    return byRank;
}

// The optimizer's step as rank `o` saved it (an int, or the raw bytes of a one-element tensor),
// "" when there is none.
std::string optimizerStep(const Tag& tag, const OpenFile& o)
{
    const Value* inner = dictGet(o.file->root(), "optimizer_state_dict");
    const Value* st = tag.zeroStage == 3
                          ? dictGet(dictGet(dictGet(inner, "optimizer_state_dict"), "state"), "0")
                          : dictGet(dictGet(dictGet(inner, "base_optimizer_state"), "state"), "0");
    std::string step;
    if (const Value* s = dictGet(st, "step")) {
        if (auto i = asInt(s))
            step = std::to_string(*i);
        else {
            const std::string p = tag.zeroStage == 3
                                      ? "optimizer_state_dict/optimizer_state_dict/state/0/step"
                                      : "optimizer_state_dict/base_optimizer_state/state/0/step";
            if (const torch::Tensor* t = o.file->tensor(p); t && t->numel() == 1 && t->storage >= 0) {
                const auto blob = o.file->storageBytes(t->storage);
                const uint32_t es = torch::elementSize(t->dtype);
                step.assign(reinterpret_cast<const char*>(blob.bytes.data()) + t->storageOffset * es, es);
            }
        }
    }
    return step;
}

// Step 7: files of one save agree on the optimizer's step; a copied-in rank from another tag
// does not.
void checkOptimizerFilesAgree(const Tag& tag, const FilesByRank& byRank)
{
    const std::string first = optimizerStep(tag, *byRank[0]);
    for (int r = 1; r < tag.worldSize; ++r)
        if (optimizerStep(tag, *byRank[size_t(r)]) != first)
            fail("optimizer step differs from rank 0's: the tag mixes files from different saves",
                 byRank[size_t(r)]->info.path);
}

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
        for (uint64_t r = 0; r < W; ++r) {
            const uint64_t lo = std::max(offset, start[r]), hi = std::min(offset + n, start[r] + saved[r]);
            if (lo >= hi) continue;
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
                if (o.file->tensor(sp)) s.states.push_back({st, {source(o, sp, lo - start[r], hi - lo)}});
            }
            p.slices.push_back(std::move(s));
        }
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
    if ((offset + align - 1) / align != (total + align - 1) / align && tag.optimizer == "zero")
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
                            auto it = std::find_if(s.states.begin(), s.states.end(),
                                                   [&](const auto& x) { return x.first == st; });
                            if (it == s.states.end()) it = s.states.insert(s.states.end(), {st, {}});
                            it->second.push_back(source(o, sp, want - fsr[sg], take));
                        }
                        want += take, left -= take, ++sg;
                    }
                }
                p.slices.push_back(std::move(s));
            }
            O += per;
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
    if (tag.zeroStage <= 2) return flatGroupParameters(tag, paramShapes, m0, byRank);
    if (tag.zeroStage == 3) return subGroupParameters(tag, paramShapes, m0, byRank);
    fail("unknown ZeRO stage " + std::to_string(tag.zeroStage), byRank.front()->info.path);
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
            if (tag.zeroStage == 3) {
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
                    s.master.push_back({m.info.path, path, 0, s.length, it->second.dtype, {}, {}});
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
    } else if (tag.zeroStage == 1 && module) {
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

// Pipeline (PipelineModule) and MoE tags: one consolidated model out of files that each hold a
// part of it.

// A trainable parameter's slices labelled with global ranks (a pipeline stage's dp rank r is
// global rank stage * dp + r), so the sharding map gives every rank its own lane.
void relabelRanks(Parameter& p, int first)
{
    for (auto& s : p.slices)
        s.rank += first;
}

// The parameters of the stage's ZeRO partitions, named by its param_shapes ("4.weight").
std::vector<Parameter> stageParameters(Tag& tag, const OpenTag& open, const OpenFile& model, int stage)
{
    const OpenFile* first = nullptr;
    for (const auto& o : open.optims)
        if (o.info.mpRank == stage && (!first || o.info.dpRank < first->info.dpRank)) first = &o;
    if (!first) fail("no optimizer states files of pipeline stage " + std::to_string(stage), model.info.path);
    Tag kind = tag; // each stage's optimizer files say its stage and partition count; all must agree
    readOptimizerKind(kind, *first);
    if (stage == 0)
        tag.optimizer = kind.optimizer, tag.zeroStage = kind.zeroStage, tag.worldSize = kind.worldSize;
    else if (kind.zeroStage != tag.zeroStage || kind.worldSize != tag.worldSize)
        fail("ZeRO stage or partition count differs from pipeline stage 0's", first->info.path);
    if (tag.zeroStage > 2) fail("a pipeline with ZeRO stage 3 is not consolidated", first->info.path);
    const FilesByRank byRank = optimizerFilesByRank(tag, open, stage);
    checkOptimizerFilesAgree(tag, byRank);
    std::vector<Parameter> params = trainableParameters(tag, model, byRank);
    for (auto& p : params)
        relabelRanks(p, stage * tag.worldSize);
    return params;
}

// The global layer index of a pipeline layer file (`layer_04-model_states.pt` -> 4).
int layerIndex(const RankFile& f)
{
    static const std::regex layer(R"(layer_(\d+)-model_.*)");
    std::smatch m;
    if (!std::regex_match(f.name, m, layer)) fail("not a pipeline layer file name", f.path);
    return std::stoi(m[1]);
}

// The prefix the module gives the keys of a layer file: "LL." for a plain layer, or
// "tied_modules.<key>." for a TiedLayerSpec layer, whose shared module the state dict names by
// its key (found as the one tied module whose trained names have this file's keys and shapes).
std::string layerPrefix(const OpenFile& layer, int index,
                        const std::map<std::string, const Parameter*>& trained)
{
    const std::string plain = std::to_string(index) + ".";
    std::set<std::string> tied;
    for (const auto& t : layer.file->tensors()) {
        if (trained.count(plain + t.path)) return plain;
        for (const auto& [name, p] : trained)
            if (name.rfind("tied_modules.", 0) == 0 && name.size() > t.path.size() + 1 &&
                name.compare(name.size() - t.path.size() - 1, std::string::npos, "." + t.path) == 0 &&
                p->shape == t.shape)
                tied.insert(name.substr(0, name.size() - t.path.size()));
    }
    if (tied.size() > 1) fail("which tied module this layer file holds is not certain", layer.info.path);
    return tied.empty() ? plain : *tied.begin();
}

// Each stage's layers. What the save names per stage are its numbered layers' parameters; a
// stage's layers are contiguous, so it holds from its first numbered layer (the first stage from
// layer 0) up to the layer before the next stage's first, the last stage up to the last layer
// file. That counts the tied modules (named by key, not number) and the layers without
// parameters that sit between numbered ones, which the names alone left out ("layers 1-1" for
// a stage holding the tied embedding, a Linear and a GELU).
void addPipelineStages(Tag& tag, const std::vector<const OpenFile*>& stages,
                       const std::vector<std::vector<std::string>>& stageNames)
{
    std::vector<std::set<int>> numbered(stages.size());
    for (size_t s = 0; s < stages.size(); ++s)
        for (const auto& n : stageNames[s])
            if (const LayerName l = splitLayer(n); l.isLayer && l.stem.empty())
                numbered[s].insert(int(l.number));
    int lastFile = -1;
    for (const RankFile& f : tag.files)
        if (f.role == FileRole::Layer) lastFile = std::max(lastFile, layerIndex(f));
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (size_t s = 0; s < stages.size(); ++s) {
        std::set<int> layers = numbered[s];
        if (!layers.empty()) {
            if (s == 0) layers.insert(0);
            if (s + 1 < stages.size() && !numbered[s + 1].empty())
                layers.insert(*numbered[s + 1].begin() - 1);
            else if (s + 1 == stages.size() && lastFile > *layers.rbegin())
                layers.insert(lastFile);
        }
        nlohmann::ordered_json st;
        st["stage"] = s;
        st["file"] = stages[s]->info.name;
        st["first_rank"] = s * size_t(tag.worldSize);
        st["ranks"] = tag.worldSize;
        st["layers"] = layers.empty() ? nlohmann::ordered_json::array()
                                      : nlohmann::ordered_json::array({*layers.begin(), *layers.rbegin()});
        list.push_back(std::move(st));
    }
    tag.badges["pipeline_stages"] = std::move(list);
}

// Pipeline: `module` is None in every mp_rank_MM file (one per stage, MM = stage without tensor
// parallelism); each stage's ZeRO partitions hold its trained parameters, named by the stage's
// param_shapes with the global layer index ("4.weight"); frozen parameters and buffers are only
// in the layer_LL files (each layer's own state dict, relative names).
void openPipeline(Tag& tag, const OpenTag& open, FileSet& files)
{
    const OpenFile& m0 = open.models.front();
    const Value* dims = dictGet(m0.file->root(), "checkpoint_parallel_dimensions");
    const bool tp =
        asInt(dictGet(dims, "tp_degree")).value_or(1) > 1 ||
        std::any_of(open.layers.begin(), open.layers.end(), [](const auto& f) { return f.mpRank != 0; });
    if (tp) {
        tag.notExportable = m0.info.name +
                            ": a pipeline with tensor parallelism (tp_degree > 1): its layers are "
                            "split over tensor-parallel ranks, which this version does not join";
        return;
    }
    std::vector<const OpenFile*> stages(size_t(std::max(tag.mpWorldSize, 1)), nullptr);
    for (const auto& m : open.models) {
        if (m.info.dpRank >= 0 || m.info.mpRank < 0 || m.info.mpRank >= int(stages.size()))
            fail("model states file of no pipeline stage (mp_world_size is " +
                     std::to_string(tag.mpWorldSize) + ")",
                 m.info.path);
        stages[size_t(m.info.mpRank)] = &m;
    }
    for (size_t s = 0; s < stages.size(); ++s)
        if (!stages[s])
            fail("the model states file of pipeline stage " + std::to_string(s) + " is missing", tag.dir);
    std::vector<Parameter> trainable;
    std::set<std::string> seen;
    std::vector<std::vector<std::string>> stageNames(stages.size());
    for (size_t s = 0; s < stages.size(); ++s) {
        for (auto& p : stageParameters(tag, open, *stages[s], int(s))) {
            stageNames[s].push_back(p.name);
            // A tied module (tied_modules.<key>) is trained on every stage that uses it, each
            // holding an equal master; the first stage's is taken.
            if (seen.insert(p.name).second) trainable.push_back(std::move(p));
        }
    }
    std::map<std::string, const Parameter*> trained;
    for (const auto& p : trainable)
        trained[p.name] = &p;
    std::set<std::string> buffers;
    for (const OpenFile* m : stages)
        if (const Value* names = dictGet(m->file->root(), "buffer_names"))
            for (const Value* b : names->items)
                buffers.insert(asString(b).value_or(""));
    // zero_to_fp32's order: buffers, frozen parameters, trainable ones
    std::vector<Parameter> kept[2]; // buffers, frozen
    for (const RankFile& f : open.layers) {
        const OpenFile layer = openRankFile(f, files);
        const std::string prefix = layerPrefix(layer, layerIndex(f), trained);
        for (const auto& t : layer.file->tensors()) {
            const std::string name = prefix + t.path;
            if (trained.count(name)) continue;
            const bool buffer = buffers.count(name) > 0;
            kept[buffer ? 0 : 1].push_back(
                wholeTensor(layer, name, t.path, buffer ? Parameter::Kind::Buffer : Parameter::Kind::Frozen));
        }
    }
    for (auto& group : kept)
        for (auto& p : group)
            tag.params.push_back(std::move(p));
    addPipelineStages(tag, stages, stageNames);
    for (auto& p : trainable)
        tag.params.push_back(std::move(p));
}

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
    if (tag.zeroStage > 2) fail("an MoE model with ZeRO stage 3 is not consolidated", o0.info.path);
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
    tag.badges["experts"] = {{"num_experts", torch::pickleToJson(dictGet(m0.file->root(), "num_experts"))},
                             {"expert_files", experts.size()},
                             {"by_rank", ranks}};
    return trainable;
}

} // namespace

Tag openDeepSpeedTag(const std::string& tagDir, const std::string& tagName, bool latest, FileSet* fileSet)
{
    FileSet local;
    std::vector<RankFile> files = listTagFolder(tagDir);
    std::vector<std::pair<std::string, uint64_t>> hint;
    for (const RankFile& f : files)
        hint.push_back({f.path, f.size});
    io::MappedFile::prefetch(hint); // every rank file's head and directory in one wave
    return openDeepSpeedTagFiles(std::move(files), tagDir, tagName, latest, fileSet ? *fileSet : local);
}

Tag openDeepSpeedTagFiles(std::vector<RankFile> rankFiles, const std::string& tagDir,
                          const std::string& tagName, bool latest, FileSet& files)
{
    Tag tag;
    tag.name = tagName;
    tag.dir = tagDir;
    tag.latest = latest;
    // zero_to_fp32 writes every floating tensor as float32, buffers and frozen ones included.
    tag.exportDtype = torch::DType::Float32;
    std::sort(rankFiles.begin(), rankFiles.end(),
              [](const RankFile& a, const RankFile& b) { return naturalLess(a.name, b.name); });
    tag.files = std::move(rankFiles);
    const OpenTag open = openRankFiles(tag, files);
    const OpenFile& m0 = open.models.front();
    readModelFacts(tag, m0);
    checkModelFilesAgree(open);

    const Value* module = dictGet(m0.file->root(), "module");
    if (!open.layers.empty() && (!module || module->kind == Kind::None)) { // a PipelineModule's save
        if (open.optims.empty()) {
            tag.zeroStage = 0;
            tag.optimizer = "none";
            tag.notExportable = m0.info.name + ": a pipeline saved without ZeRO optimizer files, which this "
                                               "version does not consolidate";
            return tag;
        }
        tag.sharding = Sharding::FlatPartitions;
        openPipeline(tag, open, files);
        return tag;
    }
    if (tag.mpWorldSize > 1)
        tag.warnings.push_back("model-parallel world size " + std::to_string(tag.mpWorldSize) +
                               ": only mp rank 0 is consolidated");
    if (open.optims.empty()) { // ZeRO-0 or no ZeRO: the whole model is in the model file
        openStageZero(tag, m0);
        return tag;
    }
    readOptimizerKind(tag, open.optims.front());
    // ZeRO-3 splits each parameter over the ranks; ZeRO-1/2 and BF16_Optimizer split flat groups.
    tag.sharding = tag.zeroStage == 3 ? Sharding::ParameterPartitions : Sharding::FlatPartitions;
    const FilesByRank byRank = optimizerFilesByRank(tag, open);
    checkOptimizerFilesAgree(tag, byRank);
    std::vector<Parameter> trainable = open.experts.empty() ? trainableParameters(tag, m0, byRank)
                                                            : moeParameters(tag, open, byRank, open.experts);
    // zero_to_fp32's order: buffers, frozen parameters, trainable ones, tied aliases
    addBuffers(tag, m0);
    addFrozen(tag, open, trainable);
    for (auto& p : trainable)
        tag.params.push_back(std::move(p));
    addTiedAliases(tag, m0);
    return tag;
}

TagFolders findDeepSpeedTags(const std::string& path)
{
    TagFolders f;
    if (io::pathKind(path) != io::PathKind::Folder) throw Error("not a folder", path);
    const bool tagFolder = hasRankFiles(path);
    if (tagFolder) { // a tag folder itself
        f.root = io::parentPath(path);
        f.tags.push_back({io::fileName(path), path});
    } else if (!io::canList(path)) { // the one tag `latest` names is all that can be found
        f.root = path;
        const std::string latest = readLatest(path);
        // Written with its '/': over HTTP that is what says "folder".
        const std::string dir = io::childFolder(path, latest);
        if (!latest.empty() && latest.find('/') == std::string::npos && hasRankFiles(dir))
            f.tags.push_back({latest, dir});
    } else {
        f.root = path;
        for (const auto& e : io::listFolder(path))
            if (e.folder && hasRankFiles(io::childPath(path, e.name)))
                f.tags.push_back({e.name, io::childPath(path, e.name)});
    }
    std::sort(f.tags.begin(), f.tags.end(),
              [](const auto& a, const auto& b) { return naturalLess(a.first, b.first); });
    if (f.tags.empty()) throw Error("no DeepSpeed tag folder (with *_model_states.pt files) found", path);
    f.latest = readLatest(f.root.empty() ? std::string(".") : f.root);
    // Opened on its own, a tag is the latest when the parent's `latest` names it; that `latest`
    // naming one of its siblings is no news about this tag.
    if (tagFolder && f.latest != f.tags.front().first) f.latest.clear();
    return f;
}

Checkpoint openDeepSpeed(const std::string& path)
{
    Checkpoint c;
    c.family = "deepspeed";
    const TagFolders found = findDeepSpeedTags(path);
    c.root = found.root;
    const std::string& latest = found.latest;
    const auto& tagDirs = found.tags;
    if (!latest.empty() &&
        std::none_of(tagDirs.begin(), tagDirs.end(), [&](const auto& t) { return t.first == latest; }))
        c.warnings.push_back("'latest' names tag '" + latest + "', which does not exist");
    for (const auto& [name, dir] : tagDirs) {
        try {
            c.tags.push_back(openDeepSpeedTag(dir, name, name == latest));
        } catch (const Error& e) {
            Tag t;
            t.name = name;
            t.dir = dir;
            t.latest = name == latest;
            t.unreadable = e.what();
            t.warnings.push_back(std::string("cannot be read: ") + e.what());
            c.warnings.push_back("tag " + name + ": " + e.what());
            c.tags.push_back(std::move(t));
        }
    }
    return c;
}

} // namespace ckpt::layout
