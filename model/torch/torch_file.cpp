#include "torch/torch_file.h"

#include "compute_backend.h"
#include "io/parse_count.h"
#include "torch/py_repr.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>

namespace ckpt::torch {

using pickle::Kind;
using pickle::Value;

namespace {

constexpr uint8_t kLegacyMagic[] = {0x6C, 0xFC, 0x9C, 0x46, 0xF9, 0x20, 0x6A, 0xA8, 0x50, 0x19};
constexpr int kMaxDepth = 1000;

const Value* item(const Value* tuple, size_t i)
{
    if (!tuple || (tuple->kind != Kind::Tuple && tuple->kind != Kind::List) || i >= tuple->items.size())
        return nullptr;
    return tuple->items[i];
}

std::string_view strOf(const Value* v)
{
    // Python-2 era files may carry bytes where str is expected (encoding='bytes').
    if (v && (v->kind == Kind::Str || v->kind == Kind::Bytes)) return v->text;
    return {};
}

std::optional<int64_t> intOf(const Value* v)
{
    if (v && v->kind == Kind::Int) return v->integer;
    if (v && v->kind == Kind::Bool) return v->boolean ? 1 : 0;
    return std::nullopt;
}

std::string globalName(const Value* g)
{
    if (!g) return "?";
    if (g->kind == Kind::Global) return g->text + "." + g->name;
    return "<" + pyRepr(g, 40) + ">";
}

// What an opaque object's Value column says. An enum member is pickled as a call of its class on
// its value (REDUCE), so it is shown as such, "ZeroStageEnum(2)", and DeepSpeed's ZeRO stage in
// words. Anything else is only "object" or "reduce": its state is in the rows below it.
std::string objectSummary(const Value* v, const Value* fn)
{
    if (v->isNew) return "object";
    if (!fn || fn->kind != Kind::Global || !v->args || v->args->items.size() != 1) return "reduce";
    const Value* a = v->args->items[0];
    if (a->kind != Kind::Int && a->kind != Kind::Str && a->kind != Kind::Float && a->kind != Kind::Bool)
        return "reduce";
    std::string text = fn->name + "(" + pyRepr(a, 60) + ")";
    if (fn->name == "ZeroStageEnum" && a->kind == Kind::Int && a->integer >= 0 && a->integer <= 3) {
        static const char* const what[] = {"disabled", "optimizer states partitioned",
                                           "optimizer states and gradients partitioned",
                                           "optimizer states, gradients and parameters partitioned"};
        text += ": ZeRO stage " + std::to_string(a->integer) + " (" + what[a->integer] + ")";
    }
    return text;
}

} // namespace

uint64_t Tensor::numel() const
{
    return gpu::numelOf(shape);
}

bool Tensor::isContiguous() const
{
    return gpu::isContiguous(shape, stride);
}

bool TorchFile::looksLikeTorch(io::ByteSpan head)
{
    if (io::ZipReader::looksLikeZip(head)) return true;
    // Legacy: a pickle whose first object is the magic LONG; protocol 2 is the common spelling.
    return head.size() >= 15 && head[0] == 0x80 && head[2] == 0x8A && head[3] == 0x0A &&
           std::memcmp(head.data() + 4, kLegacyMagic, 10) == 0;
}

std::unique_ptr<TorchFile> TorchFile::open(const std::string& path, const pickle::Limits& limits)
{
    return open(io::MappedFile::open(path), limits);
}

std::unique_ptr<TorchFile> TorchFile::open(std::shared_ptr<const io::MappedFile> file,
                                           const pickle::Limits& limits)
{
    ++s_parses;
    std::unique_ptr<TorchFile> f(new TorchFile);
    f->m_file = std::move(file);
    const std::string path = f->m_file->path();
    io::ParseCount::add(path);
    try {
        if (f->m_file->size() == 0) throw Error("file is empty");
        f->m_file->ensure(0, 4);
        if (io::ZipReader::looksLikeZip(f->m_file->bytes()))
            f->openZip(limits);
        else
            f->openLegacy(limits);
        f->checkStorageRecords();
        f->walk();
    } catch (const Error& e) {
        throw e.withFile(path);
    }
    return f;
}

int64_t TorchFile::persistentLoad(const Value* pid, bool legacy)
{
    const Value* tag = item(pid, 0);
    if (strOf(tag) == "module") {
        m_warnings.push_back("pickled module class " + globalName(item(pid, 1)) + " (its source is not run)");
        return -1;
    }
    if (strOf(tag) != "storage" || (pid->items.size() != 5 && pid->items.size() != 6))
        throw Error("pickle: persistent id is not a torch storage reference: " + pyRepr(pid));
    const Value* type = item(pid, 1);
    const std::string key(strOf(item(pid, 2)));
    const std::string location(strOf(item(pid, 3)));
    const auto numel = intOf(item(pid, 4));
    if (!type || type->kind != Kind::Global || key.empty() || !numel || *numel < 0)
        throw Error("pickle: malformed storage reference " + pyRepr(pid));

    DType dtype = DType::UInt8;
    if (type->name == "UntypedStorage" && (type->text == "torch.storage" || type->text == "torch")) {
        dtype = DType::UInt8;
    } else if (auto d = fromStorageClass(type->name);
               d && (type->text == "torch" || type->text == "torch.cuda")) {
        dtype = *d;
    } else {
        throw Error("pickle: unknown storage type " + globalName(type));
    }
    const uint64_t es = elementSize(dtype);
    if (uint64_t(*numel) > UINT64_MAX / es) throw Error("pickle: storage '" + key + "' size overflows");

    auto findOrAdd = [&](const std::string& k, uint64_t nbytes) -> int {
        // first reference fixes dtype, as torch.load does
        if (auto it = m_storageByKey.find(k); it != m_storageByKey.end()) return it->second;
        m_storageByKey.emplace(k, int(m_storages.size()));
        Storage s;
        s.key = k;
        s.dtype = dtype;
        s.nbytes = nbytes;
        s.location = location;
        s.record = legacy ? std::string() : m_prefix + "data/" + k;
        m_storages.push_back(std::move(s));
        return int(m_storages.size() - 1);
    };
    const int root = findOrAdd(key, uint64_t(*numel) * es);

    const Value* view = item(pid, 5);
    if (!view || view->kind == Kind::None) return root;
    // Old legacy writers: (view_key, offset, view_numel) into the root storage.
    const std::string viewKey(strOf(item(view, 0)));
    const auto off = intOf(item(view, 1));
    const auto vn = intOf(item(view, 2));
    if (viewKey.empty() || !off || !vn || *off < 0 || *vn < 0 ||
        !io::rangeFits(uint64_t(*off) * es, uint64_t(*vn) * es, m_storages[size_t(root)].nbytes))
        throw Error("pickle: storage view " + pyRepr(view) + " does not fit its root storage '" + key + "'");
    const int v = findOrAdd(viewKey, uint64_t(*vn) * es);
    m_storages[size_t(v)].viewOf = root;
    m_storages[size_t(v)].viewOffset = uint64_t(*off) * es;
    return v;
}

void TorchFile::openZip(const pickle::Limits& limits)
{
    m_format = Format::Zip;
    m_zip = std::make_unique<io::ZipReader>(m_file);
    // The archive's single top folder is found by its data.pkl, not assumed from the file name.
    const io::ZipEntry* pkl = nullptr;
    for (const auto& e : m_zip->entries()) {
        const std::string_view n = e.name;
        const bool top = n == "data.pkl";
        const bool nested = n.size() > 9 && n.substr(n.size() - 9) == "/data.pkl" &&
                            n.substr(0, n.size() - 9).find('/') == std::string_view::npos;
        if (!top && !nested) continue;
        if (pkl) throw Error("zip holds more than one data.pkl ('" + pkl->name + "', '" + e.name + "')");
        pkl = &e;
    }
    if (!pkl) throw Error("zip archive has no data.pkl: not a torch.save checkpoint");
    m_prefix = pkl->name.substr(0, pkl->name.size() - 8);
    if (m_zip->find(m_prefix + "constants.pkl"))
        throw Error("this is a TorchScript archive (torch.jit.save), not a torch.save checkpoint");
    if (!m_zip->find(m_prefix + "version") && !m_zip->find(m_prefix + ".data/version"))
        m_warnings.push_back("zip has no 'version' record; torch.load would refuse it");
    if (const io::ZipEntry* bo = m_zip->find(m_prefix + "byteorder")) {
        const io::Blob b = m_zip->read(*bo);
        if (io::asStringView(b.bytes) != "little")
            throw Error(
                "storages are stored big-endian (byteorder record); only little-endian files are supported");
    }
    const io::Blob pklBytes = m_zip->read(*pkl);
    try {
        auto result = pickle::parse(
            pklBytes.bytes, m_arena, [this](const Value* pid) { return persistentLoad(pid, false); }, limits);
        m_root = result.root;
        m_protocol = result.protocol;
        m_globals = std::move(result.globals);
        if (result.end != pklBytes.size())
            m_warnings.push_back(std::to_string(pklBytes.size() - result.end) +
                                 " bytes after the pickle's STOP in " + pkl->name);
    } catch (const Error& e) {
        throw Error(e.message() + " in " + pkl->name, {}, e.offset());
    }
}

void TorchFile::openLegacy(const pickle::Limits& limits)
{
    m_format = Format::Legacy;
    // A legacy file is one pickle stream after another with storages between them: where each
    // ends is known only by reading it, so a remote one is fetched whole.
    m_file->ensure(0, m_file->size());
    const io::ByteSpan all = m_file->bytes();
    uint64_t pos = 0;
    auto next = [&](const char* what, bool withStorages) {
        try {
            pickle::PersistentLoad pl;
            if (withStorages) pl = [this](const Value* pid) { return persistentLoad(pid, true); };
            auto r = pickle::parse(all.subspan(pos), m_arena, pl, limits);
            for (auto& g : r.globals) {
                g.offset += pos;
                m_globals.push_back(std::move(g));
            }
            pos += r.end;
            return r;
        } catch (const Error& e) {
            throw Error(e.message() + " (" + what + ")", {},
                        e.offset() == Error::kNoOffset ? pos : pos + e.offset());
        }
    };
    const auto magic = next("magic number", false);
    const Value* m = magic.root;
    if (!m || m->kind != Kind::BigInt || m->text.size() != 10 ||
        std::memcmp(m->text.data(), kLegacyMagic, 10) != 0)
        throw Error("not a PyTorch checkpoint (neither a zip archive nor the legacy magic number)");
    const auto version = next("protocol version", false);
    if (!version.root || version.root->kind != Kind::Int || version.root->integer != 1001)
        throw Error("legacy checkpoint has protocol version " + pyRepr(version.root) + ", expected 1001");
    next("sys_info", false);
    const auto obj = next("object", true);
    m_root = obj.root;
    m_protocol = obj.protocol;
    const auto keys = next("storage keys", false);
    if (!keys.root || keys.root->kind != Kind::List)
        throw Error("legacy checkpoint: storage key list is missing");

    // Raw storages follow in key-list order: int64 element count, then the bytes.
    for (const Value* k : keys.root->items) {
        const std::string key(strOf(k));
        const auto found = m_storageByKey.find(key);
        const int idx = found != m_storageByKey.end() && m_storages[size_t(found->second)].viewOf < 0
                            ? found->second
                            : -1;
        if (idx < 0)
            throw Error("legacy checkpoint lists storage '" + key + "' that no tensor references", {}, pos);
        Storage& s = m_storages[size_t(idx)];
        if (!io::rangeFits(pos, 8, all.size()))
            throw Error("legacy checkpoint is truncated in the header of storage '" + key + "'", {}, pos);
        const int64_t count = io::loadLE<int64_t>(all.data() + pos);
        const uint64_t es = elementSize(s.dtype);
        if (count < 0 || uint64_t(count) * es != s.nbytes)
            throw Error("legacy storage '" + key + "' holds " + std::to_string(count) +
                            " elements, the pickle declares " + std::to_string(s.nbytes / es),
                        {}, pos);
        pos += 8;
        if (!io::rangeFits(pos, s.nbytes, all.size()))
            throw Error("legacy checkpoint is truncated inside storage '" + key + "' (needs " +
                            std::to_string(s.nbytes) + " bytes, " + std::to_string(all.size() - pos) +
                            " left)",
                        {}, pos);
        s.fileOffset = pos;
        s.record = "#" + std::to_string(pos);
        pos += s.nbytes;
    }
    for (const Storage& s : m_storages)
        if (s.viewOf < 0 && s.record.empty())
            throw Error("legacy checkpoint never stores the bytes of storage '" + s.key + "'");
    if (pos != all.size())
        m_warnings.push_back(std::to_string(all.size() - pos) + " unexpected bytes after the last storage");
}

void TorchFile::checkStorageRecords()
{
    if (m_format != Format::Zip) return;
    for (const Storage& s : m_storages) {
        const io::ZipEntry* e = m_zip->find(s.record);
        if (!e) throw Error("storage record '" + s.record + "' is missing from the archive");
        if (e->size < s.nbytes)
            throw Error("storage record '" + s.record + "' holds " + std::to_string(e->size) +
                        " bytes but the pickle declares " + std::to_string(s.nbytes));
    }
}

io::Blob TorchFile::storageBytes(int index, bool fetch) const
{
    const Storage& s = m_storages.at(size_t(index));
    if (s.viewOf >= 0) {
        io::Blob root = storageBytes(s.viewOf, fetch);
        return {root.bytes.subspan(s.viewOffset, s.nbytes), root.owner};
    }
    if (m_format == Format::Legacy) return {m_file->bytes().subspan(s.fileOffset, s.nbytes), m_file};
    const io::ZipEntry& e = *m_zip->find(s.record);
    if (e.method == 0) return m_zip->read(e, s.nbytes, fetch);

    std::lock_guard<std::mutex> lock(m_inflatedMutex);
    auto hit =
        std::find_if(m_inflated.begin(), m_inflated.end(), [&](const auto& c) { return c.first == index; });
    if (hit != m_inflated.end()) {
        std::rotate(hit, hit + 1, m_inflated.end());
        return m_inflated.back().second;
    }
    // Only what the pickle declares is inflated: bytes of the record beyond it are never read.
    io::Blob b = m_zip->read(e, s.nbytes);
    uint64_t kept = b.size();
    for (const auto& c : m_inflated)
        kept += c.second.size();
    auto keep = m_inflated.begin();
    while (keep != m_inflated.end() && kept > kInflatedBudget)
        kept -= keep++->second.size();
    m_inflated.erase(m_inflated.begin(), keep);
    m_inflated.emplace_back(index, b);
    return b;
}

std::optional<io::ByteSpan> TorchFile::mappedStorageBytes(int index) const
{
    const Storage& s = m_storages.at(size_t(index));
    if (s.viewOf >= 0) {
        const auto root = mappedStorageBytes(s.viewOf);
        if (!root) return std::nullopt;
        return root->subspan(s.viewOffset, s.nbytes);
    }
    if (m_format == Format::Legacy) return m_file->bytes().subspan(s.fileOffset, s.nbytes);
    const io::ZipEntry& e = *m_zip->find(s.record);
    if (e.method != 0) return std::nullopt;
    m_file->ensure(e.dataOffset, s.nbytes);
    return m_file->bytes().subspan(e.dataOffset, s.nbytes);
}

// ---------------------------------------------------------------------------------------------
// Walking the value tree: recognise tensors and containers, give every node a path.

class Walker
{
public:
    explicit Walker(TorchFile& f) : m_f(f) {}

