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
        return tag;
    }
};

} // namespace

const Family& deepSpeedFamily()
{
    static const DeepSpeedFamily f;
    return f;
}

} // namespace ckpt::layout
