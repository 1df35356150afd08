// DeepSpeed ZeRO behind the family interface: the parsing itself is in deepspeed.cpp.
#include "layout/deepspeed.h"
#include "layout/deepspeed/internal.h"
#include "layout/families.h"
#include "layout/universal.h"
#include "layout/words.h"

namespace ckpt::layout {

namespace {

class DeepSpeedFamily final : public Family
{
public:
    std::string_view id() const override { return "deepspeed"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a DeepSpeed checkpoint (a `latest` file or tag folders holding *_model_states.pt / "
               "*_optim_states.pt) or a DeepSpeed tag folder (those files directly)";
    }
    std::vector<std::string> namesAsked() const override { return deepSpeedNamesAsked(); }
    bool match(const std::string& path) const override { return looksLikeDeepSpeed(path); }
    TagList listTags(const std::string& path) const override { return ds::findDeepSpeedTags(path); }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, dir] = list.tags.at(index);
        // A Universal folder converted into the run (`<run>/<tag>_universal`, as DeepSpeed's own
        // examples place it) holds a copied model file too, which would read as a ZeRO-0 tag of
        // the module's weights: it is the Universal family's, and opened as such.
        if (isUniversalFolder(dir)) return universalFamily().openTag(list, index, files);
        Tag tag = openDeepSpeedTag(dir, name, name == list.latest, &files);
        // Only here, not in openDeepSpeedTag: Composer's per-rank tarballs are DeepSpeed tags too,
        // but their files are archive members, which the conversion does not read.
        // Pipeline stages and MoE expert groups are not what the conversion reads: it would take
        // mp rank 0 alone, or the experts' local names.
        const DeepSpeedTag& ds = *tag.deepspeed;
        tag.convertsToUniversal = ds.zeroPartitions() && ds.pipelineStages.empty() && !ds.experts;
        if (tag.convertsToUniversal)
            tag.frozenInMemory =
                ds.zeroStage == 1 ? Tag::FrozenInMemory::Absent : Tag::FrozenInMemory::AsStored;
        tag.facts = deepSpeedFacts(tag);
        return tag;
    }
};

} // namespace

std::vector<Fact> deepSpeedFacts(const Tag& tag)
{
    if (!tag.unreadable.empty() || !tag.deepspeed) return {};
    const DeepSpeedTag& ds = *tag.deepspeed;
    static const char* const kStages[] = {
        QT_TRANSLATE_NOOP("ckpt::layout", "0 (disabled: plain data parallelism)"),
        QT_TRANSLATE_NOOP("ckpt::layout", "1 (optimizer states partitioned)"),
        QT_TRANSLATE_NOOP("ckpt::layout", "2 (optimizer states and gradients partitioned)"),
        QT_TRANSLATE_NOOP("ckpt::layout", "3 (optimizer states, gradients and parameters partitioned)")};
    const auto known = [](int64_t n) {
        return n >= 0 ? std::to_string(n) : std::string(QT_TRANSLATE_NOOP("ckpt::layout", "unknown"));
    };
    std::vector<Fact> f;
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "ZeRO stage"), ds.zeroStage >= 0 && ds.zeroStage <= 3
                                                                      ? kStages[ds.zeroStage]
                                                                      : std::to_string(ds.zeroStage)});
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "optimizer"),
                 ds.optimizer == "bf16_optimizer"
                     ? QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed BF16_Optimizer (ZeRO-1 layout)")
                 : ds.optimizer == "zero" ? QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed ZeRO optimizer")
                 : ds.optimizer == "fp16_unfused"
                     ? "DeepSpeed FP16_UnfusedOptimizer (fp32 masters in the model file)"
                 : ds.optimizer == "fp16_fused" ? "DeepSpeed FP16_Optimizer (fp32 masters in the model file)"
                 : ds.optimizer == "torch"      ? "torch optimizer (state in the model file)"
                                                : QT_TRANSLATE_NOOP("ckpt::layout", "none saved")});
    if (tag.worldSize > 0)
        f.push_back(
            {QT_TRANSLATE_NOOP("ckpt::layout", "data-parallel ranks"), std::to_string(tag.worldSize)});
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "model-parallel ranks"), std::to_string(tag.mpWorldSize)});
    if (!ds.pipelineStages.empty()) {
        // "2: layers 0-2 on ranks 0-1, layers 4-6 on ranks 2-3"
        std::string text = std::to_string(ds.pipelineStages.size()) + ":";
        for (const PipelineStage& s : ds.pipelineStages) {
            text += std::string(&s == &ds.pipelineStages.front() ? " " : ", ") + "layers " +
                    (s.layers ? std::to_string(s.layers->first) + "-" + std::to_string(s.layers->second)
                              : std::string("(none numbered)")) +
                    " on rank" +
                    (s.ranks > 1 ? "s " + std::to_string(s.firstRank) + "-" +
                                       std::to_string(s.firstRank + s.ranks - 1)
                                 : " " + std::to_string(s.firstRank));
        }
        f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "pipeline stages"), text});
    }
    if (ds.experts)
        f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "experts"),
                     ds.experts->numExperts.dump() + " (MoE layers' expert counts), " +
                         std::to_string(ds.experts->expertFiles) + " expert files"});
    if (!tag.dtype.empty()) f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "dtype"), tag.dtype});
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed version"),
                 ds.version.empty() ? QT_TRANSLATE_NOOP("ckpt::layout", "unknown") : ds.version});
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "step / samples"),
                 known(tag.globalSteps) + " / " + known(tag.globalSamples)});
    if (tag.skippedSteps > 0)
        f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "skipped steps"), std::to_string(tag.skippedSteps)});
    return f;
}

const Family& deepSpeedFamily()
{
    static const DeepSpeedFamily f;
    return f;
}

} // namespace ckpt::layout
