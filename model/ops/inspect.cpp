#include "ops/inspect.h"

#include "cast.h"
#include "layout/family.h"
#include "ops/bloat.h"
#include "ops/detect.h"
#include "ops/tensor_source.h"
#include "pickle/safety.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
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
    } catch (const std::exception&) {
        return {};
    }
}

ordered_json describeTorch(const torch::TorchFile* f)
{
    const std::string& path = f->path();
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
        if (const std::string v = scalarText(*f, t); !v.empty()) j["value"] = v;
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
    // Computed from the pickle and zip directory alone, like everything above.
    doc["bloat"] = bloatJson(analyzeBloat(*f), *f);
    doc["warnings"] = std::move(warnings);
    return doc;
}

ordered_json inspectTorch(const std::string& path)
{
    return describeTorch(torch::TorchFile::open(path).get());
}

ordered_json describeSafetensors(const safetensors::SafetensorsFile* f)
{
    const std::string& path = f->path();
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

ordered_json inspectSafetensors(const std::string& path)
{
    return describeSafetensors(safetensors::SafetensorsFile::open(path).get());
}

std::string joinInts(const ordered_json& a)
{
    std::string s;
    for (size_t i = 0; i < a.size(); ++i)
        s += (i ? ", " : "") + std::to_string(a[i].get<int64_t>());
    return s;
}

} // namespace

ordered_json inspectFile(const layout::TensorFile& file)
{
    return file.torch() ? describeTorch(file.torch()) : describeSafetensors(file.safetensors());
}

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
    // When that reading fails too, its reason is kept: for a damaged legacy file it is the one
    // that matters.
    try {
        return inspectTorch(path);
    } catch (const Error& e) {
        throw Error(
            "not a PyTorch checkpoint or safetensors file (unrecognised content; as a legacy torch file: " +
                e.message() + ")",
            path, e.offset());
    }
}

namespace {

// The summary line and the storages that waste the most, largest first.
void printBloat(const ordered_json& b, std::ostream& out)
{
    const uint64_t storage = b["storage_bytes"].get<uint64_t>(), used = b["used_bytes"].get<uint64_t>();
    out << "bytes: file " << humanBytes(b["file_bytes"].get<uint64_t>()) << ", storages "
        << humanBytes(storage) << ", used by tensors " << humanBytes(used) << ", overhead "
        << humanBytes(b["overhead_bytes"].get<uint64_t>());
    if (storage > used)
        out << "; bloat " << humanBytes(storage - used) << " (" << (storage - used) * 100 / storage
            << "% of the storages; `ckpt slim` writes a copy without it)";
    out << "\n";
    std::vector<const ordered_json*> wasteful;
    for (const auto& s : b["storages"])
        if (s["used_bytes"].get<uint64_t>() < s["nbytes"].get<uint64_t>()) wasteful.push_back(&s);
    std::sort(wasteful.begin(), wasteful.end(), [](const ordered_json* x, const ordered_json* y) {
        return (*x)["nbytes"].get<uint64_t>() - (*x)["used_bytes"].get<uint64_t>() >
               (*y)["nbytes"].get<uint64_t>() - (*y)["used_bytes"].get<uint64_t>();
    });
    for (size_t i = 0; i < wasteful.size() && i < 10; ++i) {
        const auto& s = *wasteful[i];
        const uint64_t n = s["nbytes"].get<uint64_t>(), u = s["used_bytes"].get<uint64_t>();
        out << "  storage " << s["key"].get<std::string>() << ": " << humanBytes(n) << ", its "
            << s["tensors"].size() << " view(s) use " << humanBytes(u) << " (" << (n ? u * 100 / n : 0)
            << "%)\n";
    }
    if (wasteful.size() > 10)
        out << "  ... and " << wasteful.size() - 10 << " more storages with unused bytes\n";
}

} // namespace

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
    if (doc.contains("bloat")) printBloat(doc["bloat"], out);
    if (doc.contains("other_files")) {
        out << "other files (named like checkpoints, but not):";
        for (const auto& f : doc["other_files"])
            out << "  " << f.get<std::string>();
        out << "\n";
    }
    for (const auto& w : doc["warnings"])
        out << "warning: " << w.get<std::string>() << "\n";
}

namespace {

ordered_json sourcesJson(const std::vector<layout::Source>& v)
{
    ordered_json a = ordered_json::array();
    for (const auto& s : v)
        a.push_back({{"file", std::filesystem::path(s.file.str()).filename().string()},
                     {"tensor", s.tensorPath.str()},
                     {"offset", s.offset},
                     {"count", s.count}});
    return a;
}

const char* paramKind(layout::Parameter::Kind k)
{
    return k == layout::Parameter::Kind::Buffer   ? "buffer"
           : k == layout::Parameter::Kind::Frozen ? "frozen"
                                                  : "trainable";
}

} // namespace

