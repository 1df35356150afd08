#include "ops/inspect.h"

#include "cast.h"
#include "io/location.h"
#include "layout/family.h"
#include "ops/bloat.h"
#include "ops/describe_json.h"
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

std::string joinInts(const std::vector<int64_t>& a)
{
    std::string s;
    for (size_t i = 0; i < a.size(); ++i)
        s += (i ? ", " : "") + std::to_string(a[i]);
    return s;
}

// What a listing ends with, file or checkpoint: the files beside it that are no part of it, and
// its warnings.
void printOtherFilesAndWarnings(const std::vector<std::string>& otherFiles,
                                const std::vector<std::string>& warnings, std::ostream& out)
{
    if (!otherFiles.empty()) {
        out << "other files (named like checkpoints, but not):";
        for (const auto& f : otherFiles)
            out << "  " << f;
        out << "\n";
    }
    for (const auto& w : warnings)
        out << "warning: " << w << "\n";
}

// The summary line and the storages that waste the most, largest first.
void printBloat(const FileBloat& b, const FileListing& l, std::ostream& out)
{
    const uint64_t storage = b.storageBytes, used = b.usedBytes;
    out << "bytes: file " << humanBytes(b.fileBytes) << ", storages " << humanBytes(storage)
        << ", used by tensors " << humanBytes(used) << ", overhead " << humanBytes(b.overheadBytes);
    if (storage > used)
        out << "; bloat " << humanBytes(storage - used) << " (" << (storage - used) * 100 / storage
            << "% of the storages; `ckpt slim` writes a copy without it)";
    out << "\n";
    std::vector<const StorageBloat*> wasteful;
    for (const auto& s : b.storages)
        if (s.usedBytes < s.nbytes) wasteful.push_back(&s);
    std::sort(wasteful.begin(), wasteful.end(), [](const StorageBloat* x, const StorageBloat* y) {
        return x->nbytes - x->usedBytes > y->nbytes - y->usedBytes;
    });
    for (size_t i = 0; i < wasteful.size() && i < 10; ++i) {
        const StorageBloat& s = *wasteful[i];
        out << "  storage " << l.storages[size_t(s.storage)].key << ": " << humanBytes(s.nbytes) << ", its "
            << s.tensors.size() << " view(s) use " << humanBytes(s.usedBytes) << " ("
            << (s.nbytes ? s.usedBytes * 100 / s.nbytes : 0) << "%)\n";
    }
    if (wasteful.size() > 10)
        out << "  ... and " << wasteful.size() - 10 << " more storages with unused bytes\n";
}

// One tensor's line of the tree: dtype, shape and bytes, then where they lie in a torch file.
std::string tensorLine(const ListedTensor& l, bool safetensors)
{
    const torch::Tensor& t = l.tensor;
    const uint64_t nbytes = listedBytes(l, safetensors);
    std::string line = "tensor " + std::string(torch::name(t.dtype)) + "[" + joinInts(t.shape) + "]";
    line += "  " + humanBytes(nbytes);
    if (!l.storage.empty() && !safetensors) {
        line += "  storage " + l.storage;
        if (t.storageOffset) line += "+" + std::to_string(t.storageOffset);
        line += " stride(" + joinInts(t.stride) + ")";
        if (l.storageShared)
            line += "  shared storage";
        else if (l.storageBytes > nbytes)
            line += "  view into " + humanBytes(l.storageBytes) + " storage";
    }
    if (t.requiresGrad) line += "  requires_grad";
    if (!t.note.empty()) line += "  [" + t.note + "]";
    if (!l.aliasOf.empty()) line += "  (same tensor as " + l.aliasOf + ")";
    return line;
}

} // namespace