    void run() { visit(m_f.m_root, "", "", 0); }

private:
    [[noreturn]] void fail(const std::string& path, const std::string& why)
    {
        throw Error("tensor '" + path + "': " + why);
    }

    static std::optional<std::vector<int64_t>> ints(const Value* v) { return asInts(v); }

    // Builds a tensor from (storage, offset, size, stride) and checks it against its storage.
    Tensor fromStorage(const std::string& path, const Value* args, size_t sizeAt, std::optional<DType> dtype)
    {
        const Value* ref = item(args, 0);
        if (!ref || ref->kind != Kind::PersistentRef || ref->integer < 0 ||
            size_t(ref->integer) >= m_f.m_storages.size())
            fail(path, "first argument is not a storage");
        const Storage& s = m_f.m_storages[size_t(ref->integer)];
        Tensor t;
        t.path = path;
        t.storage = int(ref->integer);
        t.dtype = dtype ? *dtype : s.dtype;
        const auto off = intOf(item(args, 1));
        auto shape = ints(item(args, sizeAt));
        auto stride = ints(item(args, sizeAt + 1));
        if (!off || !shape || !stride) fail(path, "malformed offset, size or stride");
        if (shape->size() != stride->size()) fail(path, "size and stride have different lengths");
        t.storageOffset = *off;
        t.shape = std::move(*shape);
        t.stride = std::move(*stride);
        if (t.storageOffset < 0) fail(path, "negative storage offset");
        // Bounds: the last element must lie inside the storage; all arithmetic checked.
        uint64_t numel = 1, last = uint64_t(t.storageOffset);
        for (size_t i = 0; i < t.shape.size(); ++i) {
            if (t.shape[i] < 0 || t.stride[i] < 0) fail(path, "negative size or stride");
            if (t.shape[i] != 0 && numel > UINT64_MAX / uint64_t(t.shape[i]))
                fail(path, "element count overflows");
            numel *= uint64_t(t.shape[i]);
        }
        if (numel > 0) {
            for (size_t i = 0; i < t.shape.size(); ++i) {
                const uint64_t span = uint64_t(t.shape[i] - 1);
                if (span && uint64_t(t.stride[i]) > (UINT64_MAX / 2) / span) fail(path, "stride overflows");
                last += span * uint64_t(t.stride[i]);
                if (last > UINT64_MAX / 16) fail(path, "extent overflows");
            }
            const uint64_t es = elementSize(t.dtype);
            if ((last + 1) * es > s.nbytes)
                fail(path, "needs " + std::to_string((last + 1) * es) + " bytes of storage '" + s.key +
                               "', which has " + std::to_string(s.nbytes));
        }
        return t;
    }

