// A Hugging Face model folder (what save_pretrained writes): model.safetensors, sharded
// safetensors with model.safetensors.index.json, pytorch_model.bin, or sharded .bin with its
// index. One tag whose parameters span the shards; config.json is shown; the index is checked
// against the shards (tensors missing from or extra to it are warnings naming them).
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/families.h"
#include "layout/words.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

namespace ckpt::layout {

namespace {

constexpr uint64_t kMaxIndexBytes = 256u << 20; // a 100k-tensor index is ~10 MB

bool isTorchOrSafetensors(const std::string& p)
{
    const std::string head = io::readHead(p, 16);
    if (head.size() >= 2 && (head.compare(0, 2, "PK") == 0 || uint8_t(head[0]) == 0x80)) return true;
    return safetensors::SafetensorsFile::looksLikeSafetensors(
        io::ByteSpan(reinterpret_cast<const uint8_t*>(head.data()), head.size()));
}

// The names transformers writes, asked for where nothing lists the folder.
constexpr const char* kKnown[] = {"model.safetensors.index.json",
                                  "pytorch_model.bin.index.json",
                                  "model.safetensors",
                                  "pytorch_model.bin",
                                  "config.json",
                                  "generation_config.json"};

// The files of a model folder by name, with their sizes: a local folder or one an object store
// lists (s3://, gs://, hf://); on a plain HTTP server, which lists nothing, the names
// transformers writes, asked for together.
struct FolderFiles
{
    io::Folder dir;
    std::map<std::string, uint64_t> files;

    explicit FolderFiles(const std::string& d) : dir(d)
    {
        for (const auto& e : dir.files(std::vector<std::string>(std::begin(kKnown), std::end(kKnown))))
            files[e.name] = e.size;
    }
    bool has(const std::string& name) const { return files.count(name) > 0; }
    std::string path(const std::string& name) const { return dir.file(name); }
};

// The index files of a folder, safetensors first (transformers prefers them too).
std::vector<std::string> indexFiles(const FolderFiles& f)
{
    std::vector<std::string> out;
    for (const char* n : {"model.safetensors.index.json", "pytorch_model.bin.index.json"})
        if (f.has(n)) out.push_back(n);
    for (const auto& [n, size] : f.files)
        if (n.size() > 11 && n.ends_with(".index.json") && std::find(out.begin(), out.end(), n) == out.end())
            out.push_back(n);
    return out;
}

// Weight files without an index: the unsharded names transformers writes.
std::vector<std::string> singleWeightFiles(const FolderFiles& f)
{
    std::vector<std::string> out;
    for (const char* n : {"model.safetensors", "pytorch_model.bin"})
        if (f.has(n) && isTorchOrSafetensors(f.path(n))) out.push_back(n);
    return out;
}

// The folder's last name: "repo" for hf://org/repo/, "model" for /data/model.
std::string lastName(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
}

// A name as an error message shows it: a NUL as \0 (the message is C text).
std::string shownName(std::string s)
{
    for (size_t at = s.find('\0'); at != std::string::npos; at = s.find('\0', at + 2))
        s.replace(at, 1, "\\0");
    return s;
}

bool hasWeightMap(const std::string& index)
{
    return io::readHead(index, 1 << 16).find("\"weight_map\"") != std::string::npos;
}

class HuggingFaceFamily final : public Family
{
public:
    std::string_view id() const override { return "hf"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "Hugging Face model folder");
    }
    std::string_view lookedFor() const override
    {
        return "a Hugging Face model folder (model.safetensors, pytorch_model.bin, or an *.index.json "
               "with a weight_map and its shards)";
    }
    std::vector<std::string> namesAsked() const override { return {std::begin(kKnown), std::end(kKnown)}; }
    bool match(const std::string& path) const override
    {
        if (io::pathKind(path) != io::PathKind::Folder) return false;
        const FolderFiles folder(path);
        for (const auto& i : indexFiles(folder))
            if (hasWeightMap(folder.path(i))) return true;
        return !singleWeightFiles(folder).empty();
    }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        l.root = path;
        l.tags.push_back({lastName(path), path});
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const FolderFiles dir(list.tags.at(index).second);
        Tag tag;
        tag.name = list.tags[index].first;
        tag.dir = dir.dir.path();
        tag.latest = true;
        readConfig(dir, tag);
        WeightMap map = readWeightMap(dir, tag);
        Shards shards = openShards(dir, map.shardNames, files, tag);
        if (!map.indexed) listShardTensors(shards.opened, map.wanted);
        const auto aliases = tiedAliases(shards);
        reconcile(map.wanted, shards.present, aliases, tag);
        return tag;
    }

private:
    using Tensors = std::vector<std::pair<std::string, std::string>>; // tensor, file name

