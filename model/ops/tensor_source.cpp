#include "ops/tensor_source.h"

#include "cast.h"
#include "io/error.h"
#include "layout/deepspeed.h"
#include "layout/recognize.h"
#include "ops/detect.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>
#include <memory>

namespace ckpt::ops {

std::optional<gpu::Scalar> scalarOf(torch::DType d)
{
    using D = torch::DType;
    switch (d) {
    case D::Float8_e4m3fn:
        return gpu::Scalar::F8E4M3FN;
    case D::Float8_e5m2:
        return gpu::Scalar::F8E5M2;
    case D::Float8_e4m3fnuz:
        return gpu::Scalar::F8E4M3FNUZ;
    case D::Float8_e5m2fnuz:
        return gpu::Scalar::F8E5M2FNUZ;
    case D::Float8_e8m0fnu:
        return gpu::Scalar::F8E8M0;
    case D::Int64:
        return gpu::Scalar::I64;
    case D::Int32:
        return gpu::Scalar::I32;
    case D::Int16:
        return gpu::Scalar::I16;
    case D::Int8:
        return gpu::Scalar::I8;
    case D::UInt8:
        return gpu::Scalar::U8;
    case D::UInt16:
        return gpu::Scalar::U16;
    case D::UInt32:
        return gpu::Scalar::U32;
    case D::UInt64:
        return gpu::Scalar::U64;
    case D::Bool:
        return gpu::Scalar::Bool;
    case torch::DType::Float64:
        return gpu::Scalar::F64;
    case torch::DType::Float32:
        return gpu::Scalar::F32;
    case torch::DType::Float16:
        return gpu::Scalar::F16;
    case torch::DType::BFloat16:
        return gpu::Scalar::BF16;
    default:
        return std::nullopt;
    }
}

namespace {

// A cast (by the backend) is only defined between the four common floating types.
bool castable(torch::DType d)
{
    using D = torch::DType;
    return d == D::Float64 || d == D::Float32 || d == D::Float16 || d == D::BFloat16;
}

// Keeps the rank files open (mapped) for the whole export; a file is parsed once.
class FileCache
{
public:
    const torch::TorchFile& get(const std::string& path)
    {
        auto& f = m_files[path];
        if (!f) f = torch::TorchFile::open(path);
        return *f;
    }

private:
    std::map<std::string, std::unique_ptr<torch::TorchFile>> m_files;
};

// Element sources concatenated; reads any element range of the result, casting on the way.
struct Reader
{
    struct Piece
    {
        const torch::TorchFile* file;
        const torch::Tensor* tensor;
        uint64_t offset, count;
    };
    std::vector<Piece> pieces;
    torch::DType from, to;
    gpu::ComputeBackend* backend = &gpu::cpuBackend();

