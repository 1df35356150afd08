#include "ops/file_listing.h"

#include "ops/inspect.h"

#include "cast.h"
#include "ops/detect.h"
#include "ops/tensor_source.h"
#include "safetensors/safetensors_file.h"

#include <cmath>
#include <cstdio>

namespace ckpt::ops {

using nlohmann::ordered_json;

namespace {

const char* entryKindName(torch::EntryKind k)
{
    switch (k) {
    case torch::EntryKind::Tensor:
        return "tensor";
    case torch::EntryKind::Dict:
        return "dict";
    case torch::EntryKind::List:
        return "list";
    case torch::EntryKind::Tuple:
        return "tuple";
    case torch::EntryKind::Set:
        return "set";
    case torch::EntryKind::Object:
        return "object";
    case torch::EntryKind::Value:
        return "value";
    case torch::EntryKind::Alias:
        return "alias";
    }
    return "?";
}

// Each global once, in the order the pickle first names it, with how often it does; a dangerous
// one is a warning too.
std::vector<ListedGlobal> globalsOf(const std::vector<pickle::GlobalRef>& globals,
                                    std::vector<std::string>& warnings)
{
    std::vector<ListedGlobal> out;
    std::map<std::pair<std::string, std::string>, size_t> index;
    for (const auto& g : globals) {
        const auto [it, fresh] = index.emplace(std::pair(g.module, g.name), out.size());
        if (fresh) out.push_back({g.module, g.name, pickle::classifyGlobal(g.module, g.name), 0});
        ++out[it->second].count;
    }
    for (const auto& g : out)
        if (g.safety == pickle::Safety::Dangerous)
            warnings.push_back(
                "dangerous global " + g.module + "." + g.name +
                " is referenced: loading this file with torch.load(weights_only=False) would run it");
    return out;
}

// A 0-d tensor's one value, as Python prints it ("4.0", "7", "True"): a scalar such as Adam's
// `step` says nothing without it, and one element costs one page of the mapped file. Empty for
// other tensors, dtypes without a number, and bytes that cannot be read.
std::string scalarText(const torch::TorchFile& f, const torch::Tensor& t)
{
    const auto type = scalarOf(t.dtype);
    if (!t.shape.empty() || t.storage < 0 || !type) return {};
    const uint32_t es = torch::elementSize(t.dtype);
    try {
        const io::Blob blob = f.storageBytes(t.storage);
        const uint64_t at = uint64_t(t.storageOffset) * es;
        if (t.storageOffset < 0 || at + es > blob.size()) return {};
        const double v = gpu::toDouble(*type, blob.bytes.data() + at);
        if (t.dtype == torch::DType::Bool) return v != 0 ? "True" : "False";
        if (!torch::info(t.dtype).isFloat) return std::to_string(int64_t(v));
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*g", t.dtype == torch::DType::Float64 ? 17 : 8, v);
        std::string text = buf;
        if (std::isfinite(v) && text.find_first_of(".e") == std::string::npos) text += ".0";
        return text;
    } catch (const Cancelled&) {
        throw; // a remote fetch stopped by the job: no listing with values left out
    } catch (const std::exception&) {
        return {};
    }
}

std::vector<ListedTensor> tensorsOf(const torch::TorchFile& f)
{
    std::vector<int> users(f.storages().size(), 0);
    for (const auto& t : f.tensors())
        if (t.storage >= 0 && t.aliasOf < 0) ++users[size_t(t.storage)];
    std::vector<ListedTensor> out;
    for (const auto& t : f.tensors()) {
        ListedTensor l;
        l.tensor = t;
        if (t.storage >= 0) {
            const auto& s = f.storages()[size_t(t.storage)];
            l.storage = s.key;
            l.storageBytes = s.nbytes;
            l.storageShared = users[size_t(t.storage)] > 1;
        }
        if (t.aliasOf >= 0) l.aliasOf = f.tensors()[size_t(t.aliasOf)].path;
        l.value = scalarText(f, t);
        out.push_back(std::move(l));
    }
    return out;
}

FileListing listTorch(const torch::TorchFile& f)
{
    FileListing l;
    l.file = f.path();
    l.format = f.formatName();
    l.protocol = f.protocol();
    l.fileSize = f.fileSize();
    l.warnings = f.warnings();
    l.tensors = tensorsOf(f);
    l.storages = f.storages();
    l.globals = globalsOf(f.globals(), l.warnings);
    l.entries = f.entries();
    // Computed from the pickle and zip directory alone, like everything above.
    l.bloat = analyzeBloat(f);
    return l;
}

FileListing listSafetensors(const safetensors::SafetensorsFile& f)
{
    FileListing l;
    l.file = f.path();
    l.format = "safetensors";
    l.fileSize = f.file()->size();
    l.metadata = f.metadata();
    for (const auto& t : f.tensors()) {
        ListedTensor lt;
        lt.tensor.path = t.name;
        lt.tensor.dtype = t.dtype;
        lt.tensor.shape = t.shape;
        lt.tensor.stride.assign(t.shape.size(), 1); // row-major, as safetensors stores every tensor
        for (size_t i = t.shape.size(); i-- > 1;)
            lt.tensor.stride[i - 1] = lt.tensor.stride[i] * std::max<int64_t>(t.shape[i], 1);
        lt.storage = t.name;
        lt.storageBytes = t.end - t.begin;
        torch::Entry e;
        e.path = e.name = t.name;
        e.depth = 1;
        e.kind = torch::EntryKind::Tensor;
        e.type = torch::name(t.dtype);
        e.tensor = int(l.tensors.size());
        l.entries.push_back(std::move(e));
        l.tensors.push_back(std::move(lt));
    }
    return l;
}

ordered_json tensorJson(const ListedTensor& l, bool safetensors)
{
    const torch::Tensor& t = l.tensor;
    ordered_json j;
    j["path"] = t.path;
    j["dtype"] = torch::name(t.dtype);
    j["shape"] = t.shape;
    j["stride"] = t.stride;
    j["storage_offset"] = t.storageOffset;
    j["storage"] = l.storage.empty() ? ordered_json(nullptr) : ordered_json(l.storage);
    j["storage_nbytes"] = l.storageBytes;
    j["requires_grad"] = t.requiresGrad;
    j["nbytes"] = safetensors ? l.storageBytes : t.nbytes();
    if (t.isParameter) j["parameter"] = true;
    if (!t.subclass.empty()) j["subclass"] = t.subclass;
    if (!t.note.empty()) j["note"] = t.note;
    if (!l.aliasOf.empty()) j["alias_of"] = l.aliasOf;
    if (!l.value.empty()) j["value"] = l.value;
    if (l.storageShared) j["storage_shared"] = true;
    return j;
}

ordered_json entryJson(const torch::Entry& e)
{
    ordered_json j{{"path", e.path}, {"depth", e.depth}, {"kind", entryKindName(e.kind)}, {"type", e.type}};
    if (!e.summary.empty()) j["summary"] = e.summary;
    if (e.tensor >= 0) j["tensor"] = e.tensor;
    return j;
}

ordered_json bloatJson(const FileBloat& b, const FileListing& l)
{
    ordered_json j;
    j["file_bytes"] = b.fileBytes;
    j["storage_bytes"] = b.storageBytes;
    j["used_bytes"] = b.usedBytes;
    j["reclaimable_bytes"] = b.reclaimableBytes();
    j["overhead_bytes"] = b.overheadBytes;
    j["storages"] = ordered_json::array();
    for (const auto& s : b.storages) {
        ordered_json e;
        e["key"] = l.storages[size_t(s.storage)].key;
        e["nbytes"] = s.nbytes;
        e["used_bytes"] = s.usedBytes;
        if (s.wholeUse) e["whole"] = true;
        if (s.approximate) e["approximate"] = true;
        e["tensors"] = ordered_json::array();
        for (int t : s.tensors)
            e["tensors"].push_back(l.tensors[size_t(t)].tensor.path);
        j["storages"].push_back(std::move(e));
    }
    return j;
}

} // namespace

FileListing listFile(const layout::TensorFile& file)
{
    return file.torch() ? listTorch(*file.torch()) : listSafetensors(*file.safetensors());
}

FileListing listFile(const std::string& path)
{
    switch (detect(path)) {
    case FileKind::Safetensors:
        return listSafetensors(*safetensors::SafetensorsFile::open(path));
    case FileKind::TorchZip:
    case FileKind::TorchLegacy:
    case FileKind::Pickle: // legacy, or says why it is not
        return listTorch(*torch::TorchFile::open(path));
    case FileKind::Unknown:
        break;
    }
    // Legacy files saved with an unusual pickle protocol do not start with the usual magic bytes.
    // When that reading fails too, its reason is kept: for a damaged legacy file it is the one
    // that matters.
    try {
        return listTorch(*torch::TorchFile::open(path));
    } catch (const Error& e) {
        throw Error(
            "not a PyTorch checkpoint or safetensors file (unrecognised content; as a legacy torch file: " +
                e.message() + ")",
            path, e.offset());
    }
}

ordered_json toJson(const FileListing& l)
{
    const bool st = l.format == "safetensors";
    ordered_json doc;
    doc["file"] = l.file;
    doc["format"] = l.format;
    if (l.protocol) doc["protocol"] = *l.protocol;
    doc["file_size"] = l.fileSize;
    if (st) doc["metadata"] = l.metadata;
    ordered_json tensors = ordered_json::array();
    for (const auto& t : l.tensors)
        tensors.push_back(tensorJson(t, st));
    doc["tensors"] = std::move(tensors);
    if (!st) {
        ordered_json storages = ordered_json::array();
        for (const auto& s : l.storages)
            storages.push_back({{"key", s.key},
                                {"dtype", torch::name(s.dtype)},
                                {"nbytes", s.nbytes},
                                {"location", s.location},
                                {"record", s.record}});
        doc["storages"] = std::move(storages);
        ordered_json globals = ordered_json::array();
        for (const auto& g : l.globals)
            globals.push_back({{"module", g.module},
                               {"name", g.name},
                               {"safety", pickle::safetyName(g.safety)},
                               {"count", g.count}});
        doc["globals"] = std::move(globals);
    }
    ordered_json entries = ordered_json::array();
    for (const auto& e : l.entries)
        entries.push_back(entryJson(e));
    doc["entries"] = std::move(entries);
    if (l.bloat) doc["bloat"] = bloatJson(*l.bloat, l);
    doc["warnings"] = l.warnings;
    return doc;
}

} // namespace ckpt::ops