    std::optional<Tensor> recognise(const std::string& path, const Value* fn, const Value* args, bool isNew,
                                    int depth)
    {
        if (!fn || fn->kind != Kind::Global || depth > 8) return std::nullopt;
        const std::string& mod = fn->text;
        const std::string& nm = fn->name;
        if (mod == "torch._utils") {
            if (nm == "_rebuild_tensor_v2" || nm == "_rebuild_tensor") {
                Tensor t = fromStorage(path, args, 2, std::nullopt);
                if (nm == "_rebuild_tensor_v2") t.requiresGrad = intOf(item(args, 4)).value_or(0) != 0;
                return t;
            }
            if (nm == "_rebuild_tensor_v3") {
                const Value* d = item(args, 6);
                std::optional<DType> dt;
                if (d && d->kind == Kind::Global && d->text == "torch") dt = fromName(d->name);
                if (!dt) fail(path, "_rebuild_tensor_v3 without a known dtype");
                Tensor t = fromStorage(path, args, 2, dt);
                t.requiresGrad = intOf(item(args, 4)).value_or(0) != 0;
                return t;
            }
            if (nm == "_rebuild_qtensor") {
                Tensor t = fromStorage(path, args, 2, std::nullopt);
                t.requiresGrad = intOf(item(args, 5)).value_or(0) != 0;
                t.note = "quantized " + pyRepr(item(args, 4), 60);
                return t;
            }
            if (nm == "_rebuild_parameter" || nm == "_rebuild_parameter_with_state") {
                const Value* inner = item(args, 0);
                if (!inner || inner->kind != Kind::Call) return std::nullopt;
                auto t = recognise(path, inner->callable, inner->args, inner->isNew, depth + 1);
                if (!t) return std::nullopt;
                t->requiresGrad = intOf(item(args, 1)).value_or(0) != 0;
                t->isParameter = true;
                return t;
            }
            if (nm == "_rebuild_device_tensor_from_cpu_tensor") {
                const Value* inner = item(args, 0);
                if (!inner || inner->kind != Kind::Call) return std::nullopt;
                return recognise(path, inner->callable, inner->args, inner->isNew, depth + 1);
            }
            if (nm == "_rebuild_meta_tensor_no_storage" || nm == "_rebuild_wrapper_subclass") {
                const bool meta = nm == "_rebuild_meta_tensor_no_storage";
                const Value* d = item(args, meta ? 0 : 1);
                auto shape = ints(item(args, meta ? 1 : 2));
                auto stride = ints(item(args, meta ? 2 : 3));
                std::optional<DType> dt;
                if (d && d->kind == Kind::Global) dt = fromName(d->name);
                if (!dt || !shape || !stride) return std::nullopt;
                Tensor t;
                t.path = path;
                t.dtype = *dt;
                t.shape = *shape;
                t.stride = *stride;
                t.note = meta ? "meta tensor (no data)" : "wrapper subclass (no data)";
                return t;
            }
        }
        if ((mod == "torch._tensor" && (nm == "_rebuild_from_type_v2" || nm == "_rebuild_from_type"))) {
            // A DTensor: its local shard is the tensor (with data), its spec where that lies.
            std::optional<PickledDTensor> d;
            try {
                d = readDTensor(args);
            } catch (const Error& e) {
                fail(path, e.message());
            }
            if (d && d->local->kind == Kind::Call) {
                auto t = recognise(path, d->local->callable, d->local->args, d->local->isNew, depth + 1);
                if (!t || t->storage < 0) fail(path, "a DTensor whose local tensor has no data");
                t->subclass = globalName(item(args, 1));
                t->dtensor = std::make_shared<const DTensorSpec>(std::move(d->spec));
                return t;
            }
            auto t = recognise(path, item(args, 0), item(args, 2), false, depth + 1);
            if (t) t->subclass = globalName(item(args, 1));
            return t;
        }
        if (isNew && mod == "torch.nn.parameter" && nm == "Parameter") {
            const Value* inner = item(args, 0);
            if (!inner || inner->kind != Kind::Call) return std::nullopt;
            auto t = recognise(path, inner->callable, inner->args, inner->isNew, depth + 1);
            if (t) {
                t->isParameter = true;
                t->requiresGrad = intOf(item(args, 1)).value_or(1) != 0;
            }
            return t;
        }
        return std::nullopt;
    }

