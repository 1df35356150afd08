#include "ops/file_listing.h"

#include "ops/inspect.h"

#include "cast.h"
#include "ops/describe_json.h"
#include "ops/detect.h"
#include "ops/tensor_source.h"
#include "safetensors/safetensors_file.h"

#include <algorithm>
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

// The `ckpt inspect --json` document of a file names its keys here, once, each over the part of
// the listing it shows: a tensor's bytes are the header's range in a safetensors file, a storage
// is shown by its key, a bloated storage's views by their paths.
struct TensorView
{
    const ListedTensor* l = nullptr;
    bool safetensors = false;

    template <class V> static void describe(V& v)
    {
        using T = TensorView;
        v("path", [](const T& t) { return t.l->tensor.path; });
        v("dtype", [](const T& t) { return std::string(torch::name(t.l->tensor.dtype)); });
        v("shape", [](const T& t) { return t.l->tensor.shape; });
        v("stride", [](const T& t) { return t.l->tensor.stride; });
        v("storage_offset", [](const T& t) { return t.l->tensor.storageOffset; });
        v("storage", [](const T& t) {
            return t.l->storage.empty() ? Nullable<std::string>{} : Nullable<std::string>{t.l->storage};
        });
        v("storage_nbytes", [](const T& t) { return t.l->storageBytes; });
        v("requires_grad", [](const T& t) { return t.l->tensor.requiresGrad; });
        v("nbytes", [](const T& t) { return listedBytes(*t.l, t.safetensors); });
        v(
            "parameter", [](const T&) { return true; }, [](const T& t) { return t.l->tensor.isParameter; });
        v(
            "subclass", [](const T& t) { return t.l->tensor.subclass; },
            [](const T& t) { return !t.l->tensor.subclass.empty(); });
        v(
            "note", [](const T& t) { return t.l->tensor.note; },
            [](const T& t) { return !t.l->tensor.note.empty(); });
        v(
            "alias_of", [](const T& t) { return t.l->aliasOf; },
            [](const T& t) { return !t.l->aliasOf.empty(); });
        v(
            "value", [](const T& t) { return t.l->value; }, [](const T& t) { return !t.l->value.empty(); });
        v(
            "storage_shared", [](const T&) { return true; }, [](const T& t) { return t.l->storageShared; });
    }
};

struct StorageView
{
    const torch::Storage* s = nullptr;

    template <class V> static void describe(V& v)
    {
        using S = StorageView;
        v("key", [](const S& x) { return x.s->key; });
        v("dtype", [](const S& x) { return std::string(torch::name(x.s->dtype)); });
        v("nbytes", [](const S& x) { return x.s->nbytes; });
        v("location", [](const S& x) { return x.s->location; });
        v("record", [](const S& x) { return x.s->record; });
    }
};

struct GlobalView
{
    const ListedGlobal* g = nullptr;

    template <class V> static void describe(V& v)
    {
        using G = GlobalView;
        v("module", [](const G& x) { return x.g->module; });
        v("name", [](const G& x) { return x.g->name; });
        v("safety", [](const G& x) { return std::string(pickle::safetyName(x.g->safety)); });
        v("count", [](const G& x) { return x.g->count; });
    }
};

struct EntryView
{
    const torch::Entry* e = nullptr;

    template <class V> static void describe(V& v)
    {
        using E = EntryView;
        v("path", [](const E& x) { return x.e->path; });
        v("depth", [](const E& x) { return x.e->depth; });
        v("kind", [](const E& x) { return std::string(entryKindName(x.e->kind)); });
        v("type", [](const E& x) { return x.e->type; });
        v(
            "summary", [](const E& x) { return x.e->summary; },
            [](const E& x) { return !x.e->summary.empty(); });
        v(
            "tensor", [](const E& x) { return x.e->tensor; }, [](const E& x) { return x.e->tensor >= 0; });
    }
};

struct BloatStorageView
{
    const StorageBloat* s = nullptr;
    const FileListing* l = nullptr;

    template <class V> static void describe(V& v)
    {
        using B = BloatStorageView;
        v("key", [](const B& x) { return x.l->storages[size_t(x.s->storage)].key; });
        v("nbytes", [](const B& x) { return x.s->nbytes; });
        v("used_bytes", [](const B& x) { return x.s->usedBytes; });
        v(
            "whole", [](const B&) { return true; }, [](const B& x) { return x.s->wholeUse; });
        v(
            "approximate", [](const B&) { return true; }, [](const B& x) { return x.s->approximate; });
        v("tensors", [](const B& x) {
            std::vector<std::string> paths;
            for (int t : x.s->tensors)
                paths.push_back(x.l->tensors[size_t(t)].tensor.path);
            return paths;
        });
    }
};

struct BloatView
{
    const FileBloat* b = nullptr;
    const FileListing* l = nullptr;

