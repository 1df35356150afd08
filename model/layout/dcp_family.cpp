// A PyTorch Distributed Checkpoint (DCP) folder — `.metadata` plus `__<rank>_<n>.distcp` data
// files, written by torch.distributed.checkpoint for FSDP/DTensor training (plain PyTorch,
// torchtitan, Composer's sharded saves) — and a run folder whose subfolders are such checkpoints.
// `.metadata` gives every entry's full shape, dtype and chunks; each chunk is an item of a data
// file, itself a complete little torch.save zip, read in place from a slice of the mapped file.
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "io/mapped_file.h"
#include "layout/dcp_metadata.h"
#include "layout/families.h"
#include "layout/words.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <set>
#include <tuple>

namespace ckpt::layout {

namespace {

// A folder holding .metadata (a DCP pickle) and its .distcp files. Where the folder lists its
// files they are looked for; over plain HTTP, which lists nothing, .metadata names them.
bool isDcpFolder(const io::Folder& dir)
{
    if (!dir.exists() || !dir.sizeOf(".metadata")) return false;
    if (!dcp::looksLikeMetadata(io::readHead(dir.file(".metadata"), 4096))) return false;
    if (!dir.lists()) return true;
    for (const auto& e : dir.entries())
        if (!e.folder && e.name.ends_with(".distcp")) return true;
    return false;
}

// The subfolders of a run folder that are DCP checkpoints (not links to them: Composer's
// latest-rank0.pt points at the newest), by their .metadata: every subfolder's asked for in
// one wave (not two round trips per subfolder in a row) and sniffed. Their .distcp files are
// looked for when the tag opens, which names any that are missing. None over plain HTTP.
std::vector<std::string> dcpSubfolders(const io::Folder& run)
{
    std::vector<std::string> out;
    if (!run.lists()) return out;
    std::vector<std::string> names, metadata;
    for (const auto& e : run.entries())
        if (e.folder && !e.link) {
            names.push_back(e.name);
            metadata.push_back(e.name + "/.metadata");
        }
    const auto found = run.probe(metadata);
    for (size_t i = 0; i < names.size(); ++i)
        if (found[i] && dcp::looksLikeMetadata(io::readHead(run.file(metadata[i]), 4096)))
            out.push_back(names[i]);
    return out;
}

// The folder's last name: "step-100" for ckpt/step-100/ and s3://b/ckpt/step-100.
std::string lastName(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// `__<rank>_<n>.distcp`: the rank that wrote the file, or -1.
int rankOf(const std::string& name)
{
    if (!name.starts_with("__")) return -1;
    int r = 0;
    size_t i = 2;
    for (; i < name.size() && std::isdigit(uint8_t(name[i])) && r < 1'000'000; ++i)
        r = r * 10 + (name[i] - '0');
    return i > 2 && i < name.size() && name[i] == '_' ? r : -1;
}

std::string join(const std::vector<std::string>& parts, size_t from, const char* sep)
{
    std::string s;
    for (size_t i = from; i < parts.size(); ++i)
        s += (i > from ? sep : "") + parts[i];
    return s;
}

// A pickled value for the tag's info: scalars as JSON, anything else as its repr.
nlohmann::ordered_json valueJson(const pickle::Value* v)
{
    using pickle::Kind;
    if (!v || v->kind == Kind::None) return nullptr;
    if (v->kind == Kind::Bool) return v->boolean;
    if (v->kind == Kind::Int) return v->integer;
    if (v->kind == Kind::Float) return v->real;
    return v->kind == Kind::Str ? nlohmann::ordered_json(v->text)
                                : nlohmann::ordered_json(torch::pyRepr(v, 200));
}

// Which entries are the model, and how they are named: tensors under a top-level `model`
// (plain FSDP state dicts) or `state/model` (Composer), named by FQN without that prefix; with
// neither (torchtitan puts model keys at the top level beside its own entries), every tensor
// outside those entries.
struct ModelRule
{
    std::vector<std::string> prefix;
    std::string layout;

    explicit ModelRule(const dcp::Metadata& md)
    {
        auto under = [&](const std::vector<std::string>& p) {
            return std::any_of(md.entries.begin(), md.entries.end(), [&](const dcp::Entry& e) {
                return e.tensor && e.keyPath.size() > p.size() &&
                       std::equal(p.begin(), p.end(), e.keyPath.begin());
            });
        };
        // What wrote the folder, where its keys say so; never a guess: model keys at the top level
        // are torchtitan's only beside its TrainState (`train_state`: step, ntokens_seen).
        const bool trainState = std::any_of(md.entries.begin(), md.entries.end(), [](const dcp::Entry& e) {
            return e.keyPath.size() > 1 && e.keyPath.front() == "train_state";
        });
        if (under({"model"}))
            prefix = {"model"}, layout = "model";
        else if (under({"state", "model"}))
            prefix = {"state", "model"}, layout = "composer";
        else if (trainState)
            layout = "torchtitan";
        else
            layout = "top-level state dict";
    }

    bool isModel(const dcp::Entry& e) const
    {
        if (!prefix.empty())
            return e.keyPath.size() > prefix.size() &&
                   std::equal(prefix.begin(), prefix.end(), e.keyPath.begin());
        static const std::set<std::string> kTrainerKeys = {"optimizer", "lr_scheduler", "dataloader",
                                                           "train_state"};
        return !kTrainerKeys.count(e.keyPath.front());
    }

    std::string modelName(const dcp::Entry& e) const { return join(e.keyPath, prefix.size(), "."); }
};

// Composer's facts for the overview (as its monolithic saves show them), from the values DCP
// saved beside the tensors.
void composerBadges(Tag& tag)
{
    stateBadge(tag, "family", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "composer");
    static const std::tuple<const char*, const char*, const char*> kFacts[] = {
        {"composer_version", QT_TRANSLATE_NOOP("ckpt::layout", "Composer version"),
         "/state/metadata/composer_env_info/composer_version"},
        {"precision", QT_TRANSLATE_NOOP("ckpt::layout", "precision"), "/state/metadata/precision"},
        {"world_size", QT_TRANSLATE_NOOP("ckpt::layout", "world size"), "/state/metadata/world_size"},
        {"run_name", QT_TRANSLATE_NOOP("ckpt::layout", "run name"), "/state/run_name"},
        {"epoch", QT_TRANSLATE_NOOP("ckpt::layout", "epoch"), "/state/timestamp/Timestamp/epoch"},
        {"batch", QT_TRANSLATE_NOOP("ckpt::layout", "batches"), "/state/timestamp/Timestamp/batch"},
        {"sample", QT_TRANSLATE_NOOP("ckpt::layout", "samples"), "/state/timestamp/Timestamp/sample"}};
    for (const auto& [badge, label, where] : kFacts) {
        const nlohmann::ordered_json::json_pointer at(where);
        if (!tag.clientState.contains(at) || tag.clientState[at].is_null()) continue;
        const auto& value = tag.clientState[at];
        stateBadge(tag, badge, label, value);
        if (std::string_view(badge) == "batch" && value.is_number_integer())
            tag.globalSteps = value.get<int64_t>();
    }
}

// torchtitan's TrainState, saved beside the model: the step it was saved at, and the tokens seen.
void torchtitanBadges(Tag& tag)
{
    stateBadge(tag, "family", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "torchtitan");
    const auto& state = tag.clientState.value("train_state", nlohmann::ordered_json::object());
    if (const auto step = state.find("step"); step != state.end() && step->is_number_integer()) {
        stateBadge(tag, "step", QT_TRANSLATE_NOOP("ckpt::layout", "step"), *step);
        tag.globalSteps = step->get<int64_t>();
    }
    if (const auto n = state.find("ntokens_seen"); n != state.end() && n->is_number_integer())
        stateBadge(tag, "ntokens_seen", QT_TRANSLATE_NOOP("ckpt::layout", "tokens seen (one rank's count)"),
                   *n);
}

class Opener
{
public:
    Opener(const std::string& dir, FileSet& files) : m_dir(dir), m_files(files) {}

    Tag open(const std::string& name, bool latest)
    {
        Tag tag;
        tag.name = name;
        tag.dir = m_dir;
        tag.latest = latest;
        const std::string mdPath = io::childPath(m_dir, ".metadata");
        const auto mdFile = io::MappedFile::open(mdPath);
        mdFile->ensure(0, mdFile->size()); // one pickle, read through
        const dcp::Metadata md = dcp::parseMetadata(mdFile->bytes(), mdPath);
        const ModelRule rule(md);

        tag.clientState = nlohmann::ordered_json::object();
        for (const dcp::Entry& e : md.entries) {
            if (!e.tensor) {
                addValue(tag, e);
                continue;
            }
            Parameter p;
            p.shape = e.shape;
            p.dtype = e.dtype;
            p.path = join(e.keyPath, 0, "/");
            const bool model = rule.isModel(e);
            p.name = model ? rule.modelName(e) : p.path;
            const uint64_t numel = p.numel();
            const bool whole = e.chunks.size() == 1 && e.chunks[0].sizes == e.shape;
            for (const dcp::Chunk& c : e.chunks) {
                const std::string id = itemFile(e, c.item, &c.sizes);
                RankSlice s;
                s.rank = rankOf(c.item.file);
                s.length = 1;
                for (int64_t x : c.sizes)
                    s.length *= uint64_t(x);
                for (size_t i = 0, stride = 1; i < c.offsets.size(); ++i) {
                    const size_t d = c.offsets.size() - 1 - i;
                    s.paramOffset += uint64_t(c.offsets[d]) * stride;
                    stride *= size_t(e.shape[d]);
                }
                remember(c.item, whole ? p.path : p.path + "@" + offsetsText(c.offsets), id);
                // A whole tensor (a replicated one, a 0-d step) reads flat, in place.
                if (whole)
                    s.master.push_back(Source::flat(id, "", 0, numel, e.dtype));
                else
                    s.master.push_back(Source::chunk(id, "", e.dtype, c.offsets, c.sizes));
                p.slices.push_back(std::move(s));
            }
            (model ? tag.params : tag.otherTensors).push_back(std::move(p));
        }

        std::set<int> ranks;
        for (const auto& [file, mapped] : m_data) {
            RankFile rf;
            rf.path = io::childPath(m_dir, file);
            rf.name = file;
            rf.dpRank = rankOf(file);
            rf.size = mapped->size();
            rf.items = itemsOf(file);
            tag.files.push_back(std::move(rf));
            ranks.insert(rankOf(file));
        }
        stateBadge(tag, "format", QT_TRANSLATE_NOOP("ckpt::layout", "format"), "PyTorch DCP");
        if (!md.version.empty())
            stateBadge(tag, "dcp_version", QT_TRANSLATE_NOOP("ckpt::layout", "DCP version"), md.version);
        stateBadge(tag, "layout", QT_TRANSLATE_NOOP("ckpt::layout", "layout"), rule.layout);
        stateBadge(tag, "ranks", QT_TRANSLATE_NOOP("ckpt::layout", "ranks"), ranks.size());
        tag.sharding = Sharding::NdChunks; // each rank's block of each tensor, in any dimension
        if (rule.layout == "composer") composerBadges(tag);
        if (rule.layout == "torchtitan") torchtitanBadges(tag);
        if (tag.params.empty())
            tag.warnings.push_back(
                "no model tensors (looked for the entries under " +
                (rule.prefix.empty() ? std::string("the top level") : "'" + join(rule.prefix, 0, "/") + "'") +
                "); `--all` exports every tensor");
        return tag;
    }

private:
    // The item's own torch.save zip, parsed once and adopted into the file set under
    // "<data file>@<offset>"; for a tensor chunk (`sizes`), checked against its metadata.
    std::string itemFile(const dcp::Entry& e, const dcp::Item& item, const std::vector<int64_t>* sizes)
    {
        const std::string path = io::childPath(m_dir, item.file);
        const std::string id = path + "@" + std::to_string(item.offset);
        const std::string what = "the item of '" + e.fqn + "' at bytes " + std::to_string(item.offset) +
                                 "..+" + std::to_string(item.length);
        const torch::TorchFile* tf = nullptr;
        if (const auto it = m_items.find(id); it != m_items.end()) {
            tf = it->second.get();
        } else {
            const auto data = dataFile(item.file);
            if (!io::rangeFits(item.offset, item.length, data->size()))
                throw Error(what + " lies beyond the end of the file (" + std::to_string(data->size()) +
                                " bytes; truncated?)",
                            path);
            std::shared_ptr<const torch::TorchFile> parsed;
            try {
                parsed = torch::TorchFile::open(io::MappedFile::slice(data, item.offset, item.length, id));
            } catch (const Error& x) {
                throw Error(what + ": " + x.message(), path);
            }
            m_files.adopt(id, parsed);
            tf = m_items.emplace(id, std::move(parsed)).first->second.get();
        }
        if (sizes) {
            const torch::Tensor* t = tf->tensor("");
            if (!t || t->storage < 0 || !t->note.empty())
                throw Error(what + " is not a tensor with data", path);
            if (t->dtype != e.dtype || t->shape != *sizes)
                throw Error(what + " holds a " + std::string(torch::name(t->dtype)) +
                                " tensor of another shape or " + "dtype than .metadata's " +
                                std::string(torch::name(e.dtype)) + " chunk",
                            path);
        }
        return id;
    }

    std::shared_ptr<const io::MappedFile> dataFile(const std::string& name)
    {
        if (const auto it = m_data.find(name); it != m_data.end()) return it->second;
        const io::Folder dir(m_dir);
        // Where the folder lists its files, a missing one is said so; over plain HTTP its server
        // says what it answered when the file is opened.
        if (dir.lists() && !dir.has(name))
            throw Error("missing: .metadata stores items in it", dir.file(name));
        return m_data.emplace(name, io::MappedFile::open(dir.file(name))).first->second;
    }

    // A non-tensor leaf (BytesStorageMetadata): DCP's planner torch.save()s it into its item.
    // Its value goes to the tag's info; tensors inside it (an object DCP did not flatten) are
    // other tensors under its path.
    void addValue(Tag& tag, const dcp::Entry& e)
    {
        const std::string id = itemFile(e, e.item, nullptr);
        remember(e.item, join(e.keyPath, 0, "/"), id);
        const torch::TorchFile& tf = *m_items.at(id);
        nlohmann::ordered_json* node = &tag.clientState;
        for (size_t i = 0; i + 1 < e.keyPath.size() && (node->is_object() || node->is_null()); ++i)
            node = &(*node)[e.keyPath[i]];
        if (node->is_object() || node->is_null()) (*node)[e.keyPath.back()] = valueJson(tf.root());
        const std::string base = join(e.keyPath, 0, "/");
        for (const torch::Tensor& t : tf.tensors()) {
            if (t.aliasOf >= 0 || t.storage < 0 || !t.note.empty()) continue;
            Parameter p;
            p.name = p.path = t.path.empty() ? base : base + "/" + t.path;
            p.shape = t.shape;
            p.dtype = t.dtype;
            RankSlice s;
            s.rank = rankOf(e.item.file);
            s.length = p.numel();
            s.master.push_back(Source::flat(id, t.path, 0, s.length, t.dtype));
            p.slices.push_back(std::move(s));
            tag.otherTensors.push_back(std::move(p));
        }
    }

    static std::string offsetsText(const std::vector<int64_t>& offsets)
    {
        std::string text;
        for (int64_t o : offsets)
            text += (text.empty() ? "" : ",") + std::to_string(o);
        return text;
    }

    // An item of a data file, for the file's listing (RankFile::items).
    void remember(const dcp::Item& item, std::string label, const std::string& id)
    {
        m_itemsOf[item.file].emplace(item.offset, RankFile::Item{std::move(label), id});
    }

    std::vector<RankFile::Item> itemsOf(const std::string& file) const
    {
        std::vector<RankFile::Item> out;
        if (const auto it = m_itemsOf.find(file); it != m_itemsOf.end())
            for (const auto& [offset, item] : it->second)
                out.push_back(item);
        return out;
    }

    std::string m_dir;
    FileSet& m_files;
    // By data file name: its items by offset (one item stored once, however many entries read it).
    std::map<std::string, std::map<uint64_t, RankFile::Item>> m_itemsOf;
    std::map<std::string, std::shared_ptr<const io::MappedFile>> m_data;    // by file name
    std::map<std::string, std::shared_ptr<const torch::TorchFile>> m_items; // by id
};

class DcpFamily final : public Family
{
    static constexpr const char* kCheckpointFolder = "checkpoint";
    static bool isRun(const io::Folder& dir) { return !dcpSubfolders(dir).empty() && !dir.has(".metadata"); }

public:
    std::string_view id() const override { return "dcp"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "PyTorch DCP checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a PyTorch DCP checkpoint (.metadata and *.distcp files) or a run folder of them";
    }
    std::vector<std::string> namesAsked() const override { return {".metadata"}; }
    bool match(const std::string& path) const override
    {
        const io::Folder dir(path);
        if (!dir.exists()) return false;
        return isDcpFolder(dir) || isRun(dir) ||
               (dir.has(kCheckpointFolder) && isRun(dir.folder(kCheckpointFolder)));
    }
    TagList listTags(const std::string& path) const override
    {
        const io::Folder top(path);
        TagList l;
        l.root = path;
        if (isDcpFolder(top)) {
            l.tags.push_back({lastName(path), path});
            l.latest = l.tags.front().first;
            return l;
        }
        // torchtitan's dump folder keeps its steps in checkpoint/ (checkpoint.folder's default).
        const io::Folder dir = isRun(top) ? top : top.folder(kCheckpointFolder);
        std::vector<std::string> names = dcpSubfolders(dir);
        if (names.empty()) throw Error("no DCP checkpoint folders (.metadata and *.distcp) in it", path);
        std::sort(names.begin(), names.end(),
                  [](const auto& a, const auto& b) { return trainingOrder(a) < trainingOrder(b); });
        for (const auto& n : names)
            l.tags.push_back({n, dir.file(n)});
        // torchtitan resumes from the highest step-N it finds (CheckpointManager._find_load_step).
        if (std::all_of(names.begin(), names.end(), [](const std::string& n) {
                return n.size() > 5 && n.starts_with("step-") &&
                       std::all_of(n.begin() + 5, n.end(), [](char c) { return std::isdigit(uint8_t(c)); });
            }))
            l.latest = names.back();
        // Composer's `latest-rank0.pt` (and similar pointers) is a link to the newest folder.
        for (const auto& e : dir.entries())
            if (const auto target =
                    e.link && e.name.starts_with("latest") ? dir.linkTarget(e.name) : std::nullopt;
                target && std::find(names.begin(), names.end(), *target) != names.end())
                l.latest = *target;
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, dir] = list.tags.at(index);
        return Opener(dir, files).open(name, name == list.latest);
    }
};

} // namespace

// Training order from the names: the numbers in them compared as numbers (Composer's ep0-ba10
// after ep0-ba9, torchtitan's step-100 after step-20), then the names themselves.
std::pair<std::vector<uint64_t>, std::string> trainingOrder(const std::string& name)
{
    std::pair<std::vector<uint64_t>, std::string> key{{}, name};
    for (size_t i = 0; i < name.size(); ++i) {
        if (!std::isdigit(uint8_t(name[i]))) continue;
        uint64_t n = 0;
        for (; i < name.size() && std::isdigit(uint8_t(name[i])); ++i)
            n = std::min<uint64_t>(n * 10 + uint64_t(name[i] - '0'), UINT64_MAX / 10);
        key.first.push_back(n);
    }
    return key;
}

const Family& dcpFamily()
{
    static const DcpFamily f;
    return f;
}

} // namespace ckpt::layout
