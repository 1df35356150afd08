#include "layout/dcp_metadata.h"

#include "torch/dtensor.h"

#include "io/error.h"
#include "pickle/machine.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <map>

namespace ckpt::layout::dcp {

using pickle::Kind;
using pickle::Value;

namespace {

constexpr std::string_view kModule = "torch.distributed.checkpoint.";

std::string className(const Value* v)
{
    if (!v || v->kind != Kind::Call || !v->callable || v->callable->kind != Kind::Global) return {};
    return v->callable->name;
}

// An instance of a DCP class (module under torch.distributed.checkpoint): dataclasses pickle as
// NEWOBJ + BUILD, so their fields are the BUILD state.
bool isDcp(const Value* v, std::string_view name)
{
    return className(v) == name && v->callable->text.starts_with(kModule);
}

// A field of such an instance: the state dict, or the dict half of a (dict, slots) state.
const Value* field(const Value* obj, std::string_view name)
{
    const Value* s = obj ? obj->state : nullptr;
    if (s && s->kind == Kind::Tuple && s->items.size() == 2) {
        if (const Value* slots = s->items[1]; slots && slots->kind == Kind::Dict)
            if (const Value* v = torch::dictGet(slots, name)) return v;
        s = s->items[0];
    }
    return s && s->kind == Kind::Dict ? torch::dictGet(s, name) : nullptr;
}

// A name as an error message shows it: a NUL as \0 (the message is C text).
std::string shownName(std::string s)
{
    for (size_t at = s.find('\0'); at != std::string::npos; at = s.find('\0', at + 2))
        s.replace(at, 1, "\\0");
    return s;
}

std::string describe(const Value* v)
{
    return torch::pyRepr(v, 60);
}

// Chunks keyed as DCP's MetadataIndex finds them: fqn plus chunk offsets (none for values).
std::string indexKey(const std::string& fqn, const std::optional<std::vector<int64_t>>& offsets)
{
    std::string k = fqn;
    k += offsets ? '\0' : '\1';
    if (offsets)
        for (int64_t o : *offsets)
            k += std::to_string(o) + ",";
    return k;
}

using torch::shapeText;

} // namespace

// The chunks must cover the tensor exactly: each inside it, none overlapping another, and
// together as many elements as it has (no gap then). "" when they do.
std::string tilingProblem(const Entry& e)
{
    const size_t d = e.shape.size();
    uint64_t numel = 1, covered = 0;
    for (int64_t x : e.shape) {
        if (x < 0 || (x && numel > UINT64_MAX / uint64_t(x)))
            return ("'" + e.fqn + "' has an impossible size");
        numel *= uint64_t(x);
    }
    std::vector<const Chunk*> nonEmpty;
    for (const Chunk& c : e.chunks) {
        if (c.offsets.size() != d || c.sizes.size() != d)
            return ("a chunk of '" + e.fqn + "' has another rank than the tensor " + shapeText(e.shape));
        uint64_t n = 1;
        for (size_t i = 0; i < d; ++i) {
            if (c.offsets[i] < 0 || c.sizes[i] < 0 || c.offsets[i] > e.shape[i] ||
                c.sizes[i] > e.shape[i] - c.offsets[i])
                return ("chunk at " + shapeText(c.offsets) + " of size " + shapeText(c.sizes) +
                        " lies outside '" + e.fqn + "' " + shapeText(e.shape));
            n *= uint64_t(c.sizes[i]);
        }
        covered += n;
        if (n) nonEmpty.push_back(&c);
    }
    if (covered != numel)
        return ("the chunks of '" + e.fqn + "' hold " + std::to_string(covered) + " elements, the tensor " +
                std::to_string(numel));
    if (d == 0) {
        if (nonEmpty.size() > 1) return "'" + e.fqn + "' has overlapping chunks";
        return {};
    }
    // Sweep along dim 0: only chunks whose row ranges meet can overlap.
    std::sort(nonEmpty.begin(), nonEmpty.end(),
              [](const Chunk* a, const Chunk* b) { return a->offsets[0] < b->offsets[0]; });
    for (size_t i = 0; i < nonEmpty.size(); ++i)
        for (size_t j = i + 1; j < nonEmpty.size(); ++j) {
            const Chunk &a = *nonEmpty[i], &b = *nonEmpty[j];
            if (b.offsets[0] >= a.offsets[0] + a.sizes[0]) break;
            bool meet = true;
            for (size_t k = 1; k < d && meet; ++k)
                meet = a.offsets[k] < b.offsets[k] + b.sizes[k] && b.offsets[k] < a.offsets[k] + a.sizes[k];
            if (meet)
                return ("chunks at " + shapeText(a.offsets) + " and " + shapeText(b.offsets) + " of '" +
                        e.fqn + "' overlap");
        }
    return {};
}

namespace {

// What the parsed form may hold, in bytes of names and sizes copied out of the pickle, for each
// byte of it (and 1 MiB more): a memo reference costs the pickle two bytes but copies all it
// refers to, so 400 entries whose key paths share one list of 3,000 references to one 8 KB string
// would be 10 GB. Real metadata copies about as much as it holds: each fqn, size and chunk offset
// is written once.
constexpr uint64_t kCopiesPerByte = 16;
constexpr uint64_t kCopiesBase = 1u << 20;

class Reader
{
public:
    Reader(std::string file, uint64_t pickleBytes)
        : m_file(std::move(file)), m_left(kCopiesBase + kCopiesPerByte * pickleBytes)
    {
    }