void printInspect(const FileListing& l, std::ostream& out)
{
    const bool safetensors = l.format == "safetensors";
    uint64_t total = 0;
    for (const auto& t : l.tensors)
        total += listedBytes(t, safetensors);
    out << l.file << "  (" << l.format;
    if (l.protocol) out << ", pickle protocol " << *l.protocol;
    out << ", " << l.tensors.size() << " tensors, " << humanBytes(total) << " of tensor data, file "
        << humanBytes(l.fileSize) << ")\n";
    for (const auto& e : l.entries) {
        std::string line(size_t(e.depth) * 2, ' ');
        const auto slash = e.path.rfind('/');
        line += e.path.empty() ? "<root>" : slash == std::string::npos ? e.path : e.path.substr(slash + 1);
        line += "  ";
        if (e.kind == torch::EntryKind::Tensor) {
            line += tensorLine(l.tensors[size_t(e.tensor)], safetensors);
        } else {
            line += e.type;
            if (!e.summary.empty()) line += "  " + e.summary;
        }
        out << line << "\n";
    }
    if (l.bloat) printBloat(*l.bloat, l, out);
    printOtherFilesAndWarnings({}, l.warnings, out);
}

namespace {

std::vector<ListedSource> listedSources(const std::vector<layout::Source>& v)
{
    std::vector<ListedSource> out;
    for (const auto& s : v)
        out.push_back(
            {std::filesystem::path(s.file.str()).filename().string(), s.tensorPath.str(), s.offset, s.count});
    return out;
}

const char* paramKind(layout::Parameter::Kind k)
{
    return k == layout::Parameter::Kind::Buffer   ? "buffer"
           : k == layout::Parameter::Kind::Frozen ? "frozen"
                                                  : "trainable";
}

} // namespace

namespace {

// Every file of the tag as a file listing: those the opening parsed, from the opened checkpoint
// (a file of items, a DCP .distcp, as its items); a file that is no torch or safetensors file (a
// config) says why not.
std::vector<ordered_json> fileListings(const layout::Tag& t, const layout::FileSet& files)
{
    std::vector<ordered_json> out;
    for (const auto& f : t.files) {
        try {
            const auto parsed = files.find(f.path);
            out.push_back(toJson(!f.items.empty() ? listItems(f, files)
                                 : parsed         ? listFile(*parsed)
                                                  : listFile(f.path)));
        } catch (const Error& e) {
            out.push_back({{"file", f.path}, {"error", e.what()}});
        }
    }
    return out;
}

} // namespace

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