    static std::string items(size_t n) { return std::to_string(n) + (n == 1 ? " item" : " items"); }

    static std::string keyString(const Value* k)
    {
        if (!k) return "None";
        switch (k->kind) {
        case Kind::Str:
            return k->text;
        case Kind::Bytes:
            return pyRepr(k);
        default:
            return pyRepr(k, 200);
        }
    }

    int addEntry(const std::string& path, const std::string& name, int depth, EntryKind kind,
                 std::string type, std::string summary)
    {
        Entry e;
        e.path = path;
        e.name = name;
        e.depth = depth;
        e.kind = kind;
        e.type = std::move(type);
        e.summary = std::move(summary);
        m_f.m_entries.push_back(std::move(e));
        return int(m_f.m_entries.size() - 1);
    }

    static std::string join(const std::string& path, const std::string& name)
    {
        return path.empty() ? name : path + "/" + name;
    }

    void visitChildren(const Value* v, const std::string& path, int depth)
    {
        size_t i = 0;
        for (const Value* x : v->items)
            visit(x, join(path, std::to_string(i)), std::to_string(i), depth + 1), ++i;
        for (const auto& [k, x] : v->entries) {
            const std::string name = keyString(k);
            visit(x, join(path, name), name, depth + 1);
        }
    }

    void visit(const Value* v, const std::string& path, const std::string& name, int depth)
    {
        if (depth > kMaxDepth)
            throw Error("object nesting deeper than " + std::to_string(kMaxDepth) + " levels at '" +
                        path.substr(0, 60) + "...'");
        if (!v) return;

        auto seen = m_seen.find(v);
        if (v->kind == Kind::Call) {
            if (auto t = recognise(path, v->callable, v->args, v->isNew, 0)) {
                if (seen != m_seen.end()) {
                    const int first = m_f.m_entries[size_t(seen->second)].tensor;
                    t->aliasOf = first;
                }
                m_f.m_tensors.push_back(std::move(*t));
                const Tensor& tt = m_f.m_tensors.back();
                const int e =
                    addEntry(path, name, depth, EntryKind::Tensor, std::string(torch::name(tt.dtype)), {});
                m_f.m_entries[size_t(e)].tensor = int(m_f.m_tensors.size() - 1);
                if (seen == m_seen.end()) m_seen.emplace(v, e);
                return;
            }
        }
        const bool shareable = v->isContainer() || v->kind == Kind::Call;
        if (shareable && seen != m_seen.end()) {
            addEntry(path, name, depth, EntryKind::Alias, "alias",
                     "same object as '" + m_f.m_entries[size_t(seen->second)].path + "'");
            return;
        }

        switch (v->kind) {
        case Kind::Dict: {
            const int e = addEntry(path, name, depth, EntryKind::Dict, "dict", items(v->entries.size()));
            m_seen.emplace(v, e);
            visitChildren(v, path, depth);
            return;
        }
        case Kind::List:
        case Kind::Tuple:
        case Kind::Set:
        case Kind::FrozenSet: {
            const bool list = v->kind == Kind::List, tuple = v->kind == Kind::Tuple;
            const int e = addEntry(path, name, depth,
                                   list    ? EntryKind::List
                                   : tuple ? EntryKind::Tuple
                                           : EntryKind::Set,
                                   list                   ? "list"
                                   : tuple                ? "tuple"
                                   : v->kind == Kind::Set ? "set"
                                                          : "frozenset",
                                   items(v->items.size()));
            m_seen.emplace(v, e);
            if (v->kind == Kind::Set || v->kind == Kind::FrozenSet) {
                addSetSummary(e, v);
                return;
            }
            visitChildren(v, path, depth);
            return;
        }
        case Kind::Call:
            visitCall(v, path, name, depth);
            return;
        default:
            addEntry(path, name, depth, EntryKind::Value, valueType(v), pyRepr(v));
            return;
        }
    }

