#include "ops/tensor_source.h"

#include "cast.h"
#include "io/error.h"
#include "layout/family.h"

#include <algorithm>
#include <filesystem>
#include <fnmatch.h>
#include <map>
#include <memory>
#include <set>

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

// Reads any element range of one parameter from its sources, casting on the way. Flat sources
// are concatenated (ZeRO partitions, whole tensors of a file); N-d chunks are placed by their
// offsets (DCP shards), row by row along the last dimension.
struct Reader
{
    struct Piece
    {
        const layout::TensorFile* file;
        std::string tensorPath;
        uint64_t offset, count;                        // flat
        std::vector<int64_t> chunkOffsets, chunkShape; // N-d chunk
        std::vector<int64_t> regionStrides;            // the chunk is a region of the stored tensor
        int64_t regionOffset = 0;

        // The stored tensor's logical element where row `r` of the chunk starts.
        uint64_t rowStart(uint64_t r, const std::vector<int64_t>& idx) const
        {
            if (regionStrides.empty()) return r * uint64_t(chunkShape.empty() ? 1 : chunkShape.back());
            int64_t at = regionOffset;
            for (size_t i = 0; i < idx.size(); ++i)
                at += idx[i] * regionStrides[i];
            return uint64_t(at);
        }
    };
    std::vector<Piece> pieces;
    std::vector<int64_t> shape; // of the parameter
    bool chunked = false;
    torch::DType from, to;
    gpu::ComputeBackend* backend = &gpu::cpuBackend();

    // Copies `n` logical elements from `first` of a piece's tensor to dst, cast to `to`; with a
    // `step`, every step-th element from `first` (a row of a transposed region: a column of the
    // stored tensor, which must then be stored contiguously).
    // Source pages read row by row, let go a run of adjacent rows at a time: a release is an
    // madvise, whose TLB shootdown reaches every core the process runs on, and one per row of a
    // DCP chunk cost a third of an export's time.
    struct PendingRelease
    {
        static constexpr uint64_t kMost = 16u << 20; // bytes held back at most
        const layout::TensorFile* file = nullptr;
        const uint8_t *floor = nullptr, *begin = nullptr; // the storage's first byte; the run's
        uint64_t size = 0;

        void add(const layout::TensorFile* f, const uint8_t* storage, const uint8_t* at, uint64_t n)
        {
            if (f == file && at == begin + size && size < kMost) {
                size += n;
                return;
            }
            flush();
            file = f, floor = storage, begin = at, size = n;
        }
        // From the start of the run's first page: its head was read before (the previous row of a
        // DCP chunk, the previous range), and only whole pages are dropped.
        void flush()
        {
            if (!file || !size) return;
            const uint64_t back =
                std::min<uint64_t>(reinterpret_cast<uintptr_t>(begin) % 4096, uint64_t(begin - floor));
            file->release(begin - back, size + back);
            file = nullptr, size = 0;
        }
        ~PendingRelease() { flush(); }
    };