    [[noreturn]] void fail(const std::string& why) const { throw Error(why, m_file); }

    // Counts `bytes` copied out of the pickle against what its size allows.
    void charge(uint64_t bytes) const
    {
        if (bytes > m_left)
            fail("refers to the same values over and over (more than " + std::to_string(kCopiesPerByte) +
                 " times the file's size once expanded): not metadata DCP writes");
        m_left -= bytes;
    }

    std::vector<int64_t> ints(const Value* v, const std::string& what) const
    {
        auto r = torch::asInts(v);
        if (!r) fail(what + " is not a size (" + describe(v) + ")");
        charge(r->size() * sizeof(int64_t) + sizeof(*r));
        return *r;
    }

    uint64_t count(const Value* v, const std::string& what) const
    {
        const auto r = torch::asInt(v);
        if (!r || *r < 0) fail(what + " is not a byte count (" + describe(v) + ")");
        return uint64_t(*r);
    }

    torch::DType dtypeOf(const Value* props, const std::string& fqn) const
    {
        // TensorProperties pickles its fields as a tuple (dtype first) via __getstate__; older
        // torch wrote the plain dataclass dict.
        const Value* d = nullptr;
        if (props && props->state && props->state->kind == Kind::Tuple && !props->state->items.empty())
            d = props->state->items[0];
        else
            d = field(props, "dtype");
        if (d && d->kind == Kind::Global && d->text == "torch")
            if (auto t = torch::fromName(d->name)) return *t;
        fail("'" + fqn + "' has no known dtype (" + describe(d) + ")");
    }

    Entry tensorEntry(const std::string& fqn, const Value* v) const
    {
        Entry e;
        e.fqn = fqn;
        e.tensor = true;
        e.dtype = dtypeOf(field(v, "properties"), fqn);
        e.shape = ints(field(v, "size"), "the size of '" + fqn + "'");
        const Value* chunks = field(v, "chunks");
        if (!chunks || chunks->kind != Kind::List) fail("'" + fqn + "' has no chunk list");
        for (const Value* c : chunks->items) {
            if (!isDcp(c, "ChunkStorageMetadata")) fail("a chunk of '" + fqn + "' is " + describe(c));
            Chunk ch;
            ch.offsets = ints(field(c, "offsets"), "a chunk offset of '" + fqn + "'");
            ch.sizes = ints(field(c, "sizes"), "a chunk size of '" + fqn + "'");
            e.chunks.push_back(std::move(ch));
        }
        checkTiling(e);
        return e;
    }

    void checkTiling(const Entry& e) const
    {
        if (const std::string why = tilingProblem(e); !why.empty()) fail(why);
    }

    std::vector<std::string> keyPath(const Value* t, const std::string& fqn) const
    {
        if (!t || (t->kind != Kind::Tuple && t->kind != Kind::List) || t->items.empty())
            fail("planner data of '" + fqn + "' is not a key path (" + describe(t) + ")");
        std::vector<std::string> out;
        for (const Value* k : t->items) {
            charge(sizeof(std::string) + (k ? k->text.size() : 0));
            if (k && k->kind == Kind::Str)
                out.push_back(k->text);
            else if (k && k->kind == Kind::Int)
                out.push_back(std::to_string(k->integer));
            else
                fail("planner data of '" + fqn + "' has a key that is neither a string nor an index");
        }
        return out;
    }

