#include "ops/bloat.h"

#include "io/location.h"
#include "ops/detect.h"
#include "safetensors/safetensors_file.h"

#include <algorithm>
#include <map>

namespace ckpt::ops {

std::vector<ByteRange> viewRanges(uint32_t es, const std::vector<int64_t>& shape,
                                  const std::vector<int64_t>& stride, int64_t storageOffset, size_t maxRuns,
                                  bool* approximate)
{
    if (approximate) *approximate = false;
    struct Dim
    {
        uint64_t size, stride;
    };
    std::vector<Dim> dims;
    for (size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == 0) return {}; // no element, no byte
        // A dimension of size 1 or stride 0 (expand) reaches no new byte.
        if (shape[i] > 1 && stride[i] > 0) dims.push_back({uint64_t(shape[i]), uint64_t(stride[i])});
    }
    // Innermost first; a dimension whose stride equals the extent of the one inside it
    // continues it without a gap and merges into one longer run.
    std::sort(dims.begin(), dims.end(), [](const Dim& a, const Dim& b) { return a.stride < b.stride; });
    uint64_t run = 1; // elements per contiguous run
    size_t outer = 0;
    if (!dims.empty() && dims[0].stride == 1) {
        run = dims[0].size;
        outer = 1;
        while (outer < dims.size() && dims[outer].stride == run) {
            run *= dims[outer].size;
            ++outer;
        }
    }
    const uint64_t base = uint64_t(storageOffset) * es;
    uint64_t runs = 1, extent = run; // extent in elements, of the hull
    for (size_t i = outer; i < dims.size(); ++i) {
        runs = runs > maxRuns || dims[i].size > maxRuns ? maxRuns + 1 : runs * dims[i].size;
        extent += (dims[i].size - 1) * dims[i].stride;
    }
    if (runs > maxRuns) {
        if (approximate) *approximate = true;
        return {{base, base + extent * es}};
    }
    std::vector<ByteRange> out;
    out.reserve(size_t(runs));
    for (uint64_t r = 0; r < runs; ++r) {
        uint64_t start = 0, rem = r;
        for (size_t i = outer; i < dims.size(); ++i) {
            start += (rem % dims[i].size) * dims[i].stride;
            rem /= dims[i].size;
        }
        out.push_back({base + start * es, base + (start + run) * es});
    }
    std::sort(out.begin(), out.end(),
              [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
    std::vector<ByteRange> merged;
    for (const auto& x : out) {
        if (!merged.empty() && x.begin <= merged.back().end)
            merged.back().end = std::max(merged.back().end, x.end);
        else
            merged.push_back(x);
    }
    return merged;
}

uint64_t unionBytes(std::vector<ByteRange> ranges)
{
    std::sort(ranges.begin(), ranges.end(),
              [](const ByteRange& a, const ByteRange& b) { return a.begin < b.begin; });
    uint64_t total = 0, at = 0;
    for (const auto& r : ranges) {
        const uint64_t from = std::max(r.begin, at);
        if (r.end > from) total += r.end - from;
        at = std::max(at, r.end);
    }
    return total;
}

FileBloat analyzeBloat(const torch::TorchFile& file)
{
    FileBloat b;
    b.fileBytes = file.fileSize();
    const auto& storages = file.storages();
    b.storages.resize(storages.size());
    std::vector<std::vector<ByteRange>> reach(storages.size());
    for (size_t s = 0; s < storages.size(); ++s) {
        b.storages[s].storage = int(s);
        b.storages[s].nbytes = storages[s].nbytes;
        // A legacy view storage shares its root's bytes: both are counted whole, once.
        if (storages[s].viewOf >= 0) {
            b.storages[s].wholeUse = true;
            b.storages[size_t(storages[s].viewOf)].wholeUse = true;
        }
    }
    const auto& tensors = file.tensors();
    for (size_t i = 0; i < tensors.size(); ++i) {
        const torch::Tensor& t = tensors[i];
        // The same tensor under a second name views the storage too; its bytes are its target's.
        const int storage = t.aliasOf >= 0 ? tensors[size_t(t.aliasOf)].storage : t.storage;
        if (storage < 0) continue;
        StorageBloat& sb = b.storages[size_t(storage)];
        sb.tensors.push_back(int(i));
        if (t.aliasOf >= 0) continue;
        if (!t.note.empty()) { // quantized and the like: their layout is not a plain view
            sb.wholeUse = true;
            continue;
        }
        bool approx = false;
        auto r =
            viewRanges(torch::elementSize(t.dtype), t.shape, t.stride, t.storageOffset, 1u << 20, &approx);
        sb.approximate = sb.approximate || approx;
        reach[size_t(t.storage)].insert(reach[size_t(t.storage)].end(), r.begin(), r.end());
    }
    for (size_t s = 0; s < storages.size(); ++s) {
        StorageBloat& sb = b.storages[s];
        // Reached by no tensor at all: saved for its own sake (a raw storage), so all of it is used.
        if (sb.tensors.empty()) sb.wholeUse = true;
        sb.usedBytes = sb.wholeUse ? sb.nbytes : std::min(sb.nbytes, unionBytes(std::move(reach[s])));
        if (storages[s].viewOf >= 0) continue; // its bytes are its root's
        b.storageBytes += sb.nbytes;
        b.usedBytes += sb.usedBytes;
    }
    b.overheadBytes = b.fileBytes > b.storageBytes ? b.fileBytes - b.storageBytes : 0;
    return b;
}

const char* roleName(ByteRole role)
{
    switch (role) {
    case ByteRole::ModelWeights:
        return "model weights";
    case ByteRole::Fp32Master:
        return "fp32 masters";
    case ByteRole::ExpAvg:
        return "exp_avg";
    case ByteRole::ExpAvgSq:
        return "exp_avg_sq";
    case ByteRole::OtherOptimizer:
        return "other optimizer state";
    case ByteRole::Other:
        return "other";
    }
    return "other";
}

ByteRole roleOf(const std::string& path)
{
    auto has = [&](const char* s) { return path.find(s) != std::string::npos; };
    if (has("exp_avg_sq")) return ByteRole::ExpAvgSq;
    if (has("exp_avg")) return ByteRole::ExpAvg;
    // ZeRO-1/2: single_partition_of_fp32_groups; ZeRO-3: fp32_flat_groups; BF16_Optimizer and
    // Universal: fp32 in the name too.
    // Megatron-Core's distributed optimizer keeps its masters as "param" (optimizer.state.param.<key>,
    // or its buckets' optimizer.distributed.<bucket>.param).
    if (has("fp32") || has("optimizer.state.param.") || (has("optimizer.") && path.ends_with(".param")))
        return ByteRole::Fp32Master;
    if (has("optimizer")) return ByteRole::OtherOptimizer;
    // DeepSpeed's model states keep the weights under `module`; a plain state dict is all weights.
    if (path.rfind("module/", 0) == 0 || path.find('/') == std::string::npos || has("state_dict") ||
        has("model"))
        return ByteRole::ModelWeights;
    return ByteRole::Other;
}

namespace {

// What the family says a file holds decides for all its tensors, before their paths: RNG,
// scheduler and run files hold no weights, whatever their tensors are called (a Trainer's
// rng_state.pth's "cpu" tensor reads as a plain state dict's weight); an optimizer file's tensors
// other than the moments and masters are optimizer state.
ByteRole roleIn(layout::FileRole fileRole, const std::string& tensorPath)
{
    using layout::FileRole;
    if (fileRole == FileRole::Rng || fileRole == FileRole::Scheduler || fileRole == FileRole::RunConfig)
        return ByteRole::Other;
    const ByteRole r = roleOf(tensorPath);
    const bool optimizer = fileRole == FileRole::OptimStates || fileRole == FileRole::ExpertOptim;
    // An optimizer's own copy of the parameters is its fp32 master (Megatron's distrib_optim.pt
    // buffers' "param", a Universal checkpoint's fp32.pt "param").
    if (optimizer && (tensorPath == "param" || tensorPath.ends_with("/param"))) return ByteRole::Fp32Master;
    if (optimizer && (r == ByteRole::ModelWeights || r == ByteRole::Other)) return ByteRole::OtherOptimizer;
    return r;
}

// Each file of the checkpoint's tags by path, with the role its family gave it.
std::map<std::string, layout::FileRole> fileRoles(const layout::Checkpoint* model)
{
    std::map<std::string, layout::FileRole> roles;
    if (model)
        for (const auto& t : model->tags)
            for (const auto& f : t.files)
                roles.emplace(f.path, f.role);
    return roles;
}

// The items of each file the checkpoint's tags read as a sequence of items (a DCP .distcp), by path.
std::map<std::string, std::vector<layout::RankFile::Item>> fileItems(const layout::Checkpoint* model)
{
    std::map<std::string, std::vector<layout::RankFile::Item>> items;
    if (model)
        for (const auto& t : model->tags)
            for (const auto& f : t.files)
                if (!f.items.empty()) items.emplace(f.path, f.items);
    return items;
}

// A DCP data file: each item (a torch.save of one tensor chunk or value) counts by its key's
// role (a key names the model's weight, a moment, a master copy), the rest of the file (what no
// entry reads) as other bytes.
void itemRoles(const std::vector<layout::RankFile::Item>& items, const layout::FileSet& fileSet,
               FolderFile& f)
{
    uint64_t counted = 0;
    for (const auto& item : items) {
        const torch::TorchFile* tf = fileSet.get(item.id)->torch();
        if (!tf) continue;
        const uint64_t n = std::min(tf->fileSize(), f.fileBytes - counted);
        f.roleBytes[size_t(roleOf(item.label.substr(0, item.label.rfind('@'))))] += n; // key@offsets
        counted += n;
    }
    f.roleBytes[size_t(ByteRole::Other)] += f.fileBytes - counted;
}

// A safetensors file is weights: its tensors' bytes, the header beside them other bytes. A file
// that does not parse counts as other bytes (the checkpoint's family reports real damage).
void safetensorsRoles(const std::string& path, FolderFile& f)
{
    try {
        const auto st = safetensors::SafetensorsFile::open(path);
        uint64_t weights = 0;
        for (const auto& t : st->tensors())
            weights += t.end - t.begin;
        f.roleBytes[size_t(ByteRole::ModelWeights)] = weights;
        f.roleBytes[size_t(ByteRole::Other)] = f.fileBytes > weights ? f.fileBytes - weights : 0;
    } catch (const Error&) {
        f.roleBytes[size_t(ByteRole::Other)] = f.fileBytes;
    }
}

} // namespace

FolderBloat analyzeFolderBloat(const std::string& path, const ProgressSink& progress,
                               const CancelToken& cancel, const layout::FileSet* fileSet,
                               const layout::Checkpoint* model)
{
    const std::map<std::string, layout::FileRole> roles = fileRoles(model);
    const auto items = fileItems(model);
    std::vector<std::pair<std::string, std::string>> files; // absolute, relative
    const bool folder = io::pathKind(path) == io::PathKind::Folder;
    if (folder)
        for (const auto& f : io::listFilesBelow(path))
            files.push_back({f.path, f.relative});
    else
        files.push_back({path, io::fileName(path)});
    FolderBloat out;
    for (size_t i = 0; i < files.size(); ++i) {
        cancel.throwIfCancelled();
        if (progress) progress({int(i * 1000 / files.size()), "reading " + files[i].second, i, files.size()});
        FolderFile f;
        f.path = files[i].second;
        const FileKind kind = detect(files[i].first);
        f.torch = kind == FileKind::TorchZip || kind == FileKind::TorchLegacy;
        std::shared_ptr<const layout::TensorFile> owner;
        std::unique_ptr<torch::TorchFile> parsed;
        const torch::TorchFile* tf = nullptr;
        if (f.torch) {
            try {
                if (fileSet && (owner = fileSet->get(files[i].first))->torch())
                    tf = owner->torch();
                else
                    tf = (parsed = torch::TorchFile::open(files[i].first)).get();
            } catch (const Error&) {
                // In a folder, a zip that is not one torch.save (a DCP .distcp concatenates
                // many) counts as other bytes; the checkpoint's family reports real damage.
                if (!folder) throw;
                f.torch = false;
            }
        }
        if (f.torch) {
            const auto known = roles.find(files[i].first);
            const layout::FileRole fileRole = known == roles.end() ? layout::FileRole::Other : known->second;
            f.fileBytes = tf->fileSize();
            f.bloat = analyzeBloat(*tf);
            for (const auto& s : f.bloat.storages) {
                if (tf->storages()[size_t(s.storage)].viewOf >= 0) continue;
                const ByteRole r = s.tensors.empty()
                                       ? ByteRole::Other
                                       : roleIn(fileRole, tf->tensors()[size_t(s.tensors.front())].path);
                f.roleBytes[size_t(r)] += s.nbytes;
            }
            f.roleBytes[size_t(ByteRole::Other)] += f.bloat.overheadBytes;
            out.storageBytes += f.bloat.storageBytes;
            out.usedBytes += f.bloat.usedBytes;
        } else {
            try {
                f.fileBytes = io::fileSize(files[i].first);
            } catch (const Error&) {
                f.fileBytes = 0; // gone since it was listed: counted as nothing, as before
            }
            const auto listed = items.find(files[i].first);
            if (kind == FileKind::Safetensors)
                safetensorsRoles(files[i].first, f);
            else if (listed != items.end() && fileSet)
                itemRoles(listed->second, *fileSet, f);
            else
                f.roleBytes[size_t(ByteRole::Other)] = f.fileBytes;
        }
        out.fileBytes += f.fileBytes;
        for (size_t r = 0; r < kByteRoles; ++r)
            out.roleBytes[r] += f.roleBytes[r];
        out.files.push_back(std::move(f));
    }
    if (progress) progress({1000, "done", files.size(), files.size()});
    return out;
}

nlohmann::ordered_json folderBloatJson(const FolderBloat& b)
{
    nlohmann::ordered_json j;
    j["file_bytes"] = b.fileBytes;
    j["storage_bytes"] = b.storageBytes;
    j["used_bytes"] = b.usedBytes;
    j["reclaimable_bytes"] = b.reclaimableBytes();
    for (size_t r = 0; r < kByteRoles; ++r)
        j["bytes_by_role"][roleName(ByteRole(r))] = b.roleBytes[r];
    j["files"] = nlohmann::ordered_json::array();
    for (const auto& f : b.files) {
        nlohmann::ordered_json e;
        e["path"] = f.path;
        e["file_bytes"] = f.fileBytes;
        if (f.torch) {
            e["storage_bytes"] = f.bloat.storageBytes;
            e["used_bytes"] = f.bloat.usedBytes;
            e["reclaimable_bytes"] = f.bloat.reclaimableBytes();
            e["overhead_bytes"] = f.bloat.overheadBytes;
        }
        j["files"].push_back(std::move(e));
    }
    return j;
}

} // namespace ckpt::ops
