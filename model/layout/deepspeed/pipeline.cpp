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
        tag.deepspeed->optimizer = kind.deepspeed->optimizer,
        tag.deepspeed->zeroStage = kind.deepspeed->zeroStage, tag.worldSize = kind.worldSize;
    else if (kind.deepspeed->zeroStage != tag.deepspeed->zeroStage || kind.worldSize != tag.worldSize)
        fail("ZeRO stage or partition count differs from pipeline stage 0's", first->info.path);
    if (tag.deepspeed->zeroStage > 2)
        fail("a pipeline with ZeRO stage 3 is not consolidated", first->info.path);
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
    std::vector<PipelineStage> list;
    for (size_t s = 0; s < stages.size(); ++s) {
        std::set<int> layers = numbered[s];
        if (!layers.empty()) {
            if (s == 0) layers.insert(0);
            if (s + 1 < stages.size() && !numbered[s + 1].empty())
                layers.insert(*numbered[s + 1].begin() - 1);
            else if (s + 1 == stages.size() && lastFile > *layers.rbegin())
                layers.insert(lastFile);
        }
        PipelineStage st;
        st.stage = int(s);
        st.file = stages[s]->info.name;
        st.firstRank = int(s) * tag.worldSize;
        st.ranks = tag.worldSize;
        if (!layers.empty()) st.layers = std::pair{*layers.begin(), *layers.rbegin()};
        list.push_back(std::move(st));
    }
    tag.deepspeed->pipelineStages = std::move(list);
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

} // namespace ckpt::layout::ds
