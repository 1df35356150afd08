#include "ops/consolidate.h"

#include "cast.h"
#include "compute_backend.h"
#include "io/atomic_file.h"
#include "layout/deepspeed.h"
#include "ops/writers.h"
#include "torch/torch_file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

namespace ckpt::ops {

namespace fs = std::filesystem;

uint64_t parseShardSize(const std::string& text)
{
    std::string s = text;
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    while (!s.empty() && std::isspace(uint8_t(s.front())))
        s.erase(s.begin());
    double mult = 1;
    if (s.size() > 2) {
        std::string unit = s.substr(s.size() - 2);
        for (auto& c : unit)
            c = char(std::toupper(uint8_t(c)));
        const std::map<std::string, double> units{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}};
        if (auto it = units.find(unit); it != units.end()) {
            mult = it->second;
            s.resize(s.size() - 2);
        }
    }
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !(v > 0) || !std::isfinite(v * mult))
        throw Error("--max-shard-size '" + text + "' is not a size like 5GB, 500MB or 2000000");
    return uint64_t(v * mult);
}

namespace {

std::optional<gpu::Scalar> scalarOf(torch::DType d)
{
    switch (d) {
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
                gpu::castElements(*scalarOf(from), *scalarOf(to), staging.data(), dst, n);
            }
            // Sources are read once, front to back: let their pages go (bounded RSS).
            if (p.tensor->isContiguous())
                p.file->release(blob.bytes.data() + (uint64_t(p.tensor->storageOffset) + p.offset + first) * fs, n * fs);
            dst += n * ts;
            count -= n;
            first = 0;
        }
    }
};

struct Planned
{
    torch::OutTensor tensor;
    std::string aliasOf;
};

std::string shardName(bool safetensors, size_t i, size_t n)
{
    const std::string stem = safetensors ? "model" : "pytorch_model";
    const std::string ext = safetensors ? ".safetensors" : ".bin";
    if (n == 1) return stem + ext;
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu", i + 1, n);
    return stem + buf + ext;
}

} // namespace