    // Which tensor is in which file: the index's weight_map, or each unsharded file whole.
    struct WeightMap
    {
        Tensors wanted; // in index order; filled from the files themselves when not indexed
        std::vector<std::string> shardNames;
        bool indexed = false;
    };

    // The shards that exist, opened, and where each of their tensors is.
    struct Shards
    {
        std::map<std::string, std::pair<const TensorFile*, std::string>> present; // tensor -> file
        std::vector<std::shared_ptr<const TensorFile>> opened;
    };

    // config.json as the tag's config and badges. Small files that make the folder loadable
    // travel with an export of it.
    static void readConfig(const FolderFiles& dir, Tag& tag)
    {
        for (const char* n : {"config.json", "generation_config.json"})
            if (dir.has(n)) tag.exportFiles.push_back({n, io::readSmallFile(dir.path(n), 16u << 20)});
        if (!dir.has("config.json")) return;
        try {
            tag.config = nlohmann::ordered_json::parse(tag.exportFiles.front().second);
            addTransformersConfigBadges(tag.config, tag, "torch_dtype");
        } catch (const nlohmann::json::exception& e) {
            tag.warnings.push_back("config.json: not valid JSON (" + std::string(e.what()) + ")");
        }
    }

    // The first index with a weight_map, checked strictly; without one, the unsharded files.
    static WeightMap readWeightMap(const FolderFiles& dir, Tag& tag)
    {
        WeightMap m;
        for (const auto& i : indexFiles(dir)) {
            if (!hasWeightMap(dir.path(i))) continue;
            readIndex(dir.path(i), m);
            stateBadge(tag, "index", QT_TRANSLATE_NOOP("ckpt::layout", "index file"), i);
            m.indexed = true;
            break;
        }
        if (!m.indexed)
            for (const auto& f : singleWeightFiles(dir))
                m.shardNames.push_back(f);
        if (m.shardNames.empty()) throw Error("no weight files", dir.dir.path());
        return m;
    }

    static void readIndex(const std::string& i, WeightMap& m)
    {
        nlohmann::ordered_json idx;
        try {
            idx = nlohmann::ordered_json::parse(io::readSmallFile(i, kMaxIndexBytes));
        } catch (const nlohmann::json::exception& e) {
            throw Error("not a valid index: " + std::string(e.what()), i);
        }
        if (!idx.contains("weight_map") || !idx["weight_map"].is_object())
            throw Error("has no \"weight_map\" object", i);
        for (const auto& [name, shard] : idx["weight_map"].items()) {
            if (!shard.is_string()) throw Error("weight_map['" + name + "'] is not a file name", i);
            const std::string s = shard.get<std::string>();
            // A shard is a file in this folder: never a path that leaves it, nor one whose NUL
            // would make the system open another file than the name says.
            if (s.empty() || s.find_first_of(std::string_view("/\0", 2)) != std::string::npos || s == "." ||
                s == "..")
                throw Error(
                    "weight_map['" + name + "'] names '" + shownName(s) + "', not a file of this folder", i);
            m.wanted.push_back({name, s});
            if (std::find(m.shardNames.begin(), m.shardNames.end(), s) == m.shardNames.end())
                m.shardNames.push_back(s);
        }
    }

