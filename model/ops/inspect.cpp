#include "ops/inspect.h"

#include "cast.h"
#include "io/location.h"
#include "layout/family.h"
#include "ops/bloat.h"
#include "ops/detect.h"
#include "ops/file_listing.h"
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
    return toJson(listFile(file));
}

ordered_json inspectFile(const std::string& path)
{
    return toJson(listFile(path));
}

namespace {

// What a listing ends with, file or checkpoint: the files beside it that are no part of it, and
// its warnings.
void printOtherFilesAndWarnings(const ordered_json& doc, std::ostream& out)
{
    if (doc.contains("other_files")) {
        out << "other files (named like checkpoints, but not):";
        for (const auto& f : doc["other_files"])
            out << "  " << f.get<std::string>();
        out << "\n";
    }
    for (const auto& w : doc["warnings"])
        out << "warning: " << w.get<std::string>() << "\n";
}

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
    printOtherFilesAndWarnings(doc, out);
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

namespace {

// Every file of the tag as a file listing: those the opening parsed, from the opened checkpoint;
// a file that is no torch or safetensors file (a .distcp, a config) says why not.
ordered_json fileListings(const layout::Tag& t, const layout::FileSet& files)
{
    ordered_json out = ordered_json::array();
    for (const auto& f : t.files) {
        try {
            const auto parsed = files.find(f.path);
            out.push_back(toJson(parsed ? listFile(*parsed) : listFile(f.path)));
        } catch (const Error& e) {
            out.push_back({{"file", f.path}, {"error", e.what()}});
        }
    }
    return out;
}

// trainer_state.json as `ckpt inspect --json` gives it: the summary and every log entry, with
// the keys the Trainer uses (a value an entry lacks is left out; NaN and infinities are null).
ordered_json trainerStateJson(const layout::TrainingLog& s)
{
    ordered_json j;
    j["global_step"] = s.globalStep;
    j["epoch"] = s.epoch ? ordered_json(*s.epoch) : ordered_json();
    j["best_model_checkpoint"] =
        s.bestModelCheckpoint.empty() ? ordered_json() : ordered_json(s.bestModelCheckpoint);
    j["best_checkpoint"] =
        s.bestCheckpointName().empty() ? ordered_json() : ordered_json(s.bestCheckpointName());
    j["best_metric"] = s.bestMetric ? ordered_json(*s.bestMetric) : ordered_json();
    j["best_global_step"] = s.bestGlobalStep ? ordered_json(*s.bestGlobalStep) : ordered_json();
    ordered_json log = ordered_json::array();
    for (const auto& e : s.logHistory) {
        ordered_json x{{"step", e.step}};
        for (const auto& [key, v] : {std::pair{"epoch", e.epoch}, std::pair{"loss", e.loss},
                                     std::pair{"learning_rate", e.learningRate},
                                     std::pair{"grad_norm", e.gradNorm}, std::pair{"eval_loss", e.evalLoss}})
            if (v) x[key] = *v;
        for (const auto& [key, v] : e.other)
            x[key] = v;
        log.push_back(std::move(x));
    }
    j["log_history"] = std::move(log);
    return j;
}

// One line of what the run logged up to this tag: the first and last training loss, the last
// evaluation loss.
std::string trainerLogLine(const ordered_json& state)
{
    const ordered_json* first = nullptr;
    const ordered_json* last = nullptr;
    const ordered_json* eval = nullptr;
    for (const auto& e : state["log_history"]) {
        if (e.contains("loss") && e["loss"].is_number()) {
            if (!first) first = &e;
            last = &e;
        }
        if (e.contains("eval_loss") && e["eval_loss"].is_number()) eval = &e;
    }
    std::string line;
    char buf[96];
    if (first) {
        std::snprintf(buf, sizeof buf, "loss %.4g (step %lld) -> %.4g (step %lld)",
                      (*first)["loss"].get<double>(), (long long)(*first)["step"].get<int64_t>(),
                      (*last)["loss"].get<double>(), (long long)(*last)["step"].get<int64_t>());
        line += buf;
    }
    if (eval) {
        std::snprintf(buf, sizeof buf, "%seval_loss %.4g (step %lld)", line.empty() ? "" : ", ",
                      (*eval)["eval_loss"].get<double>(), (long long)(*eval)["step"].get<int64_t>());
        line += buf;
    }
    return line;
}

// The contract's badges: a DeepSpeed tag's pipeline stages and experts (typed in the model, and
// shown as its facts), then the family's own.
ordered_json badgesJson(const layout::Tag& t)
{
    ordered_json b = ordered_json::object();
    if (t.deepspeed && !t.deepspeed->pipelineStages.empty()) {
        ordered_json& list = b["pipeline_stages"] = ordered_json::array();
        for (const layout::PipelineStage& s : t.deepspeed->pipelineStages)
            list.push_back({{"stage", s.stage},
                            {"file", s.file},
                            {"first_rank", s.firstRank},
                            {"ranks", s.ranks},
                            {"layers", s.layers ? ordered_json::array({s.layers->first, s.layers->second})
                                                : ordered_json::array()}});
    }
    if (t.deepspeed && t.deepspeed->experts) {
        const layout::MoeExperts& e = *t.deepspeed->experts;
        b["experts"] = {
            {"num_experts", e.numExperts}, {"expert_files", e.expertFiles}, {"by_rank", e.byRank}};
    }
    for (const auto& [key, value] : t.badges.items())
        b[key] = value;
    return b;
}

// The bytes of a tag's folder; of its own files only when other tags lie below it (a Trainer
// run's final model at the top of the folder holding its checkpoints), else they would count twice.
FolderBloat tagBloat(const layout::Tag& t, const layout::Checkpoint& ck, const CancelToken& cancel,
                     const layout::FileSet* files)
{
    namespace fs = std::filesystem;
    const std::string below = t.dir + "/";
    if (std::none_of(ck.tags.begin(), ck.tags.end(),
                     [&](const layout::Tag& o) { return &o != &t && o.dir.rfind(below, 0) == 0; }))
        return analyzeFolderBloat(t.dir, {}, cancel, files, &ck);
    FolderBloat out;
    for (const io::FolderEntry& e :
         io::canList(t.dir) ? io::listFolder(t.dir) : std::vector<io::FolderEntry>()) {
        const std::string path = io::childPath(t.dir, e.name);
        std::error_code ec;
        if (e.folder || fs::is_symlink(path, ec)) continue;
        const FolderBloat one = analyzeFolderBloat(path, {}, cancel, files, &ck);
        for (size_t r = 0; r < kByteRoles; ++r)
            out.roleBytes[r] += one.roleBytes[r];
        out.fileBytes += one.fileBytes;
        out.storageBytes += one.storageBytes;
        out.usedBytes += one.usedBytes;
        out.files.insert(out.files.end(), one.files.begin(), one.files.end());
    }
    std::sort(out.files.begin(), out.files.end(),
              [](const FolderFile& a, const FolderFile& b) { return a.path < b.path; });
    return out;
}

} // namespace

CheckpointListing listCheckpoint(const std::string& path, const std::string& tagName, bool sources,
                                 bool entries)
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
        const layout::DeepSpeedTag& ds = layout::deepSpeedOrNone(t); // the contract's keys for every tag
        j["optimizer"] = ds.optimizer;
        j["zero_stage"] = ds.zeroStage;
        j["world_size"] = t.worldSize;
        j["mp_world_size"] = t.mpWorldSize;
        j["dtype"] = t.dtype;
        j["ds_version"] = ds.version;
        j["global_steps"] = t.globalSteps;
        j["global_samples"] = t.globalSamples;
        j["skipped_steps"] = t.skippedSteps;
        if (ordered_json badges = badgesJson(t); !badges.empty()) j["badges"] = std::move(badges);
        j["facts"] = ordered_json::array();
        for (const auto& f : t.facts)
            j["facts"].push_back({{"label", f.label}, {"value", f.value}});
        if (!t.unreadable.empty()) j["unreadable"] = t.unreadable;
        if (t.trainingLog) j["trainer_state"] = trainerStateJson(*t.trainingLog);
        if (!t.dir.empty() && t.unreadable.empty()) {
            static const CancelToken never;
            j["bloat"] = folderBloatJson(tagBloat(t, ck, never, l.opened->files.get()));
        }
        ordered_json files = ordered_json::array();
        for (const auto& f : t.files)
            files.push_back({{"name", f.name},
                             {"role", layout::roleName(f.role)},
                             {"dp_rank", f.dpRank},
                             {"mp_rank", f.mpRank},
                             {"size", f.size}});
        j["files"] = std::move(files);
        if ((entries || io::pathKind(path) == io::PathKind::File) && t.unreadable.empty())
            j["file_listings"] = fileListings(t, *l.opened->files);
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
    for (size_t i = 0; i < p.slices.size(); ++i) {
        const layout::RankSlice& s = p.slices[i];
        ordered_json sj{
            {"rank", s.rank}, {"offset", s.paramOffset}, {"length", s.length}, {"padding", s.padding}};
        if (sources) {
            sj["master"] = sourcesJson(s.master);
            for (const auto& st : p.state) // the partition's share of each state sliced as it is
                if (st.perSlice && i < st.slices.size() && !st.slices[i].master.empty())
                    sj["states"][st.name] = sourcesJson(st.slices[i].master);
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
        // What the family says of the tag, whatever the family.
        std::string facts;
        for (const auto& f : t["facts"])
            facts += (facts.empty() ? "  " : ", ") + f["label"].get<std::string>() + ": " +
                     f["value"].get<std::string>();
        if (!facts.empty()) out << facts << "\n";
        if (t.contains("trainer_state"))
            if (const std::string log = trainerLogLine(t["trainer_state"]); !log.empty())
                out << "  trainer log: " << log << "\n";
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
    printOtherFilesAndWarnings(doc, out);
}

} // namespace ckpt::ops