CheckpointListing listCheckpoint(const std::string& path, const std::string& tagName, bool sources)
{
    CheckpointListing l;
    l.opened = layout::openCheckpoint(path);
    l.sources = sources;
    const layout::Checkpoint& ck = l.opened->model;
    if (!tagName.empty() && !ck.find(tagName)) throw Error("no tag '" + tagName + "'", path);
    ordered_json& doc = l.doc;
    doc["root"] = ck.root;
    doc["family"] = ck.family;
    doc["tags"] = ordered_json::array();
    for (const auto& t : ck.tags) {
        if (!tagName.empty() && t.name != tagName) continue;
        ordered_json j;
        j["name"] = t.name;
        j["latest"] = t.latest;
        j["optimizer"] = t.optimizer;
        j["zero_stage"] = t.zeroStage;
        j["world_size"] = t.worldSize;
        j["mp_world_size"] = t.mpWorldSize;
        j["dtype"] = t.dtype;
        j["ds_version"] = t.dsVersion;
        j["global_steps"] = t.globalSteps;
        j["global_samples"] = t.globalSamples;
        j["skipped_steps"] = t.skippedSteps;
        if (!t.badges.empty()) j["badges"] = t.badges;
        if (!t.unreadable.empty()) j["unreadable"] = t.unreadable;
        if (!t.dir.empty() && t.unreadable.empty()) {
            static const CancelToken never;
            j["bloat"] = folderBloatJson(analyzeFolderBloat(t.dir, {}, never, l.opened->files.get()));
        }
        ordered_json files = ordered_json::array();
        for (const auto& f : t.files)
            files.push_back({{"name", f.name},
                             {"role", layout::roleName(f.role)},
                             {"dp_rank", f.dpRank},
                             {"mp_rank", f.mpRank},
                             {"size", f.size}});
        j["files"] = std::move(files);
        j["parameters"] = ordered_json::array();
        j["config"] = t.config;
        j["lr_scheduler"] = t.lrScheduler;
        j["client_state"] = t.clientState;
        j["warnings"] = t.warnings;
        doc["tags"].push_back(std::move(j));
        l.tags.push_back(&t);
    }
    if (!ck.otherFiles.empty()) doc["other_files"] = ck.otherFiles;
    doc["warnings"] = ck.warnings;
    return l;
}

ordered_json CheckpointListing::parameter(size_t tag, size_t index) const
{
    const layout::Parameter& p = tags.at(tag)->params.at(index);
    ordered_json pj{{"name", p.name},
                    {"kind", paramKind(p.kind)},
                    {"dtype", torch::name(p.dtype)},
                    {"shape", p.shape},
                    {"numel", p.numel()}};
    if (!p.tiedTo.empty()) pj["tied_to"] = p.tiedTo;
    if (p.group >= 0) pj["group"] = p.group, pj["group_offset"] = p.groupOffset;
    ordered_json parts = ordered_json::array();
    for (const auto& s : p.slices) {
        ordered_json sj{
            {"rank", s.rank}, {"offset", s.paramOffset}, {"length", s.length}, {"padding", s.padding}};
        if (sources) {
            sj["master"] = sourcesJson(s.master);
            for (const auto& [name, src] : s.states)
                sj["states"][name] = sourcesJson(src);
        }
        parts.push_back(std::move(sj));
    }
    pj["partitions"] = std::move(parts);
    return pj;
}

ordered_json inspectCheckpoint(const std::string& path, const std::string& tagName, bool sources)
{
    CheckpointListing l = listCheckpoint(path, tagName, sources);
    for (size_t t = 0; t < l.tags.size(); ++t)
        for (size_t i = 0; i < l.tags[t]->params.size(); ++i)
            l.doc["tags"][t]["parameters"].push_back(l.parameter(t, i));
    return l.doc;
}

void writeCheckpointJson(const CheckpointListing& l, std::ostream& out)
{
    // The document is dumped with a marker in place of each tag's parameters, which are then
    // written one by one at the marker's indentation: the same text as dump(2) of the whole.
    ordered_json doc = l.doc;
    for (size_t t = 0; t < l.tags.size(); ++t)
        doc["tags"][t]["parameters"] = "\x01parameters " + std::to_string(t);
    // Invalid UTF-8 (a pickled name with lone surrogates) becomes U+FFFD rather than an exception
    // half way through the output.
    constexpr auto replace = ordered_json::error_handler_t::replace;
    const std::string text = doc.dump(2, ' ', false, replace);
    size_t at = 0;
    for (size_t t = 0; t < l.tags.size(); ++t) {
        const std::string marker = "\"\\u0001parameters " + std::to_string(t) + "\"";
        const size_t m = text.find(marker, at);
        if (m == std::string::npos) throw Error("inspect: lost the parameters of a tag", l.doc["root"]);
        out.write(text.data() + at, std::streamsize(m - at));
        const size_t lineStart = text.rfind('\n', m) + 1;
        const std::string indent(text.find_first_not_of(' ', lineStart) - lineStart, ' ');
        const auto& params = l.tags[t]->params;
        if (params.empty()) {
            out << "[]";
        } else {
            out << "[\n";
            for (size_t i = 0; i < params.size(); ++i) {
                const std::string one = l.parameter(t, i).dump(2, ' ', false, replace);
                out << indent << "  ";
                for (char c : one) {
                    out.put(c);
                    if (c == '\n') out << indent << "  ";
                }
                out << (i + 1 < params.size() ? ",\n" : "\n");
            }
            out << indent << "]";
        }
        at = m + marker.size();
    }
    out.write(text.data() + at, std::streamsize(text.size() - at));
}

