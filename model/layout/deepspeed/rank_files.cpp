// A DeepSpeed tag's rank files opened and checked against one another: which are there, what
// the first model file says of the save (configuration, versions, counters), which optimizer
// wrote it over how many ranks, and that every file belongs to the same save.
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
    return Source::flat(f.info.path, path, offset, count, tensorAt(f, path).dtype);
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

std::string dtypeOfConfig(const nlohmann::ordered_json& cfg)
{
    auto enabled = [&](const char* k) {
        return cfg.is_object() && cfg.contains(k) && cfg[k].is_object() && cfg[k].value("enabled", false);
    };
    return enabled("bf16") ? "bf16" : enabled("fp16") ? "fp16" : "fp32";
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
    tag.deepspeed->version = asString(dictGet(root, "ds_version")).value_or("");
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
        tag.deepspeed->optimizer = "zero";
        tag.deepspeed->zeroStage = int(*z);
    } else if (dictGet(osd0, "single_partition_of_fp32_groups")) {
        tag.deepspeed->optimizer = "bf16_optimizer"; // BF16_Optimizer: ZeRO-1 layout, padded partitions
        tag.deepspeed->zeroStage = 1;
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
FilesByRank optimizerFilesByRank(const Tag& tag, const OpenTag& open, int mp)
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
    const Value* st = tag.deepspeed->zeroStage == 3
                          ? dictGet(dictGet(dictGet(inner, "optimizer_state_dict"), "state"), "0")
                          : dictGet(dictGet(dictGet(inner, "base_optimizer_state"), "state"), "0");
    std::string step;
    if (const Value* s = dictGet(st, "step")) {
        if (auto i = asInt(s))
            step = std::to_string(*i);
        else {
            const std::string p = tag.deepspeed->zeroStage == 3
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

} // namespace ckpt::layout::ds