    void copy(const Piece& p, const layout::TensorBytes& b, uint64_t first, uint64_t n, uint8_t* dst,
              std::vector<uint8_t>& staging, int64_t step = 1, PendingRelease* pending = nullptr) const
    {
        const uint32_t fs = torch::elementSize(from);
        gpu::StridedView v{b.storage.bytes.data(), fs, b.shape, b.stride, b.storageOffset};
        if (step != 1) {
            if (!b.contiguous)
                throw Error("tensor '" + p.tensorPath +
                            "' is read transposed, but is not stored contiguously");
            v = gpu::StridedView{
                b.storage.bytes.data(), fs, {int64_t(n)}, {step}, b.storageOffset + int64_t(first)};
            // Fetched whole, kept: the next row reads the next column of the same rows.
            p.file->fetch(b.storage.bytes.data() + (uint64_t(b.storageOffset) + first) * fs,
                          ((n - 1) * uint64_t(step) + 1) * fs);
            first = 0;
        } else if (b.contiguous) {
            // A remote file's bytes come when read: only this range of a contiguous tensor (a
            // chunk of a rank's flat partition), not its whole storage (bytes(…, false) fetched
            // nothing).
            p.file->fetch(b.storage.bytes.data() + (uint64_t(b.storageOffset) + first) * fs, n * fs);
        } else {
            p.file->fetch(b.storage.bytes.data(), b.storage.bytes.size());
        }
        // The job's backend does every step it supports; the rest runs on the CPU.
        const gpu::Scalar sf = *scalarOf(from);
        gpu::ComputeBackend& gatherer = backend->supports(gpu::Op::Gather, sf) ? *backend : gpu::cpuBackend();
        if (from == to) {
            gatherer.gather(v, first, n, dst);
        } else {
            staging.resize(n * fs);
            gatherer.gather(v, first, n, staging.data());
            const gpu::Scalar st = *scalarOf(to);
            gpu::ComputeBackend& caster =
                backend->supports(gpu::Op::Cast, sf) && backend->supports(gpu::Op::Cast, st)
                    ? *backend
                    : gpu::cpuBackend();
            caster.cast(sf, st, staging.data(), dst, n);
        }
        // Sources are read once, front to back: let their pages go (bounded RSS), rows shorter
        // than a few pages included (PendingRelease::flush).
        if (b.contiguous && step == 1) {
            PendingRelease now;
            const uint8_t* at = b.storage.bytes.data() + (uint64_t(b.storageOffset) + first) * fs;
            (pending ? *pending : now).add(p.file, b.storage.bytes.data(), at, n * fs);
        }
    }

    void fill(uint64_t byteOffset, uint64_t byteCount, uint8_t* dst) const
    {
        const uint32_t ts = torch::elementSize(to);
        std::vector<uint8_t> staging;
        if (chunked) return fillChunked(byteOffset / ts, byteCount / ts, dst, staging);
        uint64_t first = byteOffset / ts, count = byteCount / ts;
        for (const Piece& p : pieces) {
            if (!count) break;
            if (first >= p.count) {
                first -= p.count;
                continue;
            }
            const uint64_t n = std::min(count, p.count - first);
            copy(p, p.file->bytes(p.tensorPath, false), p.offset + first, n, dst, staging);
            dst += n * ts;
            count -= n;
            first = 0;
        }
    }

    // The piece holding flat element `first`, and `first` made relative to it; nullptr past the end.
    const Piece* pieceAt(uint64_t& first) const
    {
        for (const Piece& p : pieces) {
            if (first < p.count) return &p;
            first -= p.count;
        }
        return nullptr;
    }

    // SourceTensor::inPlace for flat sources read without a cast.
    const uint8_t* inPlace(uint64_t first, uint64_t* run) const
    {
        const Piece* p = pieceAt(first);
        if (!p) return nullptr;
        const uint8_t* base = p->file->mappedContiguous(p->tensorPath);
        if (!base) return nullptr;
        *run = p->count - first;
        return base + (p->offset + first) * torch::elementSize(from);
    }

    void releaseInPlace(uint64_t first, uint64_t count) const
    {
        const uint32_t fs = torch::elementSize(from);
        uint64_t start = 0; // the piece's first element in the tensor
        for (const Piece& p : pieces) {
            const uint64_t lo = std::max(first, start), hi = std::min(first + count, start + p.count);
            if (lo < hi)
                if (const uint8_t* base = p.file->mappedContiguous(p.tensorPath))
                    p.file->release(base + (p.offset + lo - start) * fs, (hi - lo) * fs);
            start += p.count;
        }
    }

