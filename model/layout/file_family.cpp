// One torch.save (zip or legacy) or safetensors file: one tag whose parameters are the file's
// tensors in file order, each read in place with its dtype as stored.
#include "io/error.h"
#include "io/input_file.h"
#include "io/location.h"
#include "layout/families.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

namespace ckpt::layout {

namespace {

class SingleFileFamily final : public Family
{
public:
    std::string_view id() const override { return "file"; }
    std::string_view displayName() const override { return "file"; }
    std::string_view lookedFor() const override { return "a torch.save or safetensors file"; }
    bool singleFile() const override { return true; }
    bool match(const std::string& path) const override
    {
        // Any regular file (or object at a URL): its reader then says precisely what is wrong
        // with one that is not a torch.save or safetensors file, which helps more than "not
        // recognised".
        try {
            return io::pathKind(path) == io::PathKind::File;
        } catch (const Error&) {
            return false;
        }
    }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        l.root = path;
        l.tags.push_back({io::fileName(path), path});
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const std::string& path = list.tags.at(index).second;
        Tag tag;
        tag.name = list.tags[index].first;
        tag.dir = path;
        RankFile rf;
        rf.path = path;
        rf.name = tag.name;
        const auto file = files.get(path);
        rf.size = file->torch() ? file->torch()->fileSize() : file->safetensors()->file()->size();
        tag.files.push_back(rf);
        if (const torch::TorchFile* f = file->torch()) {
            tag.warnings = f->warnings();
            for (const torch::Tensor& t : f->tensors()) {
                Parameter p = wholeTensor(path, t.path, t.path, t.dtype, t.shape);
                if (t.aliasOf >= 0) {
                    p.tiedTo = f->tensors()[size_t(t.aliasOf)].path;
                    p.slices.clear();
                } else if (t.storage < 0 || !t.note.empty()) {
                    p.unreadable = t.note.empty() ? "no data" : t.note;
                    p.slices.clear();
                }
                tag.params.push_back(std::move(p));
            }
        } else {
            for (const auto& t : file->safetensors()->tensors())
                tag.params.push_back(wholeTensor(path, t.name, t.name, t.dtype, t.shape));
        }
        return tag;
    }
};

} // namespace

Parameter wholeTensor(const std::string& file, const std::string& tensorPath, std::string name,
                      torch::DType dtype, const std::vector<int64_t>& shape)
{
    Parameter p;
    p.name = std::move(name);
    if (p.name != tensorPath) p.path = tensorPath;
    p.dtype = dtype;
    p.shape = shape;
    RankSlice s;
    s.length = p.numel();
    s.master.push_back(Source::flat(file, tensorPath, 0, s.length, dtype));
    p.slices.push_back(std::move(s));
    return p;
}

const Family& singleFileFamily()
{
    static const SingleFileFamily f;
    return f;
}

} // namespace ckpt::layout
