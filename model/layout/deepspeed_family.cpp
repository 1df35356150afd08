// DeepSpeed ZeRO behind the family interface: the parsing itself is in deepspeed.cpp.
#include "layout/deepspeed.h"
#include "layout/families.h"

namespace ckpt::layout {

namespace {

class DeepSpeedFamily final : public Family
{
public:
    std::string_view id() const override { return "deepspeed"; }
    std::string_view displayName() const override { return "DeepSpeed checkpoint"; }
    std::string_view lookedFor() const override
    {
        return "a DeepSpeed checkpoint (a `latest` file or tag folders holding *_model_states.pt / "
               "*_optim_states.pt) or a DeepSpeed tag folder (those files directly)";
    }
    bool match(const std::string& path) const override { return looksLikeDeepSpeed(path); }
    TagList listTags(const std::string& path) const override
    {
        const TagFolders f = findDeepSpeedTags(path);
        return {f.root, f.latest, f.tags, {}, {}};
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, dir] = list.tags.at(index);
        Tag tag = openDeepSpeedTag(dir, name, name == list.latest, &files);
        // Only here, not in openDeepSpeedTag: Composer's per-rank tarballs are DeepSpeed tags too,
        // but their files are archive members, which the conversion does not read.
        const bool zero = tag.optimizer == "zero" || tag.optimizer == "bf16_optimizer";
        tag.convertsToUniversal = zero && tag.zeroStage >= 1 && tag.zeroStage <= 3;
        tag.facts = deepSpeedFacts(tag);
        return tag;
    }
};

} // namespace

std::vector<Fact> deepSpeedFacts(const Tag& tag)
{
    if (!tag.unreadable.empty()) return {};
    static const char* const kStages[] = {"0 (disabled: plain data parallelism)",
                                          "1 (optimizer states partitioned)",
                                          "2 (optimizer states and gradients partitioned)",
                                          "3 (optimizer states, gradients and parameters partitioned)"};
    const auto known = [](int64_t n) { return n >= 0 ? std::to_string(n) : std::string("unknown"); };
    std::vector<Fact> f;
    f.push_back({"ZeRO stage", tag.zeroStage >= 0 && tag.zeroStage <= 3 ? kStages[tag.zeroStage]
                                                                        : std::to_string(tag.zeroStage)});
    f.push_back({"optimizer", tag.optimizer == "bf16_optimizer" ? "DeepSpeed BF16_Optimizer (ZeRO-1 layout)"
                              : tag.optimizer == "zero"         ? "DeepSpeed ZeRO optimizer"
                                                                : "none saved"});
    if (tag.worldSize > 0) f.push_back({"data-parallel ranks", std::to_string(tag.worldSize)});
    f.push_back({"model-parallel ranks", std::to_string(tag.mpWorldSize)});
    if (!tag.dtype.empty()) f.push_back({"dtype", tag.dtype});
    f.push_back({"DeepSpeed version", tag.dsVersion.empty() ? "unknown" : tag.dsVersion});
    f.push_back({"step / samples", known(tag.globalSteps) + " / " + known(tag.globalSamples)});
    if (tag.skippedSteps > 0) f.push_back({"skipped steps", std::to_string(tag.skippedSteps)});
    return f;
}

const Family& deepSpeedFamily()
{
    static const DeepSpeedFamily f;
    return f;
}

} // namespace ckpt::layout