    void fillChunked(uint64_t first, uint64_t count, uint8_t* dst, std::vector<uint8_t>& staging) const
    {
        const uint32_t ts = torch::elementSize(to);
        const size_t d = shape.size();
        std::vector<int64_t> outStride(d, 1);
        for (size_t i = d; i-- > 1;)
            outStride[i - 1] = outStride[i] * shape[i];
        const uint64_t end = first + count;
        PendingRelease pending;
        for (const Piece& p : pieces) {
            const int64_t rowLen = d ? p.chunkShape[d - 1] : 1;
            uint64_t rows = 1;
            for (size_t i = 0; i + 1 < d; ++i)
                rows *= uint64_t(p.chunkShape[i]);
            if (!rowLen || !rows) continue;
            std::optional<layout::TensorBytes> bytes; // asked for only when a row is needed
            std::vector<int64_t> idx(d ? d - 1 : 0, 0);
            for (uint64_t r = 0; r < rows; ++r) {
                uint64_t at = d ? uint64_t(p.chunkOffsets[d - 1]) : 0;
                for (size_t i = 0; i + 1 < d; ++i)
                    at += uint64_t(p.chunkOffsets[i] + idx[i]) * uint64_t(outStride[i]);
                const uint64_t lo = std::max(at, first), hi = std::min(at + uint64_t(rowLen), end);
                if (lo < hi) {
                    if (!bytes) bytes = p.file->bytes(p.tensorPath);
                    const int64_t step = p.regionStrides.empty() ? 1 : p.regionStrides.back();
                    copy(p, *bytes, p.rowStart(r, idx) + (lo - at) * uint64_t(step), hi - lo,
                         dst + (lo - first) * ts, staging, step, &pending);
                }
                for (size_t i = idx.size(); i-- > 0;) { // next row, row-major
                    if (++idx[i] < p.chunkShape[i]) break;
                    idx[i] = 0;
                }
            }
        }
    }
};

// Composer's ignore_keys: a glob matching a path or any of its ancestors drops it.
bool ignored(const std::string& path, const std::vector<std::string>& globs)
{
    for (const auto& g : globs)
        for (size_t cut = path.find('/');; cut = path.find('/', cut + 1)) {
            const std::string prefix = cut == std::string::npos ? path : path.substr(0, cut);
            if (::fnmatch(g.c_str(), prefix.c_str(), 0) == 0) return true;
            if (cut == std::string::npos) break;
        }
    return false;
}

} // namespace