namespace {

// One line of what the run logged up to this tag: the first and last training loss, the last
// evaluation loss.
std::string trainerLogLine(const layout::TrainingLog& log)
{
    const layout::TrainingLogEntry* first = nullptr;
    const layout::TrainingLogEntry* last = nullptr;
    const layout::TrainingLogEntry* eval = nullptr;
    for (const auto& e : log.logHistory) {
        if (e.loss) {
            if (!first) first = &e;
            last = &e;
        }
        if (e.evalLoss) eval = &e;
    }
    std::string line;
    char buf[96];
    if (first) {
        std::snprintf(buf, sizeof buf, "loss %.4g (step %lld) -> %.4g (step %lld)", *first->loss,
                      (long long)first->step, *last->loss, (long long)last->step);
        line += buf;
    }
    if (eval) {
        std::snprintf(buf, sizeof buf, "%seval_loss %.4g (step %lld)", line.empty() ? "" : ", ",
                      *eval->evalLoss, (long long)eval->step);
        line += buf;
    }
    return line;
}

// The contract's badges: a DeepSpeed tag's pipeline stages and experts (typed in the model, and
// shown as its facts), then the family's facts that are badges too.
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
    for (const layout::Fact& f : t.facts)
        if (!f.key.empty()) b[f.key] = f.json;
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

TagHeader tagHeader(const layout::Tag& t)
{
    const layout::DeepSpeedTag& ds = layout::deepSpeedOrNone(t);
    return {t.name,  t.latest,   ds.optimizer,  ds.zeroStage,    t.worldSize,   t.mpWorldSize,
            t.dtype, ds.version, t.globalSteps, t.globalSamples, t.skippedSteps};
}

namespace {

// A tag as the listing gives it, all but its parameters (made one at a time when written).
TagListing tagListing(const layout::Tag& t, const CheckpointListing& l, bool withListings)
{
    TagListing j;
    j.header = tagHeader(t);
    j.badges = badgesJson(t);
    for (const auto& f : t.facts)
        j.facts.push_back({f.label, f.value});
    j.unreadable = t.unreadable;
    j.trainerState = t.trainingLog;
    if (!t.dir.empty() && t.unreadable.empty()) {
        static const CancelToken never;
        j.bloat = tagBloat(t, l.opened->model, never, l.opened->files.get());
    }
    for (const auto& f : t.files)
        j.files.push_back({f.name, layout::roleName(f.role), f.dpRank, f.mpRank, f.size});
    if (withListings && t.unreadable.empty()) j.fileListings = fileListings(t, *l.opened->files);
    j.config = t.config;
    j.lrScheduler = t.lrScheduler;
    j.clientState = t.clientState;
    j.warnings = t.warnings;
    return j;
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
    l.root = ck.root;
    l.family = ck.family;
    const bool listings = entries || io::pathKind(path) == io::PathKind::File;
    for (const auto& t : ck.tags) {
        if (!tagName.empty() && t.name != tagName) continue;
        l.tags.push_back(tagListing(t, l, listings));
        l.models.push_back(&t);
    }
    l.otherFiles = ck.otherFiles;
    l.warnings = ck.warnings;
    return l;
}

ListedParameter CheckpointListing::parameter(size_t tag, size_t index) const
{
    const layout::Parameter& p = models.at(tag)->params.at(index);
    ListedParameter pj;
    pj.name = p.name;
    pj.kind = paramKind(p.kind);
    pj.dtype = torch::name(p.dtype);
    pj.shape = p.shape;
    pj.numel = p.numel();
    pj.tiedTo = p.tiedTo;
    pj.group = p.group;
    pj.groupOffset = p.groupOffset;
    for (const layout::OptimizerState& st : p.state)
        pj.optimizerState.push_back({st.name, std::string(torch::name(st.dtype)), st.shape});
    for (size_t i = 0; i < p.slices.size(); ++i) {
        const layout::RankSlice& s = p.slices[i];
        ListedPartition sj;
        sj.rank = s.rank;
        sj.offset = s.paramOffset;
        sj.length = s.length;
        sj.padding = s.padding;
        if (sources) {
            sj.master = listedSources(s.master);
            Keyed<std::vector<ListedSource>> states;
            for (const auto& st : p.state) // the partition's share of each state sliced as it is
                if (st.perSlice && i < st.slices.size() && !st.slices[i].master.empty())
                    states.items.emplace_back(st.name, listedSources(st.slices[i].master));
            if (!states.items.empty()) sj.states = std::move(states);
        }
        pj.partitions.push_back(std::move(sj));
    }
    return pj;
}

ordered_json toJson(const CheckpointListing& listing)
{
    return describedJson(listing);
}

ordered_json inspectCheckpoint(const std::string& path, const std::string& tagName, bool sources)
{
    CheckpointListing l = listCheckpoint(path, tagName, sources);
    for (size_t t = 0; t < l.tags.size(); ++t)
        for (size_t i = 0; i < l.models[t]->params.size(); ++i)
            l.tags[t].parameters.push_back(l.parameter(t, i));
    return toJson(l);
}

void writeCheckpointJson(const CheckpointListing& l, std::ostream& out)
{
    // The document is dumped with a marker in place of each tag's parameters, which are then
    // written one by one at the marker's indentation: the same text as dump(2) of the whole.
    ordered_json doc = toJson(l);
    for (size_t t = 0; t < l.tags.size(); ++t)
        doc.at("tags").at(t).at("parameters") = "\x01parameters " + std::to_string(t);
    // Invalid UTF-8 (a pickled name with lone surrogates) becomes U+FFFD rather than an exception
    // half way through the output.
    constexpr auto replace = ordered_json::error_handler_t::replace;
    const std::string text = doc.dump(2, ' ', false, replace);
    size_t at = 0;
    for (size_t t = 0; t < l.tags.size(); ++t) {
        const std::string marker = "\"\\u0001parameters " + std::to_string(t) + "\"";
        const size_t m = text.find(marker, at);
        if (m == std::string::npos) throw Error("inspect: lost the parameters of a tag", l.root);
        out.write(text.data() + at, std::streamsize(m - at));
        const size_t lineStart = text.rfind('\n', m) + 1;
        const std::string indent(text.find_first_not_of(' ', lineStart) - lineStart, ' ');
        const auto& params = l.models[t]->params;
        if (params.empty()) {
            out << "[]";
        } else {
            out << "[\n";
            for (size_t i = 0; i < params.size(); ++i) {
                const std::string one = describedJson(l.parameter(t, i)).dump(2, ' ', false, replace);
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

namespace {

// A parameter's line: kind, dtype and shape, and for a flat group its ranks' ranges.
void printParameter(const ListedParameter& p, std::ostream& out)
{
    out << "    " << p.name << "  " << p.kind << " " << p.dtype << "[" << joinInts(p.shape) << "]";
    if (!p.tiedTo.empty()) out << "  tied to " << p.tiedTo;
    if (p.group >= 0) {
        out << "  ranks:";
        for (const auto& s : p.partitions)
            out << " " << s.rank << ":" << s.offset << "+" << s.length
                << (s.padding ? "(pad " + std::to_string(s.padding) + ")" : "");
    }
    out << "\n";
}

void printTagBloat(const FolderBloat& b, std::ostream& out)
{
    out << "  bytes: " << humanBytes(b.fileBytes) << " in " << b.files.size() << " files:";
    for (size_t r = 0; r < kByteRoles; ++r)
        if (b.roleBytes[r]) out << "  " << roleName(ByteRole(r)) << " " << humanBytes(b.roleBytes[r]);
    out << "\n";
    if (b.reclaimableBytes())
        out << "  bloat: " << humanBytes(b.reclaimableBytes())
            << " of storage no tensor uses (`ckpt slim` writes a copy without it)\n";
}

void printTag(const CheckpointListing& listing, size_t index, std::ostream& out)
{
    const TagListing& t = listing.tags[index];
    out << "tag " << t.header.name << (t.header.latest ? "  [latest]" : "") << "\n";
    // What the family says of the tag, whatever the family.
    std::string facts;
    for (const auto& f : t.facts)
        facts += (facts.empty() ? "  " : ", ") + f.label + ": " + f.value;
    if (!facts.empty()) out << facts << "\n";
    if (t.trainerState)
        if (const std::string log = trainerLogLine(*t.trainerState); !log.empty())
            out << "  trainer log: " << log << "\n";
    if (!t.unreadable.empty()) { // said once, instead of an empty listing and a warning
        out << "  cannot be read: " << t.unreadable << "\n";
        return;
    }
    out << "  files:\n";
    for (const auto& f : t.files)
        out << "    " << f.name << "  " << f.role << "  " << humanBytes(f.size) << "\n";
    const size_t params = listing.models[index]->params.size();
    if (params) out << "  parameters:\n";
    for (size_t i = 0; i < params; ++i)
        printParameter(listing.parameter(index, i), out);
    if (t.bloat) printTagBloat(*t.bloat, out);
    if (!t.clientState.empty()) out << "  client state: " << t.clientState.dump() << "\n";
    for (const auto& w : t.warnings)
        out << "  warning: " << w << "\n";
}

} // namespace

void printCheckpoint(const CheckpointListing& listing, std::ostream& out)
{
    out << listing.root << "  (" << listing.family << ", " << listing.tags.size() << " tag"
        << (listing.tags.size() == 1 ? "" : "s") << ")\n";
    for (size_t t = 0; t < listing.tags.size(); ++t)
        printTag(listing, t, out);
    printOtherFilesAndWarnings(listing.otherFiles, listing.warnings, out);
}

} // namespace ckpt::ops