    void fill(uint64_t byteOffset, uint64_t byteCount, uint8_t* dst) const
    {
        const uint32_t ts = torch::elementSize(to), fs = torch::elementSize(from);
        uint64_t first = byteOffset / ts, count = byteCount / ts;
        std::vector<uint8_t> staging;
        for (const Piece& p : pieces) {
            if (!count) break;
            if (first >= p.count) {
                first -= p.count;
                continue;
            }
            const uint64_t n = std::min(count, p.count - first);
            const io::Blob blob = p.file->storageBytes(p.tensor->storage);
            gpu::StridedView v{blob.bytes.data(), fs, p.tensor->shape, p.tensor->stride,
                               p.tensor->storageOffset};
            if (from == to) {
                gpu::cpuBackend().gather(v, p.offset + first, n, dst);
            } else {
                staging.resize(n * fs);
                gpu::cpuBackend().gather(v, p.offset + first, n, staging.data());
                backend->cast(*scalarOf(from), *scalarOf(to), staging.data(), dst, n);
            }
            // Sources are read once, front to back: let their pages go (bounded RSS).
            if (p.tensor->isContiguous())
                p.file->release(
                    blob.bytes.data() + (uint64_t(p.tensor->storageOffset) + p.offset + first) * fs, n * fs);
            dst += n * ts;
            count -= n;
            first = 0;
        }
    }
};

} // namespace

TensorSet checkpointTensors(const std::string& path, const SourceOptions& options)
{
    // Only the chosen tag is parsed, and strictly: an unreadable tag is an error here.
    const layout::TagFolders folders = layout::findDeepSpeedTags(path);
    auto named = [&](const std::string& n) {
        return std::find_if(folders.tags.begin(), folders.tags.end(),
                            [&](const auto& t) { return t.first == n; });
    };
    std::string tagName = options.tag;
    if (tagName.empty()) {
        if (named(folders.latest) != folders.tags.end())
            tagName = folders.latest;
        else if (folders.tags.size() == 1)
            tagName = folders.tags.front().first;
        else {
            std::string names;
            for (const auto& t : folders.tags)
                names += (names.empty() ? "" : ", ") + t.first;
            throw Error("no 'latest' file names a tag; choose one with --tag (" + names + ")", path);
        }
    }
    const auto found = named(tagName);
    if (found == folders.tags.end()) throw Error("no tag '" + tagName + "'", path);
    const layout::Tag tag =
        layout::openDeepSpeedTag(found->second, found->first, found->first == folders.latest);
    if (tag.optimizer == "none")
        throw Error("tag '" + tag.name +
                        "' has no ZeRO optimizer states (a ZeRO-0 or non-ZeRO save): its weights "
                        "are the 'module' of " +
                        (tag.files.empty() ? std::string("the model file") : tag.files.front().name) +
                        "; export that file instead",
                    path);

    TensorSet set;
    set.label = path + " (tag " + tag.name + ")";
    set.tag = tag.name;
    set.warnings = tag.warnings;
    auto filesOwner = std::make_shared<FileCache>();
    FileCache& files = *filesOwner;
    set.keepAlive = filesOwner;
    std::vector<SourceTensor>& plan = set.tensors;
    std::map<std::string, size_t> index;
    for (const layout::Parameter& p : tag.params) {
        if (options.excludeFrozen && p.kind == layout::Parameter::Kind::Frozen) continue;
        SourceTensor out;
        out.tensor.name = p.name;
        out.tensor.shape = p.shape;
        if (!p.tiedTo.empty()) {
            if (options.excludeFrozen && !index.count(p.tiedTo)) continue;
            out.aliasOf = p.tiedTo;
            plan.push_back(std::move(out));
            continue;
        }
        auto reader = std::make_shared<Reader>();
        for (const auto& s : p.slices)
            for (const auto& src : s.master) {
                const auto& f = files.get(src.file);
                const torch::Tensor* t = f.tensor(src.tensorPath);
                if (!t) throw Error("tensor '" + src.tensorPath + "' vanished", src.file);
                reader->pieces.push_back({&f, t, src.offset, src.count});
                reader->from = t->dtype;
            }
        if (reader->pieces.empty()) reader->from = p.dtype;
        torch::DType to = reader->from;
        if (options.dtype && castable(to)) to = *options.dtype;
        reader->to = to;
        reader->backend = options.backend ? options.backend.get() : &gpu::cpuBackend();
        out.tensor.dtype = to;
        out.tensor.nbytes = p.numel() * torch::elementSize(to);
        uint64_t available = 0;
        for (const auto& pc : reader->pieces)
            available += pc.count;
        if (available != p.numel())
            throw Error("parameter '" + p.name + "' has " + std::to_string(available) + " of its " +
                            std::to_string(p.numel()) + " elements in the rank files",
                        tag.dir);
        out.tensor.fill = [reader](uint64_t off, uint64_t n, uint8_t* dst) { reader->fill(off, n, dst); };
        index[p.name] = plan.size();
        plan.push_back(std::move(out));
    }

    return set;
}

TensorSet fileTensors(const std::string& path)
{
    TensorSet set;
    set.label = path;
    const FileKind kind = detect(path);
    if (kind == FileKind::Safetensors) {
        auto f = std::shared_ptr<safetensors::SafetensorsFile>(safetensors::SafetensorsFile::open(path));
        set.keepAlive = f;
        for (const auto& t : f->tensors()) {
            SourceTensor s;
            s.tensor.name = t.name;
            s.tensor.dtype = t.dtype;
            s.tensor.shape = t.shape;
            s.tensor.nbytes = t.end - t.begin;
            const uint8_t* p = f->bytes(t).data();
            s.direct = p;
            s.tensor.fill = [p](uint64_t off, uint64_t n, uint8_t* dst) { std::memcpy(dst, p + off, n); };
            set.tensors.push_back(std::move(s));
        }
        return set;
    }
    auto f = std::shared_ptr<torch::TorchFile>(torch::TorchFile::open(path));
    set.keepAlive = f;
    set.warnings = f->warnings();
    for (const auto& t : f->tensors()) {
        if (t.aliasOf >= 0) {
            SourceTensor s;
            s.tensor.name = t.path;
            s.aliasOf = f->tensors()[size_t(t.aliasOf)].path;
            set.tensors.push_back(std::move(s));
            continue;
        }
        if (t.storage < 0 || !t.note.empty()) {
            set.skipped.push_back("'" + t.path + "' (" + (t.note.empty() ? "no data" : t.note) + ")");
            continue;
        }
        if (!scalarOf(t.dtype)) {
            set.skipped.push_back("'" + t.path + "' (" + std::string(torch::name(t.dtype)) + ")");
            continue;
        }
        SourceTensor s;
        s.tensor.name = t.path;
        s.tensor.dtype = t.dtype;
        s.tensor.shape = t.shape;
        s.tensor.nbytes = t.nbytes();
        const torch::TorchFile* file = f.get();
        const torch::Tensor* tp = &t;
        if (t.isContiguous() && t.numel()) {
            // Asked without reading: a deflated storage is inflated when (and if) it is read.
            if (const auto mapped = file->mappedStorageBytes(t.storage))
                s.direct = mapped->data() + uint64_t(t.storageOffset) * torch::elementSize(t.dtype);
        }
        s.tensor.fill = [file, tp](uint64_t off, uint64_t n, uint8_t* dst) {
            const io::Blob blob = file->storageBytes(tp->storage);
            const uint32_t es = torch::elementSize(tp->dtype);
            gpu::StridedView v{blob.bytes.data(), es, tp->shape, tp->stride, tp->storageOffset};
            gpu::cpuBackend().gather(v, off / es, n / es, dst);
        };
        set.tensors.push_back(std::move(s));
    }
    return set;
}

TensorSet anyTensors(const std::string& path, const SourceOptions& options)
{
    if (layout::recognize(path) == layout::Family::DeepSpeed) return checkpointTensors(path, options);
    return fileTensors(path);
}

} // namespace ckpt::ops