namespace {

// A region of a stored tensor (Source::regionStrides) lies inside it, one stride per dimension of
// the chunk: else a recognizer's mistake would read another tensor's bytes. Its rows are whole
// rows of the stored tensor, or (a transposed region) columns of it, read element by element.
void checkRegion(const layout::Source& src, const layout::TensorFile& f, const std::string& param)
{
    const auto fail = [&](const std::string& what) {
        throw Error("the region of '" + std::string(src.tensorPath) + "' read for '" + param + "' " + what,
                    src.file);
    };
    if (src.chunkOffsets.empty() || src.regionStrides.size() != src.chunkShape.size())
        fail("has no stride for each dimension of its chunk");
    if (!src.chunkShape.empty() && src.chunkShape.back() > 1 && src.regionStrides.back() < 1)
        fail("reads its rows backwards or in place (its last stride is below 1)");
    uint64_t stored = 1;
    for (int64_t d : f.bytes(src.tensorPath, false).shape)
        stored *= uint64_t(d);
    int64_t lo = src.regionOffset, hi = src.regionOffset;
    for (size_t i = 0; i < src.chunkShape.size(); ++i) {
        if (src.chunkShape[i] == 0) return; // an empty chunk reads nothing
        const int64_t reach = (src.chunkShape[i] - 1) * src.regionStrides[i];
        (reach < 0 ? lo : hi) += reach;
    }
    if (lo < 0 || uint64_t(hi) >= stored)
        fail("lies outside it (elements " + std::to_string(lo) + ".." + std::to_string(hi) + " of " +
             std::to_string(stored) + ")");
}

// The parameter's sources as the reader's pieces (each file asked of the FileSet once, held as
// long as the set); returns how many elements they hold.
uint64_t addPieces(Reader& reader, const layout::Parameter& p, const layout::FileSet& files,
                   std::map<std::string, std::shared_ptr<const layout::TensorFile>>& held)
{
    uint64_t available = 0;
    for (const auto& sl : p.slices)
        for (const auto& src : sl.master) {
            // Once per distinct file: past the FileSet's budget a get() per source could
            // parse a file again for every frozen fragment that names it.
            auto [kept, fresh] = held.try_emplace(src.file.str());
            if (fresh) kept->second = files.get(src.file);
            const layout::TensorFile& f = *kept->second;
            if (!f.has(src.tensorPath)) throw Error("tensor '" + src.tensorPath + "' vanished", src.file);
            reader.from = f.dtypeOf(src.tensorPath);
            Reader::Piece piece{&f,
                                src.tensorPath,
                                src.offset,
                                src.count,
                                src.chunkOffsets,
                                src.chunkShape,
                                src.regionStrides,
                                src.regionOffset};
            if (!src.regionStrides.empty()) checkRegion(src, f, p.name);
            if (src.chunkOffsets.empty()) {
                available += src.count;
            } else {
                reader.chunked = true;
                uint64_t n = 1;
                for (int64_t x : src.chunkShape)
                    n *= uint64_t(x);
                available += n;
                if (src.chunkOffsets.size() != p.shape.size() || src.chunkShape.size() != p.shape.size())
                    throw Error("a chunk of '" + p.name + "' has another rank than the tensor", src.file);
                for (size_t i = 0; i < p.shape.size(); ++i)
                    if (src.chunkOffsets[i] < 0 || src.chunkShape[i] < 0 ||
                        src.chunkOffsets[i] + src.chunkShape[i] > p.shape[i])
                        throw Error("a chunk of '" + p.name + "' lies outside its shape", src.file);
            }
            reader.pieces.push_back(std::move(piece));
        }
    return available;
}

// The tag's unreadable reason as the error it was (naming the file), or else naming the tag's
// folder: the message names the file once, and Error::file() is that file.
Error unreadableTag(const layout::Tag& tag)
{
    return tag.unreadableError ? *tag.unreadableError : Error(tag.unreadable, tag.dir);
}

} // namespace

