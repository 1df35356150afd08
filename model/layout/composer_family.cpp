// MosaicML Composer checkpoints (shared/specs/composer-peers-users.md §A): a torch.save of
// {state, rng} (plain, in a tar, or raw-compressed), a run folder of ep{e}-ba{b}-rank{r}.pt…
// files with its latest-rank0.pt symlink, and Composer <= 0.27's per-rank tarballs wrapping a
// DeepSpeed tag. The model is state/model (the `model.` prefix of a HuggingFaceModel removed, as
// Composer's own HF export does); every other tensor (optimizer state, RNG) is kept by its `/`
// path, the one Composer's ignore_keys globs match.
#include "io/archive.h"
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "io/mapped_file.h"
#include "layout/deepspeed.h"
#include "layout/families.h"
#include "layout/words.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>
#include <regex>
#include <unistd.h>

namespace ckpt::layout {

namespace {

using pickle::Kind;
using pickle::Value;
using torch::dictGet;

constexpr const char* kStatesMember = "composer_states.pt";
constexpr const char* kDeepSpeedDir = "deepspeed/";

// The pickle of a Composer checkpoint opens with the root dict's first key, `state`, whose dict
// starts with `model`: recognisable from the first bytes of data.pkl without parsing the rest.
bool composerPickleHead(io::ByteSpan p)
{
    size_t i = 0;
    auto at = [&](uint8_t op) { return i < p.size() && p[i] == op; };
    auto skipMemo = [&] {
        if (at('q'))
            i += 2; // BINPUT
        else if (at('r'))
            i += 5; // LONG_BINPUT
        else if (at(0x94))
            i += 1; // MEMOIZE
    };
    auto key = [&](std::string_view want) {
        uint64_t len = 0;
        if ((at('X') || at('T')) && i + 5 <= p.size()) { // BINUNICODE, BINSTRING
            len = uint64_t(p[i + 1]) | uint64_t(p[i + 2]) << 8 | uint64_t(p[i + 3]) << 16 |
                  uint64_t(p[i + 4]) << 24;
            i += 5;
        } else if ((at(0x8c) || at('U')) && i + 2 <= p.size()) { // SHORT_BINUNICODE, SHORT_BINSTRING
            len = p[i + 1];
            i += 2;
        } else {
            return false;
        }
        if (len != want.size() || i + len > p.size() ||
            std::string_view(reinterpret_cast<const char*>(p.data() + i), len) != want)
            return false;
        i += len;
        skipMemo();
        return true;
    };
    auto dictStart = [&] {
        if (!at('}')) return false; // EMPTY_DICT, then its items (MARK ... SETITEMS, or one SETITEM)
        ++i;
        skipMemo();
        if (at('(')) ++i;
        return true;
    };
    if (!at(0x80) || p.size() < 2) return false;
    i = 2;
    if (at(0x95)) i += 9; // FRAME (protocol 4+)
    return dictStart() && key("state") && dictStart() && key("model");
}

// A torch.save zip whose data.pkl (stored, as torch writes it) starts like a Composer pickle.
bool looksLikeComposerZip(const std::string& path)
{
    const std::string head = io::readHead(path, 4096);
    const auto* h = reinterpret_cast<const uint8_t*>(head.data());
    auto u16 = [&](size_t o) { return uint32_t(h[o]) | uint32_t(h[o + 1]) << 8; };
    if (head.size() < 30 || head.compare(0, 4, "PK\x03\x04") != 0 || u16(8) != 0) return false;
    const size_t nameLen = u16(26), extraLen = u16(28), data = 30 + nameLen + extraLen;
    const std::string name = head.substr(30, nameLen);
    if (data >= head.size() || !(name == "data.pkl" || name.ends_with("/data.pkl"))) return false;
    return composerPickleHead(io::ByteSpan(h + data, head.size() - data));
}

// Composer's default save_filename and its wrappers: ep{epoch}-ba{batch}-rank{rank}.pt[.tar.gz…]
struct RunName
{
    int64_t epoch = 0, batch = 0;
    int rank = 0;
    std::string suffix;
};
std::optional<RunName> parseRunName(const std::string& name)
{
    static const std::regex re(R"(ep(\d{1,12})-ba(\d{1,15})-rank(\d{1,6})(\..*)?)");
    std::smatch m;
    if (!std::regex_match(name, m, re)) return std::nullopt;
    return RunName{std::stoll(m[1]), std::stoll(m[2]), std::stoi(m[3]), m[4]};
}

bool looksLikeComposerFile(const std::string& path)
{
    return !io::wrapperOfFile(path).empty() || looksLikeComposerZip(path);
}

// The files of a run folder by name, with their sizes (links not followed: Composer's
// latest-rank0.pt symlink is no checkpoint of its own). Nothing lists a plain HTTP folder.
std::vector<io::FolderEntry> folderFiles(const std::string& dir)
{
    const io::Folder folder(dir);
    std::vector<io::FolderEntry> out;
    if (!folder.lists()) return out;
    for (auto& e : folder.files())
        if (!e.link) out.push_back(std::move(e));
    return out;
}

std::string runFileName(const RunName& n, int rank)
{
    return "ep" + std::to_string(n.epoch) + "-ba" + std::to_string(n.batch) + "-rank" + std::to_string(rank) +
           n.suffix;
}

// A folder's checkpoint files of one save, by rank: the same epoch, batch and wrapper. Over
// plain HTTP, which lists nothing, the ranks after `of`'s are asked for in growing waves (1, 2,
// 4, ... at once) until one is missing: log2(W) round trips for W ranks.
std::vector<std::pair<int, std::string>> rankFilesOf(const std::string& dir, const RunName& of)
{
    std::vector<std::pair<int, std::string>> out;
    const io::Folder folder(dir);
    if (!folder.lists()) {
        out.push_back({of.rank, folder.file(runFileName(of, of.rank))});
        for (int next = of.rank + 1, wave = 1; next < (1 << 20); wave *= 2) {
            std::vector<std::string> names;
            for (int r = next; r < next + wave; ++r)
                names.push_back(runFileName(of, r));
            const auto found = folder.probe(names);
            for (size_t i = 0; i < found.size() && found[i]; ++i)
                out.push_back({next + int(i), folder.file(names[i])});
            if (std::find(found.begin(), found.end(), std::nullopt) != found.end()) break;
            next += wave;
        }
        return out;
    }
    for (const auto& e : folderFiles(dir)) {
        const auto n = parseRunName(e.name);
        if (n && n->epoch == of.epoch && n->batch == of.batch && n->suffix == of.suffix)
            out.push_back({n->rank, io::childPath(dir, e.name)});
    }
    std::sort(out.begin(), out.end());
    return out;
}

// ---- the pickle's facts -------------------------------------------------------------------

// TorchVersion is a str subclass: pickled as a call on its text.
std::optional<std::string> textOf(const Value* v)
{
    if (auto s = torch::asString(v)) return s;
    if (v && v->kind == Kind::Call && v->args && !v->args->items.empty()) {
        for (const Value* a : v->args->items)
            if (auto s = torch::asString(a)) return s;
    }
    return std::nullopt;
}

std::string timedeltaText(const Value* v)
{
    // datetime.timedelta(days, seconds, microseconds), pickled as a REDUCE on those ints.
    if (!v || !v->calls("datetime", "timedelta") || !v->args) return torch::pyRepr(v, 80);
    int64_t part[3] = {0, 0, 0};
    for (size_t i = 0; i < 3 && i < v->args->items.size(); ++i)
        part[i] = torch::asInt(v->args->items[i]).value_or(0);
    // The ranges Python's timedelta keeps them in; anything else is no timedelta it pickled.
    if (part[0] < -999999999 || part[0] > 999999999 || part[1] < 0 || part[1] >= 86400 || part[2] < 0 ||
        part[2] >= 1000000)
        return torch::pyRepr(v, 80);
    const int64_t secs = part[0] * 86400 + part[1];
    char buf[64];
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld.%06lld", (long long)(secs / 3600),
                  (long long)(secs / 60 % 60), (long long)(secs % 60), (long long)part[2]);
    return buf;
}

// Composer's batch and sample counters (-1: not saved).
struct Counters
{
    int64_t batch = -1, sample = -1;
};

// The Composer state's metadata and timestamp as the tag's facts (and the contract's badges); its
// counters.
Counters readBadges(Tag& tag, const torch::TorchFile& f)
{
    const Value* state = f.value("state");
    const Value* meta = dictGet(state, "metadata");
    stateBadge(tag, "family", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "composer");
    const Value* version = dictGet(dictGet(meta, "composer_env_info"), "composer_version");
    if (!version) version = dictGet(meta, "composer_version"); // before composer_env_info nested it
    if (auto s = textOf(version))
        stateBadge(tag, "composer_version", QT_TRANSLATE_NOOP("ckpt::layout", "Composer version"), *s);
    if (auto s = textOf(dictGet(meta, "precision")))
        stateBadge(tag, "precision", QT_TRANSLATE_NOOP("ckpt::layout", "precision"), *s);
    if (auto n = torch::asInt(dictGet(meta, "world_size")))
        stateBadge(tag, "world_size", QT_TRANSLATE_NOOP("ckpt::layout", "world size"), *n);
    else if (const Value* rng = f.value("rng"); rng && (rng->kind == Kind::List || rng->kind == Kind::Tuple))
        stateBadge(tag, "world_size", QT_TRANSLATE_NOOP("ckpt::layout", "world size"),
                   rng->items.size()); // one RNG state per rank, all-gathered by rank 0
    if (auto s = textOf(dictGet(meta, "torch_version")))
        stateBadge(tag, "torch_version", QT_TRANSLATE_NOOP("ckpt::layout", "PyTorch version"), *s);
    if (auto s = textOf(dictGet(meta, "device")))
        stateBadge(tag, "device", QT_TRANSLATE_NOOP("ckpt::layout", "device"), *s);
    if (auto s = textOf(dictGet(state, "run_name")))
        stateBadge(tag, "run_name", QT_TRANSLATE_NOOP("ckpt::layout", "run name"), *s);
    // Weights-only saves keep model, integrations and metadata, and no optimizer.
    const Value* optimizers = dictGet(state, "optimizers");
    stateBadge(tag, "weights_only", QT_TRANSLATE_NOOP("ckpt::layout", "weights only"), !optimizers);
    if (optimizers && !optimizers->entries.empty())
        stateBadge(tag, "optimizer", QT_TRANSLATE_NOOP("ckpt::layout", "optimizer class"),
                   torch::keyText(optimizers->entries.front().first));
    const Value* ts = dictGet(state, "timestamp");
    if (const Value* inner = dictGet(ts, "Timestamp")) ts = inner;
    static const std::pair<const char*, const char*> kCounters[] = {
        {"epoch", QT_TRANSLATE_NOOP("ckpt::layout", "epoch")},
        {"batch", QT_TRANSLATE_NOOP("ckpt::layout", "batches")},
        {"sample", QT_TRANSLATE_NOOP("ckpt::layout", "samples")},
        {"token", QT_TRANSLATE_NOOP("ckpt::layout", "tokens")}};
    for (const auto& [k, label] : kCounters)
        if (auto n = torch::asInt(dictGet(ts, k))) stateBadge(tag, k, label, *n);
    if (const Value* wct = dictGet(ts, "total_wct"))
        stateBadge(tag, "total_wct", QT_TRANSLATE_NOOP("ckpt::layout", "wall-clock time"),
                   timedeltaText(wct));
    if (dictGet(dictGet(state, "integrations"), "huggingface"))
        stateBadge(tag, "huggingface", QT_TRANSLATE_NOOP("ckpt::layout", "Hugging Face model embedded"),
                   true);
    return {torch::asInt(dictGet(ts, "batch")).value_or(-1),
            torch::asInt(dictGet(ts, "sample")).value_or(-1)};
}

// What the embedded files may expand to, in bytes, for each byte of the checkpoint file (and 1 MiB
// more). A memo reference costs the pickle two bytes but stands for all it refers to: a list of
// two references to a list of two references ... 60 deep is 2^60 values once written out as JSON,
// and 20,000 references to one 20 KB line are a 400 MB vocabulary. Real embedded files (a
// tokenizer.json of a few MB as a dict) expand to about the bytes they take in the pickle.
constexpr uint64_t kExpandPerByte = 16;
constexpr uint64_t kExpandBase = 1u << 20;

// Charges what pickleToJson(v) would produce (a value, a key or a string's bytes) to `left`, as
// pickleToJson walks it; false as soon as that is more than `left`.
bool chargeJson(const Value* v, uint64_t& left, int depth = 0)
{
    if (!v || depth > 100) return true; // pickleToJson stops there too
    auto take = [&](uint64_t n) {
        if (n > left) return false;
        left -= n;
        return true;
    };
    auto object = [&](const Value* dict) {
        for (const auto& [k, x] : dict->entries)
            if (!take(16 + (k ? k->text.size() : 0)) || !chargeJson(x, left, depth + 1)) return false;
        return true;
    };
    if (!take(16 + v->text.size())) return false;
    switch (v->kind) {
    case Kind::List:
    case Kind::Tuple:
        for (const Value* x : v->items)
            if (!chargeJson(x, left, depth + 1)) return false;
        return true;
    case Kind::Dict:
        return object(v);
    case Kind::Call:
        if (!v->entries.empty() || v->calls("collections", "OrderedDict")) return object(v);
        return v->state && v->state->kind == Kind::Dict ? object(v->state) : true;
    default:
        return true;
    }
}

// What Composer's write_huggingface_pretrained_from_composer_checkpoint writes beside the
// weights: config.json (transformers' layout: sorted keys, indent 2) and the tokenizer files.
void readEmbeddedFiles(Tag& tag, const torch::TorchFile& f)
{
    const Value* hf = f.value("state/integrations/huggingface");
    if (!hf) return;
    uint64_t left = kExpandBase + kExpandPerByte * f.fileSize();
    auto tooBig = [&](const std::string& name) {
        tag.warnings.push_back("embedded " + name + " refers to the same values over and over (more than " +
                               std::to_string(kExpandPerByte) +
                               " times the checkpoint's size once written out); left out");
    };
    if (const Value* cfg = dictGet(dictGet(dictGet(hf, "model"), "config"), "content");
        cfg && !chargeJson(cfg, left)) {
        tooBig("config.json");
    } else if (cfg) {
        const auto config = torch::pickleToJson(cfg);
        if (config.is_object()) {
            tag.config = config;
            // transformers writes config.json with sorted keys: the unordered json sorts them.
            const auto json = nlohmann::json::parse(config.dump());
            tag.exportFiles.push_back({"config.json", json.dump(2, ' ', true) + "\n"});
            static const std::pair<const char*, const char*> kConfig[] = {
                {"model_type", QT_TRANSLATE_NOOP("ckpt::layout", "model type")},
                {"architectures", QT_TRANSLATE_NOOP("ckpt::layout", "architecture")},
                {"torch_dtype", QT_TRANSLATE_NOOP("ckpt::layout", "config.json dtype")},
                {"transformers_version", QT_TRANSLATE_NOOP("ckpt::layout", "Transformers version")}};
            for (const auto& [k, label] : kConfig)
                if (json.contains(k)) stateBadge(tag, k, label, json[k]);
        }
    }
    const Value* tok = dictGet(hf, "tokenizer");
    if (!tok) return;
    for (const auto& [k, entry] : tok->entries) {
        const std::string name = torch::keyText(k);
        if (name.empty() || name.find_first_of(std::string_view("/\0", 2)) != std::string::npos ||
            name == "." || name == ".." || name == "config.json") {
            tag.warnings.push_back("embedded tokenizer file '" + name +
                                   "' is not a plain file name; left out");
            continue;
        }
        const Value* content = dictGet(entry, "content");
        if (!content) continue;
        if (!chargeJson(content, left)) {
            tooBig("tokenizer file '" + name + "'");
            continue;
        }
        std::string text;
        if (content->kind == Kind::Str || content->kind == Kind::Bytes)
            text = content->text; // text files as saved; a sentencepiece .model as its proto bytes
        else if (content->kind == Kind::List) // readlines() of a vocab file
            for (const Value* line : content->items)
                text += torch::asString(line).value_or("");
        else
            text = torch::pickleToJsonText(content) + "\n"; // integers exact (model_max_length)
        tag.exportFiles.push_back({name, std::move(text)});
    }
}

// The Composer dict of one file (already parsed and adopted under `id`) as a tag.
void fillFromStates(Tag& tag, const torch::TorchFile& f, const std::string& id)
{
    for (const auto& w : f.warnings())
        tag.warnings.push_back(w);
    const Counters counters = readBadges(tag, f);
    if (counters.batch >= 0) tag.globalSteps = counters.batch;
    if (counters.sample >= 0) tag.globalSamples = counters.sample;
    readEmbeddedFiles(tag, f);
    const bool hf = f.value("state/integrations/huggingface") != nullptr;
    const std::string modelPrefix = "state/model/";
    auto nameOf = [&](const torch::Tensor& t) {
        if (!t.path.starts_with(modelPrefix)) return t.path;
        std::string n = t.path.substr(modelPrefix.size());
        if (hf && n.starts_with("model.")) n.erase(0, 6);
        return n;
    };
    for (const torch::Tensor& t : f.tensors()) {
        Parameter p;
        p.name = nameOf(t);
        p.path = t.path;
        p.dtype = t.dtype;
        p.shape = t.shape;
        if (t.aliasOf >= 0) {
            p.tiedTo = nameOf(f.tensors()[size_t(t.aliasOf)]);
        } else if (t.storage < 0 || !t.note.empty()) {
            p.unreadable = t.note.empty() ? "no data" : t.note;
        } else {
            RankSlice s;
            s.length = p.numel();
            s.master.push_back(Source::flat(id, t.path, 0, s.length, t.dtype));
            p.slices.push_back(std::move(s));
        }
        (t.path.starts_with(modelPrefix) ? tag.params : tag.otherTensors).push_back(std::move(p));
    }
    if (tag.params.empty()) tag.warnings.push_back("state/model holds no tensors");
}

RankFile rankFile(const std::string& id, const std::string& name, uint64_t size)
{
    RankFile rf;
    rf.path = id;
    rf.name = name;
    rf.size = size;
    return rf;
}

std::shared_ptr<const torch::TorchFile> openTorch(std::shared_ptr<const io::MappedFile> data, FileSet& files)
{
    std::shared_ptr<const torch::TorchFile> t(torch::TorchFile::open(data));
    files.adopt(data->path(), t);
    return t;
}

// Composer <= 0.27 with DeepSpeed: every rank's tar holds its files of DeepSpeed's tag
// `deepspeed/`, rank 0's also composer_states.pt. Members are adopted under "<tar>!<member>" and
// the DeepSpeed reader consolidates them as it would the unpacked folder.
bool wantedMember(const std::string& n)
{
    return n == kStatesMember || (n.starts_with(kDeepSpeedDir) && n.ends_with(".pt"));
}

// `opened`: the one tarball already unwrapped (the path the user gave), not read twice.
Tag openDeepSpeedTarballs(const std::vector<std::pair<int, std::string>>& tars, const std::string& openedPath,
                          const io::Unwrapped& opened, Tag base, FileSet& files)
{
    std::vector<RankFile> rankFiles;
    std::shared_ptr<const torch::TorchFile> states;
    std::string statesId;
    for (const auto& [rank, tar] : tars) {
        const io::Unwrapped u = io::sameFile(tar, openedPath) ? opened : io::unwrap(tar, wantedMember);
        for (const io::ArchiveMember& m : u.members) {
            if (!m.data) continue;
            if (m.name == kStatesMember) {
                states = openTorch(m.data, files);
                statesId = m.data->path();
                continue;
            }
            if (m.name.find('/', std::string(kDeepSpeedDir).size()) != std::string::npos) continue;
            openTorch(m.data, files);
            RankFile rf = classifyTagFileName(m.name.substr(std::string(kDeepSpeedDir).size()));
            rf.path = m.data->path();
            rf.size = m.size;
            rankFiles.push_back(std::move(rf));
        }
    }
    Tag tag = openDeepSpeedTagFiles(std::move(rankFiles), base.dir, base.name, base.latest, files);
    tag.facts = deepSpeedFacts(tag);
    stateBadge(tag, "deepspeed_tag", QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed tag"), "deepspeed");
    if (states) {
        readBadges(tag, *states); // its counters are DeepSpeed's own, from the model files
        tag.files.insert(tag.files.begin(), rankFile(statesId, kStatesMember, states->fileSize()));
    }
    stateBadge(tag, "rank_files", QT_TRANSLATE_NOOP("ckpt::layout", "rank tarballs"), tars.size());
    return tag;
}

// One checkpoint: a file (any wrapper), or Composer's DeepSpeed tarballs of one save.
Tag openCheckpointFile(const std::string& p, Tag tag, FileSet& files)
{
    const std::string name = io::fileName(p);
    const std::string wrapper = io::wrapperOfFile(p);
    if (wrapper.empty()) {
        const auto file = files.get(p);
        if (!file->torch()) throw Error("not a torch.save file (Composer saves with torch.save)", p);
        tag.files.push_back(rankFile(p, name, file->torch()->fileSize()));
        fillFromStates(tag, *file->torch(), p);
        return tag;
    }
    if (io::fetchedWhole(p, wrapper))
        tag.warnings.push_back(wrapper + "-compressed: all " + std::to_string(io::fileSize(p)) +
                               " bytes are fetched to read it (ranged reads need an uncompressed file)");
    bool deepspeed = false;
    const io::Unwrapped u = io::unwrap(p, [&](const std::string& n) {
        deepspeed = deepspeed || n.starts_with(kDeepSpeedDir);
        return wantedMember(n);
    });
    if (!u.tar) { // a raw compressed torch.save: the file's own path names it
        const auto t = openTorch(u.members.at(0).data, files);
        tag.files.push_back(rankFile(p, name, io::fileSize(p)));
        stateBadge(tag, "wrapper", QT_TRANSLATE_NOOP("ckpt::layout", "archive"), u.wrapper);
        fillFromStates(tag, *t, p);
        return tag;
    }
    if (deepspeed) {
        std::vector<std::pair<int, std::string>> tars{{0, p}};
        if (const auto n = parseRunName(name)) {
            const std::string parent = io::parentPath(p);
            tars = rankFilesOf(parent.empty() ? "." : parent, *n);
        }
        if (std::none_of(tars.begin(), tars.end(), [&](const auto& t) { return io::sameFile(t.second, p); }))
            tars.insert(tars.begin(), {-1, p});
        Tag t = openDeepSpeedTarballs(tars, p, u, std::move(tag), files);
        stateBadge(t, "wrapper", QT_TRANSLATE_NOOP("ckpt::layout", "archive"), u.wrapper);
        return t;
    }
    const auto it = std::find_if(u.members.begin(), u.members.end(), [](const io::ArchiveMember& m) {
        return m.name == kStatesMember && m.data;
    });
    if (it == u.members.end())
        throw Error(std::string("no ") + kStatesMember + " in the archive (not a Composer checkpoint)", p);
    const auto t = openTorch(it->data, files);
    tag.files.push_back(rankFile(it->data->path(), kStatesMember, it->size));
    stateBadge(tag, "wrapper", QT_TRANSLATE_NOOP("ckpt::layout", "archive"),
               u.wrapper + (u.inPlace ? " (read in place)" : ""));
    fillFromStates(tag, *t, it->data->path());
    return tag;
}

// The checkpoints of a run folder, in training order; the rank-0 file names each.
struct RunCheckpoint
{
    RunName name;
    std::string rank0;
};
// `others`: the files named like a checkpoint that are not one, for the listing.
std::vector<RunCheckpoint> runCheckpoints(const std::string& dir, std::vector<std::string>* others = nullptr)
{
    // The files of each save (epoch, batch, wrapper), by rank.
    std::map<std::tuple<int64_t, int64_t, std::string>, std::map<int, std::string>> saves;
    for (const auto& e : folderFiles(dir))
        if (const auto n = parseRunName(e.name)) saves[{n->epoch, n->batch, n->suffix}][n->rank] = e.name;
    // A name like a checkpoint's is not enough: ep0-ba1-rank0.pt.expect.json beside the
    // checkpoint is no tag. Only what sniffs as one (a wrapper, or a torch.save zip) counts; the
    // lowest rank's file is sniffed (a store's, all saves in one wave), the next if it is none.
    std::vector<std::string> firsts;
    for (const auto& [k, ranks] : saves)
        firsts.push_back(io::childPath(dir, ranks.begin()->second));
    io::probeFiles(firsts);
    std::vector<RunCheckpoint> out;
    for (const auto& [k, ranks] : saves)
        for (const auto& [rank, name] : ranks) {
            const std::string path = io::childPath(dir, name);
            if (looksLikeComposerFile(path)) {
                out.push_back({*parseRunName(name), path});
                break;
            }
            if (others) others->push_back(name);
        }
    return out;
}

// Composer points latest-rank0.pt (whatever the wrapper) at the newest save: a symlink in a
// local folder; in an object store, where there are none, a `latest-rank0.pt.symlink` object
// holding the target's name (what Composer uploads in its place). The target's file name.
std::optional<std::pair<std::string, std::string>> latestPointer(const std::string& dir)
{
    const io::Folder folder(dir);
    if (!folder.lists()) return std::nullopt;
    for (const auto& e : folder.entries())
        if (const auto target =
                e.link && e.name.starts_with("latest-rank0") ? folder.linkTarget(e.name) : std::nullopt)
            return std::pair{e.name, *target};
    for (const auto& e : folderFiles(dir))
        if (e.name.starts_with("latest-rank0") && e.name.ends_with(".symlink")) {
            std::string target = io::readSmallFile(folder.file(e.name), 4096);
            while (!target.empty() && std::isspace(uint8_t(target.back())))
                target.pop_back();
            return std::pair{e.name, target.substr(target.rfind('/') + 1)};
        }
    return std::nullopt;
}

class ComposerFamily final : public Family
{
public:
    std::string_view id() const override { return "composer"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "Composer checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a Composer run folder (ep{e}-ba{b}-rank{r}.pt files, possibly tarred or compressed)";
    }
    bool match(const std::string& path) const override
    {
        const io::PathKind kind = io::pathKind(path);
        if (kind == io::PathKind::File) return looksLikeComposerFile(path);
        // Only folders of checkpoint files: a Composer sharded save is a DCP folder per step.
        return kind == io::PathKind::Folder && !runCheckpoints(path).empty();
    }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        if (io::pathKind(path) != io::PathKind::Folder) {
            // An uncompressed tar's headers are read in place, so a hostile one is refused here,
            // before any tag is listed; compressed ones are checked as they are read.
            if (io::wrapperOfFile(path) == "tar") io::unwrap(path, [](const std::string&) { return false; });
            l.root = path;
            l.tags.push_back({io::fileName(path), path});
            return l;
        }
        l.root = path;
        std::vector<std::string> others;
        for (const auto& c : runCheckpoints(path, &others))
            l.tags.push_back({io::fileName(c.rank0), c.rank0});
        std::sort(others.begin(), others.end());
        for (const auto& o : others)
            l.otherFiles.push_back(o);
        if (l.tags.empty())
            throw Error("no Composer checkpoint files (ep{e}-ba{b}-rank{r}.pt) in the folder", path);
        if (const auto latest = latestPointer(path)) {
            const std::string& pointer = latest->first; // not a structured binding: clang cannot capture one
            const std::string& target = latest->second;
            if (std::any_of(l.tags.begin(), l.tags.end(), [&](const auto& t) { return t.first == target; }))
                l.latest = target;
            else
                l.warnings.push_back(pointer + " points to '" + target +
                                     "', which is not a checkpoint file here");
        }
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, location] = list.tags.at(index);
        Tag tag;
        tag.name = name;
        tag.dir = location;
        tag.latest = name == list.latest || list.tags.size() == 1;
        tag = openCheckpointFile(location, std::move(tag), files);
        // Other ranks' files of a save that is not DeepSpeed's (legacy FSDP 'local' shards, say)
        // are listed so they are seen, though the model is rank 0's.
        if (const auto n = parseRunName(io::fileName(location)); n && !tag.deepspeed) {
            const std::string parent = io::parentPath(location);
            for (const auto& [rank, other] : rankFilesOf(parent.empty() ? "." : parent, *n))
                if (!io::sameFile(other, location))
                    tag.files.push_back(rankFile(other, io::fileName(other), io::fileSize(other)));
        }
        return tag;
    }
};

} // namespace

const Family& composerFamily()
{
    static const ComposerFamily f;
    return f;
}

} // namespace ckpt::layout