    // Opens the shards through `files` and adds them to the tag; a shard the index names that
    // does not exist is a warning, so the tensors of the others can still be read.
    static Shards openShards(const FolderFiles& dir, const std::vector<std::string>& shardNames,
                             FileSet& files, Tag& tag)
    {
        Shards out;
        std::vector<std::string> missingFiles;
        for (const auto& s : shardNames) {
            const std::optional<uint64_t> size = shardSize(dir, s);
            if (!size) {
                missingFiles.push_back(s);
                continue;
            }
            const std::string p = dir.path(s);
            auto f = files.get(p);
            RankFile rf;
            rf.path = p;
            rf.name = s;
            rf.size = *size;
            rf.role = FileRole::ModelStates; // a weights shard the index (or the folder) names
            tag.files.push_back(rf);
            if (const auto* t = f->torch()) {
                for (const auto& w : t->warnings())
                    tag.warnings.push_back(s + ": " + w);
                for (const auto& x : t->tensors())
                    out.present.emplace(x.path, std::make_pair(f.get(), p));
            } else {
                for (const auto& x : f->safetensors()->tensors())
                    out.present.emplace(x.name, std::make_pair(f.get(), p));
            }
            out.opened.push_back(std::move(f));
        }
        for (const auto& s : missingFiles)
            tag.warnings.push_back("shard " + s + " named by the index does not exist");
        return out;
    }

    // A shard's size, or nullopt when the folder does not hold it: from the listing, else asked
    // (the index may name a shard in a subfolder). A name comes from the index and may be no name
    // the system takes (too long, say): an Error, not a missing file.
    static std::optional<uint64_t> shardSize(const FolderFiles& dir, const std::string& s)
    {
        if (const auto it = dir.files.find(s); it != dir.files.end()) return it->second;
        return dir.dir.sizeOf(s);
    }

    // Without an index: every tensor of the file(s), in file order.
    static void listShardTensors(const std::vector<std::shared_ptr<const TensorFile>>& opened,
                                 Tensors& wanted)
    {
        for (const auto& f : opened) {
            if (const auto* t = f->torch())
                for (const auto& x : t->tensors())
                    wanted.push_back({x.path, io::fileName(f->path())});
            else
                for (const auto& x : f->safetensors()->tensors())
                    wanted.push_back({x.name, io::fileName(f->path())});
        }
    }

    // safetensors' save_model keeps one copy of tied weights and names the dropped ones in the
    // metadata (dropped -> kept): they are aliases, as torch.save's shared storages are.
    static Tensors tiedAliases(const Shards& shards)
    {
        Tensors aliases; // dropped, kept
        for (const auto& f : shards.opened)
            if (const auto* st = f->safetensors())
                for (const auto& [k, v] : st->metadata())
                    if (k != "format" && shards.present.count(v) && !shards.present.count(k))
                        aliases.push_back({k, v});
        return aliases;
    }

    // The tag's parameters, in the index's order, then the tied aliases; where the index and the
    // shards disagree, warnings naming the tensors.
    static void reconcile(const Tensors& wanted,
                          std::map<std::string, std::pair<const TensorFile*, std::string>>& present,
                          const Tensors& aliases, Tag& tag)
    {
        std::set<std::string> listed;
        std::vector<std::string> missing, misplaced;
        for (const auto& [name, shard] : wanted) {
            listed.insert(name);
            const auto it = present.find(name);
            if (it == present.end()) {
                // clang 14 cannot capture a structured binding in a lambda
                const std::string& wantedName = name;
                if (std::any_of(aliases.begin(), aliases.end(),
                                [&](const auto& a) { return a.first == wantedName; }))
                    continue; // a tied weight the index lists: added as an alias below
                missing.push_back(name);
                continue;
            }
            const TensorFile& f = *it->second.first;
            if (io::fileName(f.path()) != shard) misplaced.push_back(name);
            tag.params.push_back(paramFrom(f, name));
        }
        for (const auto& [name, target] : aliases) {
            if (present.count(name)) continue;
            Parameter p = paramFrom(*present[target].first, target);
            p.name = name;
            p.tiedTo = target;
            p.slices.clear();
            tag.params.push_back(std::move(p));
        }
        std::vector<std::string> extra;
        for (const auto& [name, where] : present)
            if (!listed.count(name)) extra.push_back(name);
        if (!missing.empty())
            tag.warnings.push_back(std::to_string(missing.size()) +
                                   " tensor(s) named by the index are in no shard: " + listOf(missing));
        if (!misplaced.empty())
            tag.warnings.push_back(
                std::to_string(misplaced.size()) +
                " tensor(s) are in another shard than the index says: " + listOf(misplaced));
        if (!extra.empty())
            tag.warnings.push_back(
                std::to_string(extra.size()) +
                " tensor(s) in the shards are not in the index (left out): " + listOf(extra));
    }

