#include "ops/inspect.h"

#include "ops/detect.h"
#include "pickle/safety.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <map>

namespace ckpt::ops {

using nlohmann::ordered_json;

std::string humanBytes(uint64_t n)
{
    const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = double(n);
    int u = 0;
    while (v >= 1024 && u < 4)
        v /= 1024, ++u;
    char buf[32];
    std::snprintf(buf, sizeof buf, u ? "%.1f %s" : "%.0f %s", v, units[u]);
    return buf;
}

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

ordered_json globalsJson(const std::vector<pickle::GlobalRef>& globals, ordered_json& warnings)
{
    std::map<std::pair<std::string, std::string>, int> counts;
    std::vector<std::pair<std::string, std::string>> order;
    for (const auto& g : globals) {
        auto key = std::pair(g.module, g.name);
        if (counts[key]++ == 0) order.push_back(key);
    }
    ordered_json out = ordered_json::array();
    for (const auto& key : order) {
        const auto s = pickle::classifyGlobal(key.first, key.second);
        out.push_back({{"module", key.first},
                       {"name", key.second},
                       {"safety", pickle::safetyName(s)},
                       {"count", counts[key]}});
        if (s == pickle::Safety::Dangerous)
            warnings.push_back(
                "dangerous global " + key.first + "." + key.second +
                " is referenced: loading this file with torch.load(weights_only=False) would run it");
    }
    return out;
}

ordered_json inspectTorch(const std::string& path)
{
    const auto f = torch::TorchFile::open(path);
    ordered_json doc;
    doc["file"] = path;
    doc["format"] = f->formatName();
    doc["protocol"] = f->protocol();
    doc["file_size"] = f->fileSize();
    ordered_json warnings = ordered_json::array();
    for (const auto& w : f->warnings())
        warnings.push_back(w);
    ordered_json tensors = ordered_json::array();
    for (const auto& t : f->tensors()) {
        ordered_json j;
        j["path"] = t.path;
        j["dtype"] = torch::name(t.dtype);
        j["shape"] = t.shape;
        j["stride"] = t.stride;
        j["storage_offset"] = t.storageOffset;
        if (t.storage >= 0) {
            const auto& s = f->storages()[size_t(t.storage)];
            j["storage"] = s.key;
            j["storage_nbytes"] = s.nbytes;
        } else {
            j["storage"] = nullptr;
            j["storage_nbytes"] = 0;
        }
        j["requires_grad"] = t.requiresGrad;
        j["nbytes"] = t.nbytes();
        if (t.isParameter) j["parameter"] = true;
        if (!t.subclass.empty()) j["subclass"] = t.subclass;
        if (!t.note.empty()) j["note"] = t.note;
        if (t.aliasOf >= 0) j["alias_of"] = f->tensors()[size_t(t.aliasOf)].path;
        tensors.push_back(std::move(j));
    }
    std::vector<int> users(f->storages().size(), 0);
    for (const auto& t : f->tensors())
        if (t.storage >= 0 && t.aliasOf < 0) ++users[size_t(t.storage)];
    for (size_t i = 0; i < f->tensors().size(); ++i) {
        const auto& t = f->tensors()[i];
        if (t.storage >= 0 && users[size_t(t.storage)] > 1) tensors[i]["storage_shared"] = true;
    }
    ordered_json storages = ordered_json::array();
    for (const auto& s : f->storages())
        storages.push_back({{"key", s.key},
                            {"dtype", torch::name(s.dtype)},
                            {"nbytes", s.nbytes},
                            {"location", s.location},
                            {"record", s.record}});
    ordered_json entries = ordered_json::array();
    for (const auto& e : f->entries()) {
        ordered_json j{
            {"path", e.path}, {"depth", e.depth}, {"kind", entryKindName(e.kind)}, {"type", e.type}};
        if (!e.summary.empty()) j["summary"] = e.summary;
        if (e.tensor >= 0) j["tensor"] = e.tensor;
        entries.push_back(std::move(j));
    }
    doc["tensors"] = std::move(tensors);
    doc["storages"] = std::move(storages);
    doc["globals"] = globalsJson(f->globals(), warnings);
    doc["entries"] = std::move(entries);
    doc["warnings"] = std::move(warnings);
    return doc;
}

ordered_json inspectSafetensors(const std::string& path)
{
    const auto f = safetensors::SafetensorsFile::open(path);
    ordered_json doc;
    doc["file"] = path;
    doc["format"] = "safetensors";
    doc["file_size"] = f->file()->size();
    doc["metadata"] = f->metadata();
    ordered_json tensors = ordered_json::array();
    ordered_json entries = ordered_json::array();
    for (const auto& t : f->tensors()) {
        std::vector<int64_t> stride(t.shape.size(), 1);
        for (size_t i = t.shape.size(); i-- > 1;)
            stride[i - 1] = stride[i] * std::max<int64_t>(t.shape[i], 1);
        entries.push_back({{"path", t.name},
                           {"depth", 1},
                           {"kind", "tensor"},
                           {"type", torch::name(t.dtype)},
                           {"tensor", tensors.size()}});
        tensors.push_back({{"path", t.name},
                           {"dtype", torch::name(t.dtype)},
                           {"shape", t.shape},
                           {"stride", stride},
                           {"storage_offset", 0},
                           {"storage", t.name},
                           {"storage_nbytes", t.end - t.begin},
                           {"requires_grad", false},
                           {"nbytes", t.end - t.begin}});
    }
    doc["tensors"] = std::move(tensors);
    doc["entries"] = std::move(entries);
    doc["warnings"] = ordered_json::array();
    return doc;
}

std::string joinInts(const ordered_json& a)
{
    std::string s;
    for (size_t i = 0; i < a.size(); ++i)
        s += (i ? ", " : "") + std::to_string(a[i].get<int64_t>());
    return s;
}

} // namespace