    void addSetSummary(int e, const Value* v) { m_f.m_entries[size_t(e)].summary = pyRepr(v); }

    static std::string valueType(const Value* v)
    {
        switch (v->kind) {
        case Kind::None:
            return "None";
        case Kind::Bool:
            return "bool";
        case Kind::Int:
        case Kind::BigInt:
            return "int";
        case Kind::Float:
            return "float";
        case Kind::Str:
            return "str";
        case Kind::Bytes:
            return "bytes";
        case Kind::ByteArray:
            return "bytearray";
        case Kind::Global:
            return "global";
        case Kind::PersistentRef:
            return "storage";
        case Kind::Ext:
            return "ext";
        default:
            return "?";
        }
    }

    void visitCall(const Value* v, const std::string& path, const std::string& name, int depth)
    {
        const std::string type = globalName(v->callable);
        const Value* fn = v->callable;
        const bool dictLike =
            fn && fn->kind == Kind::Global && fn->text == "collections" &&
            (fn->name == "OrderedDict" || fn->name == "Counter" || fn->name == "defaultdict");
        if (dictLike) {
            const int e = addEntry(path, name, depth, EntryKind::Dict, fn->name, items(v->entries.size()));
            m_seen.emplace(v, e);
            // OrderedDict([(k, v), ...]) as protocol 0/1 writes it.
            if (const Value* init = item(v->args, fn->name == "defaultdict" ? 1 : 0))
                for (const Value* kv : init->items)
                    if (kv->kind == Kind::Tuple && kv->items.size() == 2) {
                        const std::string k = keyString(kv->items[0]);
                        visit(kv->items[1], join(path, k), k, depth + 1);
                    }
            visitChildren(v, path, depth);
            return;
        }
        // Small builtins whose value we can show without running them.
        if (fn && fn->kind == Kind::Global) {
            const std::string g = fn->text + "." + fn->name;
            if (g == "torch.Size" || g == "torch.device" || g == "builtins.complex" ||
                g == "_codecs.encode" || g == "builtins.bytes" || g == "builtins.bytearray" ||
                g == "torch.serialization._get_layout" || g == "builtins.set" || g == "builtins.frozenset" ||
                g == "datetime.timedelta" || g == "torch.torch_version.TorchVersion" || isNumpyValue(v)) {
                const int e = addEntry(path, name, depth, EntryKind::Value, fn->name, pyRepr(v, 120));
                m_seen.emplace(v, e);
                return;
            }
        }
        // Anything else is an opaque object: show its class and walk its state so tensors inside
        // (a pickled nn.Module, an argparse.Namespace) are still found.
        std::string cls = type;
        if (v->calls("copyreg", "_reconstructor")) cls = globalName(item(v->args, 0));
        const int e = addEntry(path, name, depth, EntryKind::Object, cls, objectSummary(v, fn));
        m_seen.emplace(v, e);
        if (!v->isNew && !v->calls("copyreg", "_reconstructor") && v->args && !v->args->items.empty()) {
            const std::string p = join(path, "__args__");
            visit(v->args, p, "__args__", depth + 1);
        }
        if (const Value* st = v->state) {
            if (st->kind == Kind::Dict)
                visitChildren(st, path, depth);
            else if (st->kind == Kind::Tuple && st->items.size() == 2) {
                for (const Value* part : st->items)
                    if (part->kind == Kind::Dict) visitChildren(part, path, depth);
            } else {
                visit(st, join(path, "__state__"), "__state__", depth + 1);
            }
        }
        visitChildren(v, path, depth); // items appended / set on the object itself
    }