    // The first eight names, quoted, and how many more: a warning stays one line.
    static std::string listOf(const std::vector<std::string>& v)
    {
        std::string s;
        for (size_t i = 0; i < v.size() && i < 8; ++i)
            s += (i ? ", '" : "'") + v[i] + "'";
        if (v.size() > 8) s += " and " + std::to_string(v.size() - 8) + " more";
        return s;
    }

    static Parameter paramFrom(const TensorFile& f, const std::string& name)
    {
        Parameter p;
        p.name = name;
        RankSlice s;
        if (const auto* t = f.torch()) {
            const torch::Tensor* x = t->tensor(name);
            p.dtype = x->dtype;
            p.shape = x->shape;
            if (x->aliasOf >= 0) {
                p.tiedTo = t->tensors()[size_t(x->aliasOf)].path;
                return p;
            }
            if (x->storage < 0 || !x->note.empty()) {
                p.unreadable = x->note.empty() ? "no data" : x->note;
                return p;
            }
        } else {
            const auto* x = f.stFind(name);
            p.dtype = x->dtype;
            p.shape = x->shape;
        }
        s.length = p.numel();
        s.master.push_back(Source::flat(f.path(), name, 0, s.length, p.dtype));
        p.slices.push_back(std::move(s));
        return p;
    }
};

} // namespace

const Family& huggingFaceFamily()
{
    static const HuggingFaceFamily f;
    return f;
}

void addTransformersConfigBadges(const nlohmann::json& config, Tag& tag, const char* dtypeBadge)
{
    if (!config.is_object()) return;
    static const std::pair<const char*, const char*> kNames[] = {
        {"model_type", QT_TRANSLATE_NOOP("ckpt::layout", "model type")},
        {"architectures", QT_TRANSLATE_NOOP("ckpt::layout", "architecture")},
        {"transformers_version", QT_TRANSLATE_NOOP("ckpt::layout", "Transformers version")}};
    for (const auto& [k, label] : kNames)
        if (config.contains(k)) stateBadge(tag, k, label, config[k]);
    // transformers 5 writes "dtype" (torch_dtype before 4.56); named apart from a training
    // precision where the tag has one of its own
    const char* dtypeLabel = std::string_view(dtypeBadge) == "config_dtype"
                                 ? QT_TRANSLATE_NOOP("ckpt::layout", "config.json dtype")
                                 : QT_TRANSLATE_NOOP("ckpt::layout", "dtype");
    for (const char* k : {"dtype", "torch_dtype"})
        if (config.contains(k) && !config[k].is_null()) stateBadge(tag, dtypeBadge, dtypeLabel, config[k]);
    // Sizes, by the common names first and GPT-2's after (n_embd, n_layer, n_head)
    struct Size
    {
        const char *badge, *label;
        std::vector<const char*> keys;
    };
    static const Size kSizes[] = {
        {"hidden_size",
         QT_TRANSLATE_NOOP("ckpt::layout", "hidden size"),
         {"hidden_size", "n_embd", "d_model"}},
        {"layers",
         QT_TRANSLATE_NOOP("ckpt::layout", "layers"),
         {"num_hidden_layers", "n_layer", "num_layers"}},
        {"attention_heads",
         QT_TRANSLATE_NOOP("ckpt::layout", "attention heads"),
         {"num_attention_heads", "n_head"}},
        {"vocab_size", QT_TRANSLATE_NOOP("ckpt::layout", "vocabulary"), {"vocab_size"}},
    };
    for (const Size& s : kSizes)
        for (const char* k : s.keys)
            if (config.contains(k) && config[k].is_number_integer()) {
                stateBadge(tag, s.badge, s.label, config[k]);
                break;
            }
}

} // namespace ckpt::layout