    template <class V> static void describe(V& v)
    {
        using B = BloatView;
        v("file_bytes", [](const B& x) { return x.b->fileBytes; });
        v("storage_bytes", [](const B& x) { return x.b->storageBytes; });
        v("used_bytes", [](const B& x) { return x.b->usedBytes; });
        v("reclaimable_bytes", [](const B& x) { return x.b->reclaimableBytes(); });
        v("overhead_bytes", [](const B& x) { return x.b->overheadBytes; });
        v("storages", [](const B& x) {
            std::vector<BloatStorageView> out;
            for (const auto& s : x.b->storages)
                out.push_back({&s, x.l});
            return out;
        });
    }
};

// Safetensors files have a header's metadata and no storages or pickle globals; torch files the
// other way round.
struct ListingView
{
    const FileListing* l = nullptr;

    bool safetensors() const { return l->format == "safetensors"; }

    template <class V> static void describe(V& v)
    {
        using L = ListingView;
        const auto st = [](const L& x) { return x.safetensors(); };
        const auto torchFile = [](const L& x) { return !x.safetensors(); };
        v("file", [](const L& x) { return x.l->file; });
        v("format", [](const L& x) { return x.l->format; });
        v("protocol", [](const L& x) { return x.l->protocol; });
        v("file_size", [](const L& x) { return x.l->fileSize; });
        v(
            "metadata", [](const L& x) { return x.l->metadata; }, st);
        v("tensors", [](const L& x) { return viewsOf<TensorView>(x.l->tensors, x.safetensors()); });
        v(
            "storages", [](const L& x) { return viewsOf<StorageView>(x.l->storages); }, torchFile);
        v(
            "globals", [](const L& x) { return viewsOf<GlobalView>(x.l->globals); }, torchFile);
        v("entries", [](const L& x) { return viewsOf<EntryView>(x.l->entries); });
        v("bloat", [](const L& x) {
            return x.l->bloat ? std::optional<BloatView>(BloatView{&*x.l->bloat, x.l}) : std::nullopt;
        });
        v("warnings", [](const L& x) { return x.l->warnings; });
    }

    // One view of each item, the rest of its fields given after it.
    template <class View, class Item, class... Rest>
    static std::vector<View> viewsOf(const std::vector<Item>& items, Rest... rest)
    {
        std::vector<View> out;
        out.reserve(items.size());
        for (const auto& i : items)
            out.push_back({&i, rest...});
        return out;
    }
};

} // namespace

namespace {

std::string under(const std::string& label, const std::string& path)
{
    return path.empty() ? label : label + "/" + path;
}

// One item's listing appended to the file's, its paths and keys under the item's label.
void appendItem(FileListing& into, FileListing item, const std::string& label)
{
    const int tensorBase = int(into.tensors.size()), storageBase = int(into.storages.size());
    for (ListedTensor& t : item.tensors) {
        t.tensor.path = under(label, t.tensor.path);
        if (t.tensor.storage >= 0) t.tensor.storage += storageBase;
        if (t.tensor.aliasOf >= 0) t.tensor.aliasOf += tensorBase;
        if (!t.storage.empty()) t.storage = under(label, t.storage);
        if (!t.aliasOf.empty()) t.aliasOf = under(label, t.aliasOf);
        into.tensors.push_back(std::move(t));
    }
    for (torch::Storage& st : item.storages) {
        st.key = under(label, st.key);
        into.storages.push_back(std::move(st));
    }
    for (torch::Entry& e : item.entries) { // one level below the file's root
        e.path = under(label, e.path);
        if (e.depth == 0) e.name = label;
        ++e.depth;
        if (e.tensor >= 0) e.tensor += tensorBase;
        into.entries.push_back(std::move(e));
    }
    for (const ListedGlobal& g : item.globals) {
        const auto same = std::find_if(into.globals.begin(), into.globals.end(), [&](const ListedGlobal& x) {
            return x.module == g.module && x.name == g.name;
        });
        if (same == into.globals.end())
            into.globals.push_back(g);
        else
            same->count += g.count;
    }
    for (const std::string& w : item.warnings)
        into.warnings.push_back(label + ": " + w);
}

} // namespace

FileListing listItems(const layout::RankFile& file, const layout::FileSet& files)
{
    FileListing l;
    l.file = file.path;
    l.format = "dcp";
    l.fileSize = file.size;
    // The file's root, as a torch file's listing has one: a dict of its items by label.
    torch::Entry root;
    root.kind = torch::EntryKind::Dict;
    root.type = "dict";
    root.summary = std::to_string(file.items.size()) + " items";
    l.entries.push_back(std::move(root));
    for (const layout::RankFile::Item& item : file.items)
        appendItem(l, listFile(*files.get(item.id)), item.label);
    return l;
}

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

uint64_t listedBytes(const ListedTensor& t, bool safetensors)
{
    return safetensors ? t.storageBytes : t.tensor.nbytes();
}

ordered_json toJson(const FileListing& l)
{
    return describedJson(ListingView{&l});
}

} // namespace ckpt::ops
