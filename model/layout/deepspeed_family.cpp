// DeepSpeed ZeRO behind the family interface: the parsing itself is in deepspeed.cpp.
#include "layout/deepspeed.h"
#include "layout/deepspeed/internal.h"
#include "layout/families.h"
#include "layout/universal.h"

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
        const bool zero = tag.optimizer == "zero" || tag.optimizer == "bf16_optimizer";
        // Pipeline stages and MoE expert groups are not what the conversion reads: it would take
        // mp rank 0 alone, or the experts' local names.
        const bool partsElsewhere = tag.badges.contains("pipeline_stages") || tag.badges.contains("experts");
        tag.convertsToUniversal = zero && tag.zeroStage >= 1 && tag.zeroStage <= 3 && !partsElsewhere;
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
                              : tag.optimizer == "fp16_unfused"
                                  ? "DeepSpeed FP16_UnfusedOptimizer (fp32 masters in the model file)"
                              : tag.optimizer == "fp16_fused"
                                  ? "DeepSpeed FP16_Optimizer (fp32 masters in the model file)"
                              : tag.optimizer == "torch" ? "torch optimizer (state in the model file)"
                                                         : "none saved"});
    if (tag.worldSize > 0) f.push_back({"data-parallel ranks", std::to_string(tag.worldSize)});
    f.push_back({"model-parallel ranks", std::to_string(tag.mpWorldSize)});
    if (tag.badges.contains("pipeline_stages")) {
        // "2: layers 0-2 on ranks 0-1, layers 4-6 on ranks 2-3"
        const auto& stages = tag.badges["pipeline_stages"];
        std::string text = std::to_string(stages.size()) + ":";
        for (const auto& s : stages) {
            const int first = s.value("first_rank", 0), n = s.value("ranks", 1);
            const auto& layers = s["layers"];
            text += std::string(&s == &stages.front() ? " " : ", ") + "layers " +
                    (layers.size() == 2
                         ? std::to_string(layers[0].get<int>()) + "-" + std::to_string(layers[1].get<int>())
                         : std::string("(none numbered)")) +
                    " on rank" +
                    (n > 1 ? "s " + std::to_string(first) + "-" + std::to_string(first + n - 1)
                           : " " + std::to_string(first));
        }
        f.push_back({"pipeline stages", text});
    }
    if (tag.badges.contains("experts")) {
        const auto& e = tag.badges["experts"];
        f.push_back({"experts", e["num_experts"].dump() + " (MoE layers' expert counts), " +
                                    std::to_string(e.value("expert_files", 0)) + " expert files"});
    }
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