void printCheckpoint(const CheckpointListing& listing, std::ostream& out)
{
    const ordered_json& doc = listing.doc;
    size_t tagIndex = 0;
    out << doc["root"].get<std::string>() << "  (" << doc["family"].get<std::string>() << ", "
        << doc["tags"].size() << " tag" << (doc["tags"].size() == 1 ? "" : "s") << ")\n";
    for (const auto& t : doc["tags"]) {
        out << "tag " << t["name"].get<std::string>() << (t["latest"].get<bool>() ? "  [latest]" : "")
            << "\n";
        if (t["world_size"].get<int>() > 0 || t["optimizer"] == "none") {
            out << "  "
                << (t["optimizer"] == "bf16_optimizer"
                        ? std::string("BF16_Optimizer (ZeRO-1 layout)")
                        : "ZeRO stage " + std::to_string(t["zero_stage"].get<int>()))
                << ", world size " << t["world_size"].get<int>() << ", " << t["dtype"].get<std::string>()
                << ", DeepSpeed " << t["ds_version"].get<std::string>() << ", step "
                << t["global_steps"].get<int64_t>() << ", samples " << t["global_samples"].get<int64_t>()
                << "\n";
        }
        if (t.contains("badges")) {
            out << " ";
            for (const auto& [k, v] : t["badges"].items())
                out << " " << k << " " << (v.is_string() ? v.get<std::string>() : v.dump());
            out << "\n";
        }
        if (t.contains("unreadable")) { // said once, instead of an empty listing and a warning
            out << "  cannot be read: " << t["unreadable"].get<std::string>() << "\n";
            ++tagIndex;
            continue;
        }
        out << "  files:\n";
        for (const auto& f : t["files"])
            out << "    " << f["name"].get<std::string>() << "  " << f["role"].get<std::string>() << "  "
                << humanBytes(f["size"].get<uint64_t>()) << "\n";
        const auto& params = listing.tags[tagIndex++]->params;
        if (!params.empty()) out << "  parameters:\n";
        for (size_t i = 0; i < params.size(); ++i) {
            const ordered_json p = listing.parameter(tagIndex - 1, i);
            std::string shape;
            for (const auto& d : p["shape"])
                shape += (shape.empty() ? "" : ", ") + std::to_string(d.get<int64_t>());
            out << "    " << p["name"].get<std::string>() << "  " << p["kind"].get<std::string>() << " "
                << p["dtype"].get<std::string>() << "[" << shape << "]";
            if (p.contains("tied_to")) out << "  tied to " << p["tied_to"].get<std::string>();
            if (p.contains("group")) {
                out << "  ranks:";
                for (const auto& s : p["partitions"])
                    out << " " << s["rank"].get<int>() << ":" << s["offset"].get<uint64_t>() << "+"
                        << s["length"].get<uint64_t>()
                        << (s["padding"].get<uint64_t>()
                                ? "(pad " + std::to_string(s["padding"].get<uint64_t>()) + ")"
                                : "");
            }
            out << "\n";
        }
        if (t.contains("bloat")) {
            const auto& b = t["bloat"];
            out << "  bytes: " << humanBytes(b["file_bytes"].get<uint64_t>()) << " in " << b["files"].size()
                << " files:";
            for (const auto& [role, bytes] : b["bytes_by_role"].items())
                if (bytes.get<uint64_t>()) out << "  " << role << " " << humanBytes(bytes.get<uint64_t>());
            out << "\n";
            if (b["reclaimable_bytes"].get<uint64_t>())
                out << "  bloat: " << humanBytes(b["reclaimable_bytes"].get<uint64_t>())
                    << " of storage no tensor uses (`ckpt slim` writes a copy without it)\n";
        }
        if (!t["client_state"].empty()) out << "  client state: " << t["client_state"].dump() << "\n";
        for (const auto& w : t["warnings"])
            out << "  warning: " << w.get<std::string>() << "\n";
    }
    if (doc.contains("other_files")) {
        out << "other files (named like checkpoints, but not):";
        for (const auto& f : doc["other_files"])
            out << "  " << f.get<std::string>();
        out << "\n";
    }
    for (const auto& w : doc["warnings"])
        out << "warning: " << w.get<std::string>() << "\n";
}

} // namespace ckpt::ops