ConsolidateResult consolidate(const std::string& checkpoint, const std::string& outDir,
                              const ConsolidateOptions& options, const ProgressSink& progress,
                              const CancelToken& cancel)
{
    if (progress) progress({0, "reading the checkpoint layout", 0, 0});
    const layout::Checkpoint ck = layout::openDeepSpeed(checkpoint);
    std::string tagName = options.tag;
    if (tagName.empty()) {
        const layout::Tag* l = nullptr;
        for (const auto& t : ck.tags)
            if (t.latest) l = &t;
        if (!l && ck.tags.size() == 1) l = &ck.tags.front();
        if (!l) {
            std::string names;
            for (const auto& t : ck.tags)
                names += (names.empty() ? "" : ", ") + t.name;
            throw Error("no 'latest' file names a tag; choose one with --tag (" + names + ")", checkpoint);
        }
        tagName = l->name;
    }
    const layout::Tag* found = ck.find(tagName);
    if (!found) throw Error("no tag '" + tagName + "'", checkpoint);
    // Re-open the tag strictly: an unreadable tag is an error here, not a warning.
    const layout::Tag tag = layout::openDeepSpeedTag(found->dir, found->name, found->latest);
    if (tag.optimizer == "none")
        throw Error("tag '" + tag.name +
                        "' has no ZeRO optimizer states (a ZeRO-0 or non-ZeRO save): its weights "
                        "are the 'module' of " +
                        (tag.files.empty() ? std::string("the model file") : tag.files.front().name) +
                        "; export that file instead",
                    checkpoint);

    ConsolidateResult result;
    result.tag = tag.name;
    result.warnings = tag.warnings;
    FileCache files;
    std::vector<Planned> plan;
    std::map<std::string, size_t> index;
    for (const layout::Parameter& p : tag.params) {
        if (options.excludeFrozen && p.kind == layout::Parameter::Kind::Frozen) continue;
        Planned out;
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
        if (options.dtype && scalarOf(to)) to = *options.dtype;
        reader->to = to;
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

    // huggingface_hub's splitter, in state-dict order; an alias goes where its target went.
    const bool st = options.format == ConsolidateOptions::Format::Safetensors;
    std::vector<std::vector<size_t>> shards;
    std::vector<size_t> current;
    uint64_t currentSize = 0, totalSize = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const Planned& p = plan[i];
        if (!p.aliasOf.empty()) continue;
        const uint64_t size = p.tensor.nbytes;
        totalSize += size;
        if (size > options.maxShardSize) { // its own shard, listed before the one being filled
            shards.push_back({i});
            continue;
        }
        if (currentSize + size > options.maxShardSize && !current.empty()) {
            shards.push_back(current);
            current.clear();
            currentSize = 0;
        }
        current.push_back(i);
        currentSize += size;
    }
    if (!current.empty() || shards.empty()) shards.push_back(current);
    std::map<std::string, size_t> shardOf;
    for (size_t s = 0; s < shards.size(); ++s)
        for (size_t i : shards[s])
            shardOf[plan[i].tensor.name] = s;

    std::error_code ec;
    fs::create_directories(outDir, ec);
    if (!fs::is_directory(outDir)) throw Error("cannot create the output folder", outDir);

    uint64_t done = 0;
    auto onBytes = [&](uint64_t n) {
        done += n;
        if (progress) progress({int(totalSize ? done * 950 / totalSize : 950), "writing", done, totalSize});
    };
    std::vector<std::unique_ptr<io::AtomicFile>> outputs;
    nlohmann::json weightMap = nlohmann::json::object();
    for (size_t s = 0; s < shards.size(); ++s) {
        const std::string name = shardName(st, s, shards.size());
        auto file = std::make_unique<io::AtomicFile>((fs::path(outDir) / name).string());
        std::vector<torch::OutTensor> tensors;
        for (size_t i : shards[s]) {
            tensors.push_back(plan[i].tensor);
            weightMap[plan[i].tensor.name] = name;
        }
        std::vector<torch::Alias> aliases;
        std::map<std::string, std::string> metadata{{"format", "pt"}};
        for (const Planned& p : plan) {
            if (p.aliasOf.empty() || !shardOf.count(p.aliasOf) || shardOf[p.aliasOf] != s) continue;
            if (st)
                metadata[p.tensor.name] = p.aliasOf; // one copy; the alias recorded as save_model does
            else {
                aliases.push_back({p.tensor.name, p.aliasOf});
                weightMap[p.tensor.name] = name;
            }
        }
        if (st) {
            const auto hashes = writeSafetensors(*file, tensors, metadata, onBytes, cancel);
            verifySafetensors(*file, tensors, hashes, cancel);
        } else {
            const auto hashes = torch::writeTorchZip(*file, tensors, aliases, "archive", onBytes, cancel);
            file->finish();
            verifyTorchZip(*file, tensors, aliases, hashes, cancel);
        }
        result.tensors += tensors.size() + aliases.size();
        result.bytes += file->written();
        outputs.push_back(std::move(file));
    }
    if (shards.size() > 1) {
        // transformers' format: indent 2, sorted keys, trailing newline; ASCII as Python's json.dumps.
        nlohmann::json idx;
        idx["metadata"]["total_size"] = totalSize;
        idx["weight_map"] = weightMap;
        const std::string text = idx.dump(2, ' ', true) + "\n";
        auto file = std::make_unique<io::AtomicFile>(
            (fs::path(outDir) / (st ? "model.safetensors.index.json" : "pytorch_model.bin.index.json"))
                .string());
        file->write(text.data(), text.size());
        file->finish();
        outputs.push_back(std::move(file));
    }
    cancel.throwIfCancelled();
    // Everything written and verified: only now do the files take their final names.
    for (auto& f : outputs) {
        f->commit();
        result.files.push_back(f->finalPath());
    }
    if (progress) progress({1000, "done", done, totalSize});
    return result;
}

} // namespace ckpt::ops