    Item item(const Value* info) const
    {
        if (!isDcp(info, "_StorageInfo")) fail("a storage entry is " + describe(info));
        Item it;
        const auto path = torch::asString(field(info, "relative_path"));
        if (!path) fail("a storage entry has no relative path");
        charge(path->size());
        it.file = *path;
        // A data file of this folder, never a path out of it (nor, through a NUL, another file).
        if (it.file.empty() || it.file.find_first_of(std::string_view("/\0", 2)) != std::string::npos ||
            it.file == "." || it.file == "..")
            fail("a storage entry names '" + shownName(it.file) + "', not a file of this folder");
        it.offset = count(field(info, "offset"), "the offset of an item in " + it.file);
        it.length = count(field(info, "length"), "the length of an item in " + it.file);
        if (const Value* t = field(info, "transform_descriptors");
            t && t->kind != Kind::None && !t->items.empty())
            fail("items in " + it.file + " are stored through transforms (" + describe(t) +
                 "), which this version does not undo");
        return it;
    }

private:
    std::string m_file;
    mutable uint64_t m_left; // bytes the parsed form may still copy
};

} // namespace

bool looksLikeMetadata(std::string_view head)
{
    return head.size() >= 2 && uint8_t(head[0]) == 0x80 && head[1] >= 2 && head[1] <= 5 &&
           head.find("torch.distributed.checkpoint.metadata") != std::string_view::npos;
}

Metadata parseMetadata(io::ByteSpan bytes, const std::string& file)
{
    const Reader r(file, bytes.size());
    pickle::Arena arena;
    pickle::Result parsed;
    try {
        // Metadata holds no tensors: a persistent id would be a foreign pickler's doing.
        parsed = pickle::parse(bytes, arena, [](const Value*) -> int64_t {
            throw Error("pickle: persistent id in DCP metadata");
        });
    } catch (const Error& e) {
        throw e.withFile(file);
    }
    const Value* root = parsed.root;
    // megatron-core 0.15 saves its subclass (one more field, mcore_data, beside torch's).
    const bool mcore = className(root) == "MCoreMetadata" &&
                       root->callable->text.starts_with("megatron.core.dist_checkpointing.");
    if (!isDcp(root, "Metadata") && !mcore) r.fail("not DCP metadata: the pickle holds " + describe(root));

    Metadata md;
    if (const auto v = torch::asString(field(root, "version"))) md.version = *v;

    // storage_data: MetadataIndex(fqn, offset, index) -> _StorageInfo(relative_path, offset, length)
    std::map<std::string, Item> items, valueItems;
    const Value* storage = field(root, "storage_data");
    if (!storage || storage->kind != Kind::Dict) r.fail("no storage_data dict");
    for (const auto& [k, v] : storage->entries) {
        if (!isDcp(k, "MetadataIndex")) r.fail("a storage_data key is " + describe(k));
        const auto fqn = torch::asString(field(k, "fqn"));
        if (!fqn) r.fail("a storage_data key has no fqn");
        r.charge(2 * fqn->size()); // the key and the value index
        std::optional<std::vector<int64_t>> offsets;
        if (const Value* o = field(k, "offset"); o && o->kind != Kind::None)
            offsets = r.ints(o, "the chunk offset of '" + *fqn + "' in storage_data");
        if (!items.emplace(indexKey(*fqn, offsets), r.item(v)).second)
            r.fail("storage_data lists a chunk of '" + *fqn + "' twice");
        valueItems.emplace(*fqn, items[indexKey(*fqn, offsets)]);
    }

    const Value* planner = field(root, "planner_data");
    const bool hasPaths = planner && planner->kind == Kind::Dict; // a custom planner may store anything

    const Value* sdm = field(root, "state_dict_metadata");
    if (!sdm || sdm->kind != Kind::Dict) r.fail("no state_dict_metadata dict");
    for (const auto& [k, v] : sdm->entries) {
        const auto fqn = torch::asString(k);
        if (!fqn) r.fail("a state_dict_metadata key is " + describe(k));
        r.charge(fqn->size());
        Entry e;
        if (isDcp(v, "TensorStorageMetadata")) {
            e = r.tensorEntry(*fqn, v);
            for (Chunk& c : e.chunks) {
                const auto it = items.find(indexKey(*fqn, c.offsets));
                if (it == items.end())
                    r.fail("storage_data has no item for the chunk at " + shapeText(c.offsets) + " of '" +
                           *fqn + "'");
                c.item = it->second;
            }
        } else if (isDcp(v, "BytesStorageMetadata")) {
            e.fqn = *fqn;
            const auto it = valueItems.find(*fqn);
            if (it == valueItems.end()) r.fail("storage_data has no item for '" + *fqn + "'");
            e.item = it->second;
        } else {
            r.fail("'" + *fqn + "' is described by " + describe(v));
        }
        const Value* path = hasPaths ? torch::dictGet(planner, *fqn) : nullptr;
        e.keyPath = path ? r.keyPath(path, *fqn) : std::vector<std::string>{*fqn};
        md.entries.push_back(std::move(e));
    }
    return md;
}

} // namespace ckpt::layout::dcp