    TorchFile& m_f;
    std::unordered_map<const Value*, int> m_seen;
};

void TorchFile::walk()
{
    Walker(*this).run();
    for (size_t i = 0; i < m_tensors.size(); ++i)
        m_tensorByPath.emplace(m_tensors[i].path, int(i));
}

const Tensor* TorchFile::tensor(std::string_view path) const
{
    auto it = m_tensorByPath.find(std::string(path));
    return it == m_tensorByPath.end() ? nullptr : &m_tensors[size_t(it->second)];
}

const Value* TorchFile::value(std::string_view path) const
{
    const Value* v = m_root;
    while (v && !path.empty()) {
        const auto slash = path.find('/');
        const std::string_view part = path.substr(0, slash);
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
        if (v->kind == Kind::List || v->kind == Kind::Tuple) {
            size_t i = 0;
            auto [p, ec] = std::from_chars(part.data(), part.data() + part.size(), i);
            v = ec == std::errc() && p == part.data() + part.size() ? seqAt(v, i) : nullptr;
        } else {
            v = dictGet(v, part);
        }
    }
    return v;
}

const Value* dictGet(const Value* d, std::string_view key)
{
    if (!d || (d->kind != Kind::Dict && d->kind != Kind::Call)) return nullptr;
    for (const auto& [k, v] : d->entries) {
        if (k && (k->kind == Kind::Str || k->kind == Kind::Bytes) && k->text == key) return v;
        if (k && k->kind == Kind::Int && std::to_string(k->integer) == key) return v;
    }
    return nullptr;
}

const Value* seqAt(const Value* s, size_t i)
{
    return item(s, i);
}

std::optional<int64_t> asInt(const Value* v)
{
    if (v && v->kind == Kind::Call && v->args && v->args->items.size() == 1) v = v->args->items[0];
    return intOf(v);
}

std::optional<double> asFloat(const Value* v)
{
    if (v && v->kind == Kind::Float) return v->real;
    if (auto i = intOf(v)) return double(*i);
    return std::nullopt;
}

std::optional<std::string> asString(const Value* v)
{
    if (v && (v->kind == Kind::Str || v->kind == Kind::Bytes)) return v->text;
    return std::nullopt;
}

std::optional<std::vector<int64_t>> asInts(const Value* v)
{
    if (v && v->calls("torch", "Size")) v = item(v->args, 0);
    if (!v || (v->kind != Kind::Tuple && v->kind != Kind::List)) return std::nullopt;
    std::vector<int64_t> out;
    for (const Value* x : v->items) {
        auto i = intOf(x);
        if (!i) return std::nullopt;
        out.push_back(*i);
    }
    return out;
}

uint64_t TorchFile::footprint() const
{
    // Per item: the struct and a typical heap string or two (paths, record names).
    return m_arena.size() * (sizeof(pickle::Value) + 16) + m_entries.size() * (sizeof(Entry) + 96) +
           m_tensors.size() * (sizeof(Tensor) + 128) + m_storages.size() * (sizeof(Storage) + 160);
}

} // namespace ckpt::torch
