// One DeepSpeed tag opened: its rank files listed, parsed and checked, then the model read by
// the layout the save used (pipeline, ZeRO-0, ZeRO 1-3, MoE), each in its own file beside this.
#include "layout/deepspeed.h"
#include "layout/deepspeed/internal.h"

#include "io/mapped_file.h"

#include <algorithm>

namespace ckpt::layout {

using namespace ds;

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
    Tag tag = ds::openDeepSpeedRank(std::move(rankFiles), tagDir, tagName, latest, files);
    const DeepSpeedTag& ds = *tag.deepspeed;
    if (ds.zeroPartitions() && ds.pipelineStages.empty() && !ds.experts && tag.unreadable.empty())
        stateTensorParallel(tag, files);
    return tag;
}

namespace ds {

Tag openDeepSpeedRank(std::vector<RankFile> rankFiles, const std::string& tagDir, const std::string& tagName,
                      bool latest, FileSet& files)
{
    Tag tag;
    tag.name = tagName;
    tag.dir = tagDir;
    tag.latest = latest;
    tag.deepspeed.emplace();
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
            tag.deepspeed->zeroStage = 0;
            tag.deepspeed->optimizer = "none";
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
    tag.sharding = tag.deepspeed->zeroStage == 3 ? Sharding::ParameterPartitions : Sharding::FlatPartitions;
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

} // namespace ds

} // namespace ckpt::layout