ordered_json inspectFile(const std::string& path)
{
    switch (detect(path)) {
    case FileKind::TorchZip:
    case FileKind::TorchLegacy:
        return inspectTorch(path);
    case FileKind::Safetensors:
        return inspectSafetensors(path);
    case FileKind::Pickle:
        return inspectTorch(path); // legacy, or says why it is not
    case FileKind::Unknown:
        break;
    }
    // Legacy files saved with an unusual pickle protocol do not start with the usual magic bytes.
    try {
        return inspectTorch(path);
    } catch (const Error&) {
        throw Error("not a PyTorch checkpoint or safetensors file (unrecognised content)", path);
    }
}

void printInspect(const ordered_json& doc, std::ostream& out)
{
    const auto& tensors = doc["tensors"];
    uint64_t total = 0;
    for (const auto& t : tensors)
        total += t["nbytes"].get<uint64_t>();
    out << doc["file"].get<std::string>() << "  (" << doc["format"].get<std::string>();
    if (doc.contains("protocol")) out << ", pickle protocol " << doc["protocol"].get<int>();
    out << ", " << tensors.size() << " tensors, " << humanBytes(total) << " of tensor data, file "
        << humanBytes(doc["file_size"].get<uint64_t>()) << ")\n";
    for (const auto& e : doc["entries"]) {
        const int depth = e["depth"].get<int>();
        std::string line(size_t(depth) * 2, ' ');
        const std::string path = e["path"].get<std::string>();
        const auto slash = path.rfind('/');
        line += path.empty() ? "<root>" : slash == std::string::npos ? path : path.substr(slash + 1);
        line += "  ";
        const std::string kind = e["kind"].get<std::string>();
        if (kind == "tensor") {
            const auto& t = tensors[e["tensor"].get<size_t>()];
            line += "tensor " + t["dtype"].get<std::string>() + "[" + joinInts(t["shape"]) + "]";
            line += "  " + humanBytes(t["nbytes"].get<uint64_t>());
            if (!t["storage"].is_null() && doc["format"] != "safetensors") {
                line += "  storage " + t["storage"].get<std::string>();
                if (t["storage_offset"].get<int64_t>())
                    line += "+" + std::to_string(t["storage_offset"].get<int64_t>());
                line += " stride(" + joinInts(t["stride"]) + ")";
                if (t.value("storage_shared", false))
                    line += "  shared storage";
                else if (t["storage_nbytes"].get<uint64_t>() > t["nbytes"].get<uint64_t>())
                    line += "  view into " + humanBytes(t["storage_nbytes"].get<uint64_t>()) + " storage";
            }
            if (t.value("requires_grad", false)) line += "  requires_grad";
            if (t.contains("note")) line += "  [" + t["note"].get<std::string>() + "]";
            if (t.contains("alias_of")) line += "  (same tensor as " + t["alias_of"].get<std::string>() + ")";
        } else {
            line += e["type"].get<std::string>();
            if (e.contains("summary")) line += "  " + e["summary"].get<std::string>();
        }
        out << line << "\n";
    }
    for (const auto& w : doc["warnings"])
        out << "warning: " << w.get<std::string>() << "\n";
}

} // namespace ckpt::ops