TensorSet tagTensors(std::shared_ptr<const layout::OpenedCheckpoint> opened, const layout::Tag& tag,
                     const SourceOptions& options)
{
    // A tag whose files could not be read has no parameters: its tensors would be "none" (an
    // export of nothing, an empty state dict, statistics of nothing), never what it holds.
    if (!tag.unreadable.empty()) throw unreadableTag(tag);
    if (!tag.notExportable.empty()) throw Error(tag.notExportable, tag.dir);
    TensorSet set;
    set.label = opened->model.singleFile ? tag.dir : opened->model.root + " (tag " + tag.name + ")";
    set.tag = tag.name;
    set.warnings = tag.warnings;
    set.exportFiles = tag.exportFiles;
    const layout::FileSet& files = *opened->files;
    // The tag's files by id, each asked of the FileSet once, alive as long as the set.
    std::map<std::string, std::shared_ptr<const layout::TensorFile>> held;
    std::vector<SourceTensor>& plan = set.tensors;
    const std::optional<torch::DType> want = options.dtype ? options.dtype : tag.exportDtype;
    std::vector<const layout::Parameter*> params;
    if (options.raw && !tag.rawModel.empty()) {
        // The stored model under its own names; the files written beside a mapped model (its
        // config.json) describe the mapping, not these.
        const std::set<std::string> raw(tag.rawModel.begin(), tag.rawModel.end());
        for (const auto& p : tag.otherTensors)
            if (raw.count(p.name) || options.all) params.push_back(&p);
        set.exportFiles.clear();
    } else {
        for (const auto& p : tag.params)
            params.push_back(&p);
        if (options.all)
            for (const auto& p : tag.otherTensors)
                params.push_back(&p);
    }
    std::set<std::string> dropped; // by a filter: their aliases go too
    for (const layout::Parameter* pp : params) {
        const layout::Parameter& p = *pp;
        if ((options.excludeFrozen && p.kind == layout::Parameter::Kind::Frozen) ||
            ignored(p.path.empty() ? p.name : p.path, options.ignore)) {
            dropped.insert(p.name);
            continue;
        }
        SourceTensor out;
        out.tensor.name = p.name;
        out.tensor.shape = p.shape;
        if (!p.tiedTo.empty()) {
            if (dropped.count(p.tiedTo)) continue;
            out.aliasOf = p.tiedTo;
            plan.push_back(std::move(out));
            continue;
        }
        if (!p.unreadable.empty()) {
            set.skipped.push_back("'" + p.name + "' (" + p.unreadable + ")");
            continue;
        }
        if (!scalarOf(p.dtype)) {
            set.skipped.push_back("'" + p.name + "' (" + std::string(torch::name(p.dtype)) + ")");
            continue;
        }
        auto reader = std::make_shared<Reader>();
        reader->shape = p.shape;
        reader->from = p.dtype;
        const uint64_t available = addPieces(*reader, p, files, held);
        torch::DType to = reader->from;
        if (want && castable(to)) to = *want;
        reader->to = to;
        reader->backend = options.backend ? options.backend.get() : &gpu::cpuBackend();
        out.tensor.dtype = to;
        out.tensor.nbytes = p.numel() * torch::elementSize(to);
        if (available != p.numel())
            throw Error("parameter '" + p.name + "' has " + std::to_string(available) + " of its " +
                            std::to_string(p.numel()) + " elements in the " +
                            (opened->model.singleFile ? "file" : "checkpoint's files"),
                        tag.dir);
        // One whole contiguous source, not cast: its bytes can be read in place. Not a remote
        // one: its address is known only by fetching the whole storage; reads fetch their range.
        const bool onePiece = !reader->chunked && reader->pieces.size() == 1 && reader->from == to &&
                              !reader->pieces[0].file->isRemote();
        if (onePiece && reader->pieces[0].offset == 0)
            out.direct = reader->pieces[0].file->mappedContiguous(reader->pieces[0].tensorPath);
        out.tensor.fill = [reader](uint64_t off, uint64_t n, uint8_t* dst) { reader->fill(off, n, dst); };
        if (!reader->chunked && reader->from == to) {
            out.oneRun = onePiece;
            out.inPlace = [reader](uint64_t first, uint64_t* run) { return reader->inPlace(first, run); };
            out.releaseInPlace = [reader](uint64_t first, uint64_t n) { reader->releaseInPlace(first, n); };
        }
        plan.push_back(std::move(out));
    }
    set.keepAlive =
        std::make_shared<std::pair<decltype(opened), decltype(held)>>(std::move(opened), std::move(held));
    return set;
}

layout::OpenObserver openingObserver(const ProgressSink& progress, const CancelToken& cancel,
                                     const std::string& label)
{
    layout::OpenObserver o;
    o.cancelled = [&cancel] { return cancel.cancelled(); };
    if (progress)
        o.progress = [progress, label](uint64_t done, uint64_t total, const std::string& file) {
            Progress p;
            p.permille = total ? int(done * 1000 / total) : 0;
            p.stage = "reading " + label + ": " + std::filesystem::path(file).filename().string();
            p.doneBytes = done;
            p.totalBytes = total;
            progress(p);
        };
    return o;
}

TensorSet anyTensors(const std::string& path, const SourceOptions& options)
{
    auto opened = layout::openCheckpointTag(path, options.tag, options.opening);
    const layout::Tag& tag = opened->model.tags.front();
    return tagTensors(std::move(opened), tag, options);
}

TensorSet checkpointTensors(const std::string& path, const SourceOptions& options)
{
    return anyTensors(path, options);
}

TensorSet fileTensors(const std::string& path)
{
    return anyTensors(path, {});
}

TensorSet fileTensors(const layout::FileSet& files, const std::string& id)
{
    const layout::OpenedTag in = layout::openParsedFile(id, files.get(id));
    return tagTensors(in.checkpoint, *in, {});
}

} // namespace ckpt::ops
