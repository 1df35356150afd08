// PyTorch DCP written through HuggingFaceStorageWriter (torch.distributed.checkpoint, what
// torchtitan's HF saves use): each rank's chunks of each output file as an ordinary safetensors
// file, shard-0000R-model-0000I-of-0000N.safetensors (R = rank + 1), whose __metadata__ holds
// DCP_SHARDING_INFO, a JSON string {fqn: {"saved_offsets": [...]}}: where each chunk (of the
// shape its header gives) starts in the whole tensor. No .metadata: the whole shape is where the
// chunks end. Opened as that folder (`sharded/` when consolidation ran), or as the folder above
// it when nothing was consolidated there. Each tensor is assembled from its chunks in any dtype
// safetensors names (FP8 too), and a 0-d tensor keeps its value (torch's
// consolidate_safetensors_files writes 0-d tensors as zeros).
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/dcp_metadata.h"
#include "layout/families.h"
#include "layout/file_set.h"
#include "layout/words.h"
#include "safetensors/safetensors_file.h"
#include "torch/dtensor.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

namespace ckpt::layout {

namespace {

const char* const kShardedFolder = "sharded"; // _hf_utils.SHARDED_DIR_NAME
const char* const kShardingInfo = "DCP_SHARDING_INFO";

// R of "shard-0000R-model-0000I-of-0000N.safetensors", or nullopt for any other name; `index`
// gets I.
std::optional<int> shardRank(const std::string& name, int* index = nullptr)
{
    // shard-NNNNN-model-NNNNN-of-NNNNN.safetensors: fixed widths (zfill(5)), or wider numbers
    if (!name.starts_with("shard-") || !name.ends_with(".safetensors")) return std::nullopt;
    const size_t model = name.find("-model-", 6);
    const size_t of = model == std::string::npos ? model : name.find("-of-", model + 7);
    if (of == std::string::npos) return std::nullopt;
    const auto digits = [&](size_t from, size_t to) {
        return to > from && to - from <= 9 &&
               std::all_of(name.begin() + long(from), name.begin() + long(to),
                           [](char c) { return std::isdigit(uint8_t(c)); });
    };
    if (!digits(6, model) || !digits(model + 7, of) || !digits(of + 4, name.size() - 12)) return std::nullopt;
    if (index) *index = std::stoi(name.substr(model + 7, of - model - 7));
    return std::stoi(name.substr(6, model - 6)) - 1;
}

// With no .metadata, a rank's missing file would only make its tensors look smaller. Every rank
// writes each model file that holds sharded tensors; one written by a single rank while others
// saved may hold only replicated tensors (written once), or have lost the others' files: said,
// and checked against the consolidated model where one lies beside (checkConsolidated).
std::vector<std::string> singleWriterFiles(const std::vector<std::string>& names)
{
    std::map<int, std::set<int>> writers; // file index -> ranks
    std::set<int> ranks;
    for (const std::string& n : names) {
        int index = 0;
        const int rank = *shardRank(n, &index);
        writers[index].insert(rank);
        ranks.insert(rank);
    }
    std::vector<std::string> out;
    for (const auto& [index, who] : writers)
        if (who.size() == 1 && ranks.size() > 1)
            out.push_back("model file " + std::to_string(index) + " comes from rank " +
                          std::to_string(*who.begin()) + " alone, while " + std::to_string(ranks.size()) +
                          " ranks saved: its tensors are whole only if they were replicated (no "
                          "consolidated model beside to check their shapes against)");
    return out;
}

// The consolidated model beside the shards (enable_consolidation): each tensor's whole shape as
// it records it must be the one the shards make, else a shard file is missing.
bool checkConsolidated(const io::Folder& shards, const Tag& tag, FileSet& files)
{
    const io::Folder top = shards.parent();
    const std::string indexPath = top.file("model.safetensors.index.json");
    if (!top.exists() || !top.sizeOf("model.safetensors.index.json")) return false;
    const auto index = nlohmann::json::parse(io::readSmallFile(indexPath, 64u << 20), nullptr, false);
    if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object()) return false;
    const auto& map = index["weight_map"];
    for (const Parameter& p : tag.params) {
        const auto it = map.find(p.name);
        if (it == map.end() || !it->is_string() || !top.sizeOf(it->get<std::string>())) continue;
        const safetensors::TensorInfo* t = files.get(top.file(it->get<std::string>()))->stFind(p.name);
        if (t && t->shape != p.shape)
            throw Error("'" + p.name + "' is " + torch::shapeText(t->shape) + " in the consolidated " +
                            it->get<std::string>() + ", but its shards here make " +
                            torch::shapeText(p.shape) + ": a shard file is missing",
                        shards.path());
    }
    return true;
}

std::vector<std::string> shardFiles(const io::Folder& dir)
{
    std::vector<std::string> out;
    if (!dir.exists() || !dir.lists()) return out;
    for (const io::FolderEntry& e : dir.entries())
        if (!e.folder && shardRank(e.name)) out.push_back(e.name);
    std::sort(out.begin(), out.end());
    return out;
}

// The folder of shard files a path names: itself, or its sharded/ when nothing else is there to
// open (no consolidated model beside it, which the Hugging Face family reads).
std::optional<io::Folder> shardFolder(const std::string& path)
{
    const io::Folder dir(path);
    if (!shardFiles(dir).empty()) return dir;
    if (!dir.exists() || !dir.lists() || !dir.has(kShardedFolder) ||
        dir.sizeOf("model.safetensors.index.json") || dir.sizeOf("model.safetensors"))
        return std::nullopt;
    const io::Folder sub = dir.folder(kShardedFolder);
    if (shardFiles(sub).empty()) return std::nullopt;
    return sub;
}

struct Piece
{
    std::string file, name;
    int rank = 0;
};

// The chunks of every tensor, gathered over the shard files.
struct Chunks
{
    std::map<std::string, dcp::Entry> entries; // by fqn
    std::map<std::string, std::vector<Piece>> pieces;
    std::vector<std::string> order; // first seen, file by file
    std::string version;
    std::set<int> ranks;
};

// One shard file's chunks, placed by its DCP_SHARDING_INFO; the file among the tag's.
void addShardFile(Chunks& all, Tag& tag, const io::Folder& dir, const std::string& fileName, FileSet& files)
{
    const std::string path = dir.file(fileName);
    const auto parsed = files.get(path);
    const safetensors::SafetensorsFile* st = parsed->safetensors();
    if (!st) throw Error("not a safetensors file", path);
    const auto meta = st->metadata().find(kShardingInfo);
    if (meta == st->metadata().end())
        throw Error(std::string("no ") + kShardingInfo + " in its metadata: not written by DCP", path);
    const auto info = nlohmann::json::parse(meta->second, nullptr, false);
    if (!info.is_object()) throw Error(std::string(kShardingInfo) + " is not a JSON object", path);
    if (const auto v = st->metadata().find("DCP_VERSION"); v != st->metadata().end()) all.version = v->second;
    const int rank = *shardRank(fileName);
    all.ranks.insert(rank);
    RankFile rf;
    rf.path = path;
    rf.name = fileName;
    rf.role = FileRole::ModelStates;
    rf.dpRank = rank;
    rf.size = st->file()->size();
    tag.files.push_back(rf);
    for (const safetensors::TensorInfo& t : st->tensors()) {
        const auto it = info.find(t.name);
        // A chunk's entry may be anything: a missing key on a const json is an assertion, not an Error.
        const nlohmann::json* offsets = it == info.end() || !it->is_object() || !it->contains("saved_offsets")
                                            ? nullptr
                                            : &it->at("saved_offsets");
        if (!offsets || !offsets->is_array() || offsets->size() != t.shape.size() ||
            !std::all_of(offsets->begin(), offsets->end(),
                         [](const auto& o) { return o.is_number_unsigned(); }))
            throw Error("'" + t.name + "' has no saved_offsets of its rank in " + kShardingInfo, path);
        auto [e, fresh] = all.entries.try_emplace(t.name);
        if (fresh) {
            e->second.fqn = t.name;
            e->second.tensor = true;
            e->second.dtype = t.dtype;
            e->second.shape.assign(t.shape.size(), 0);
            all.order.push_back(t.name);
        } else if (e->second.dtype != t.dtype || e->second.shape.size() != t.shape.size()) {
            throw Error("'" + t.name + "' is " + std::string(torch::name(t.dtype)) + " " +
                            torch::shapeText(t.shape) + " here, unlike its other chunks",
                        path);
        }
        dcp::Chunk c;
        for (size_t d = 0; d < t.shape.size(); ++d) {
            const uint64_t o = (*offsets)[d].get<uint64_t>();
            if (o > uint64_t(INT64_MAX / 2)) throw Error("'" + t.name + "' has an impossible offset", path);
            c.offsets.push_back(int64_t(o));
            c.sizes.push_back(t.shape[d]);
            e->second.shape[d] = std::max(e->second.shape[d], int64_t(o) + t.shape[d]);
        }
        e->second.chunks.push_back(std::move(c));
        all.pieces[t.name].push_back({path, t.name, rank});
    }
}

// The whole tensor from its chunks, which must tile it exactly (without .metadata the whole
// shape is only where the chunks end).
Parameter assemble(const dcp::Entry& e, const std::vector<Piece>& pieces, const io::Folder& dir)
{
    if (const std::string why = dcp::tilingProblem(e); !why.empty())
        throw Error(why + " (the shard files are not of one save)", dir.path());
    Parameter p;
    p.name = e.fqn;
    p.shape = e.shape;
    p.dtype = e.dtype;
    for (size_t i = 0; i < pieces.size(); ++i) {
        const dcp::Chunk& c = e.chunks[i];
        RankSlice s;
        s.rank = pieces[i].rank;
        s.length = 1;
        for (int64_t x : c.sizes)
            s.length *= uint64_t(x);
        if (s.length == 0) continue;
        for (size_t k = 0, stride = 1; k < c.offsets.size(); ++k) {
            const size_t d = c.offsets.size() - 1 - k;
            s.paramOffset += uint64_t(c.offsets[d]) * stride;
            stride *= size_t(e.shape[d]);
        }
        // A whole tensor (a replicated one, a 0-d scale) reads flat, in place.
        if (c.sizes == e.shape)
            s.master.push_back(Source::flat(pieces[i].file, pieces[i].name, 0, s.length, e.dtype));
        else
            s.master.push_back(Source::chunk(pieces[i].file, pieces[i].name, e.dtype, c.offsets, c.sizes));
        p.slices.push_back(std::move(s));
    }
    return p;
}

Tag openShards(const std::string& name, const io::Folder& dir, FileSet& files)
{
    Tag tag;
    tag.name = name;
    tag.dir = dir.path();
    tag.latest = true;
    tag.sharding = Sharding::NdChunks;
    Chunks all;
    const std::vector<std::string> names = shardFiles(dir);
    for (const std::string& fileName : names)
        addShardFile(all, tag, dir, fileName, files);
    for (const std::string& fqn : all.order)
        tag.params.push_back(assemble(all.entries.at(fqn), all.pieces.at(fqn), dir));
    if (tag.params.empty()) throw Error("the shard files hold no tensors", dir.path());
    if (!checkConsolidated(dir, tag, files))
        for (std::string& w : singleWriterFiles(names))
            tag.warnings.push_back(std::move(w));
    stateBadge(tag, "format", QT_TRANSLATE_NOOP("ckpt::layout", "format"), "PyTorch DCP over safetensors");
    if (!all.version.empty())
        stateBadge(tag, "dcp_version", QT_TRANSLATE_NOOP("ckpt::layout", "DCP version"), all.version);
    stateBadge(tag, "ranks", QT_TRANSLATE_NOOP("ckpt::layout", "ranks"), all.ranks.size());
    return tag;
}

class DcpSafetensorsFamily final : public Family
{
public:
    std::string_view id() const override { return "dcp-safetensors"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "PyTorch DCP over safetensors");
    }
    std::string_view lookedFor() const override
    {
        return "a PyTorch DCP checkpoint over safetensors (shard-0000R-model-0000I-of-0000N.safetensors "
               "files "
               "whose metadata holds DCP_SHARDING_INFO, or a folder whose sharded/ holds them)";
    }
    bool match(const std::string& path) const override { return shardFolder(path).has_value(); }
    TagList listTags(const std::string& path) const override
    {
        TagList l;
        l.root = path;
        l.tags.push_back({io::Folder(path).name(), path});
        l.latest = l.tags.front().first;
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, where] = list.tags.at(index);
        const auto dir = shardFolder(where);
        if (!dir) throw Error("no shard-0000R-model-0000I-of-0000N.safetensors files", where);
        return openShards(name, *dir, files);
    }
};

} // namespace

const Family& dcpSafetensorsFamily()
{
    static const DcpSafetensorsFamily f;
    return f;
}

} // namespace ckpt::layout
