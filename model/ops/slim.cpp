#include "ops/slim.h"

#include "io/location.h"

#include "compute_backend.h"
#include "io/output.h"
#include "layout/family.h"
#include "ops/bloat.h"
#include "ops/detect.h"
#include "ops/writers.h"
#include "pickle/writer.h"
#include "torch/torch_file.h"
#include "torch/torch_writer.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <xxhash.h>

namespace ckpt::ops {

namespace fs = std::filesystem;
using pickle::Kind;
using pickle::Value;

uint64_t SlimResult::bytesBefore() const
{
    uint64_t n = 0;
    for (const auto& f : files)
        n += f.bytesBefore;
    return n;
}

uint64_t SlimResult::bytesAfter() const
{
    uint64_t n = 0;
    for (const auto& f : files)
        n += f.bytesAfter;
    return n;
}

namespace {

// A call that rebuilds a plain strided tensor from a storage: the only referrer whose bytes we
// may move. Anything else that names a storage keeps it whole.
struct Site
{
    const Value* call = nullptr;
    int storage = -1;
    uint32_t es = 1;
    int64_t offset = 0;
    std::vector<int64_t> shape, stride;
    uint64_t numel = 0;
    uint64_t begin = 0, end = 0; // the bytes of the storage its elements lie in (hull)
    size_t newStorage = 0;
};

struct NewStorage
{
    int from = -1;
    uint64_t begin = 0, end = 0; // range of the original storage copied
    uint64_t nbytes = 0;
    const Value* pid = nullptr; // the persistent id written for it
};

bool isRebuild(const Value* v)
{
    return v->kind == Kind::Call && v->callable && v->callable->kind == Kind::Global &&
           v->callable->text == "torch._utils" &&
           (v->callable->name == "_rebuild_tensor_v2" || v->callable->name == "_rebuild_tensor" ||
            v->callable->name == "_rebuild_tensor_v3") &&
           v->args && v->args->kind == Kind::Tuple && v->args->items.size() >= 4 && v->args->items[0] &&
           v->args->items[0]->kind == Kind::PersistentRef && v->args->items[0]->integer >= 0;
}

class Plan
{
public:
    explicit Plan(const torch::TorchFile& f) : m_file(f)
    {
        collect();
        cluster();
        rewrite();
    }

    const torch::TorchFile& file() const { return m_file; }
    const std::vector<NewStorage>& storages() const { return m_new; }
    const std::vector<Site>& sites() const { return m_sites; }
    uint64_t storageBefore() const
    {
        uint64_t n = 0;
        for (const auto& s : m_file.storages())
            if (s.viewOf < 0) n += s.nbytes;
        return n;
    }
    uint64_t storageAfter() const
    {
        uint64_t n = 0;
        for (const auto& s : m_new)
            n += s.nbytes;
        return n;
    }
    bool changes() const { return storageAfter() < storageBefore(); }

    std::string pickleBytes() const
    {
        pickle::WriteOptions o;
        o.protocol = std::clamp(m_file.protocol(), 2, 5);
        o.substitute = [this](const Value* v) -> const Value* {
            const auto it = m_subst.find(v);
            return it == m_subst.end() ? nullptr : it->second;
        };
        return pickle::write(m_file.root(), o);
    }

private:
    void collect()
    {
        const auto& storages = m_file.storages();
        m_whole.assign(storages.size(), false);
        for (size_t s = 0; s < storages.size(); ++s)
            if (storages[s].viewOf >= 0) { // legacy view storages: copied whole, as their own
                m_whole[s] = true;
                m_whole[size_t(storages[s].viewOf)] = true;
            }
        std::vector<const Value*> todo{m_file.root()};
        std::unordered_set<const Value*> seen;
        auto push = [&](const Value* c) {
            if (c) todo.push_back(c);
        };
        while (!todo.empty()) {
            const Value* v = todo.back();
            todo.pop_back();
            if (!seen.insert(v).second) continue;
            if (isRebuild(v)) {
                addSite(v);
                for (size_t i = 1; i < v->args->items.size(); ++i)
                    push(v->args->items[i]);
                push(v->kwargs);
                push(v->state);
                continue;
            }
            if (v->kind == Kind::PersistentRef) {
                if (v->integer >= 0 && size_t(v->integer) < storages.size()) {
                    m_whole[size_t(v->integer)] = true;
                    m_otherRefs.push_back(v);
                }
                continue;
            }
            pickle::forEachChild(v, push);
        }
    }

    void addSite(const Value* call)
    {
        const auto& storages = m_file.storages();
        const Value* a = call->args;
        Site s;
        s.call = call;
        s.storage = int(a->items[0]->integer);
        if (size_t(s.storage) >= storages.size())
            throw Error("a tensor names a storage that does not exist", m_file.path());
        torch::DType dt = storages[size_t(s.storage)].dtype;
        if (call->callable->name == "_rebuild_tensor_v3") {
            const Value* d = a->items.size() > 6 ? a->items[6] : nullptr;
            const auto parsed = d && d->kind == Kind::Global ? torch::fromName(d->name) : std::nullopt;
            if (!parsed) throw Error("_rebuild_tensor_v3 without a known dtype", m_file.path());
            dt = *parsed;
        }
        s.es = torch::elementSize(dt);
        const auto off = torch::asInt(a->items[1]);
        const auto shape = torch::asInts(a->items[2]);
        const auto stride = torch::asInts(a->items[3]);
        if (!off || !shape || !stride || shape->size() != stride->size() || *off < 0)
            throw Error("a tensor's offset, size or stride is malformed", m_file.path());
        s.offset = *off;
        s.shape = *shape;
        s.stride = *stride;
        s.numel = 1;
        uint64_t last = 0;
        for (size_t i = 0; i < s.shape.size(); ++i) {
            if (s.shape[i] < 0 || s.stride[i] < 0)
                throw Error("a tensor has a negative size or stride", m_file.path());
            s.numel *= uint64_t(s.shape[i]);
            if (s.shape[i] > 0) last += uint64_t(s.shape[i] - 1) * uint64_t(s.stride[i]);
        }
        if (s.numel) {
            s.begin = uint64_t(s.offset) * s.es;
            s.end = (uint64_t(s.offset) + last + 1) * s.es;
            if (s.end > storages[size_t(s.storage)].nbytes)
                throw Error("a tensor reaches past the end of its storage '" +
                                storages[size_t(s.storage)].key + "'",
                            m_file.path());
        }
        m_sites.push_back(std::move(s));
    }

    void cluster()
    {
        const auto& storages = m_file.storages();
        std::vector<std::vector<size_t>> byStorage(storages.size());
        for (size_t i = 0; i < m_sites.size(); ++i)
            byStorage[size_t(m_sites[i].storage)].push_back(i);
        m_firstNew.assign(storages.size(), SIZE_MAX);
        for (size_t s = 0; s < storages.size(); ++s) {
            const uint32_t storageEs = torch::elementSize(storages[s].dtype);
            auto add = [&](uint64_t begin, uint64_t end) {
                NewStorage n;
                n.from = int(s);
                n.begin = begin;
                n.end = end;
                n.nbytes = end - begin;
                if (m_firstNew[s] == SIZE_MAX) m_firstNew[s] = m_new.size();
                m_new.push_back(n);
                return m_new.size() - 1;
            };
            auto& idx = byStorage[s];
            if (m_whole[s] || idx.empty()) {
                if (m_whole[s] || storages[s].viewOf < 0) add(0, storages[s].nbytes);
                for (size_t i : idx)
                    m_sites[i].newStorage = m_firstNew[s];
                continue;
            }
            std::sort(idx.begin(), idx.end(),
                      [&](size_t a, size_t b) { return m_sites[a].begin < m_sites[b].begin; });
            std::vector<size_t> empty, group;
            uint64_t gBegin = 0, gEnd = 0;
            auto flush = [&] {
                if (group.empty()) return;
                // The start stays a multiple of every element size in the cluster (they are
                // powers of two), so each view's remapped offset is a whole number of elements.
                uint64_t align = storageEs;
                for (size_t i : group)
                    align = std::max<uint64_t>(align, m_sites[i].es);
                const uint64_t b = gBegin / align * align;
                const uint64_t e =
                    std::min<uint64_t>(storages[s].nbytes, (gEnd + storageEs - 1) / storageEs * storageEs);
                // Strides are kept, so a view with gaps (every other row, a column) keeps the
                // gaps between its elements: only what lies outside every view goes.
                const size_t n = add(b, e);
                for (size_t i : group)
                    m_sites[i].newStorage = n;
                group.clear();
            };
            for (size_t i : idx) {
                const Site& site = m_sites[i];
                if (!site.numel) {
                    empty.push_back(i);
                    continue;
                }
                if (!group.empty() && site.begin < gEnd) {
                    gEnd = std::max(gEnd, site.end);
                } else {
                    flush();
                    gBegin = site.begin;
                    gEnd = site.end;
                }
                group.push_back(i);
            }
            flush();
            if (m_firstNew[s] == SIZE_MAX) add(0, 0); // only empty views: an empty storage
            for (size_t i : empty)
                m_sites[i].newStorage = m_firstNew[s];
        }
    }

    Value* integer(int64_t v)
    {
        Value* x = m_arena.make(Kind::Int);
        x->integer = v;
        return x;
    }
    Value* str(const std::string& t)
    {
        Value* x = m_arena.make(Kind::Str);
        x->text = t;
        return x;
    }

    // The persistent id of storage `from` as written: the original's type and location, a
    // new key and the new element count. Legacy ids (six items) become zip ones (five).
    const Value* originalPid(int from) const
    {
        for (const Site& s : m_sites)
            if (s.storage == from) return s.call->args->items[0]->args;
        for (const Value* r : m_otherRefs)
            if (r->integer == from) return r->args;
        return nullptr;
    }

    void rewrite()
    {
        const auto& storages = m_file.storages();
        for (size_t i = 0; i < m_new.size(); ++i) {
            NewStorage& n = m_new[i];
            const Value* orig = originalPid(n.from);
            if (!orig || orig->items.size() < 5)
                throw Error("storage '" + storages[size_t(n.from)].key + "' has no usable persistent id",
                            m_file.path());
            const uint32_t storageEs = torch::elementSize(storages[size_t(n.from)].dtype);
            Value* tuple = m_arena.make(Kind::Tuple);
            tuple->items = {str("storage"), orig->items[1], str(std::to_string(i)), orig->items[3],
                            integer(int64_t(n.nbytes / storageEs))};
            Value* pid = m_arena.make(Kind::PersistentRef);
            pid->args = tuple;
            pid->integer = int64_t(i);
            n.pid = pid;
        }
        for (const Value* r : m_otherRefs)
            m_subst[r] = m_new[m_firstNew[size_t(r->integer)]].pid;
        for (const Site& s : m_sites) {
            const NewStorage& n = m_new[s.newStorage];
            Value* args = m_arena.make(Kind::Tuple);
            args->items = s.call->args->items;
            args->items[0] = const_cast<Value*>(n.pid);
            if (s.numel) {
                args->items[1] = integer(int64_t((s.begin - n.begin) / s.es));
            } else {
                args->items[1] = integer(0); // no element: any offset into any storage will do
            }
            Value* call = m_arena.make(Kind::Call);
            *call = *s.call;
            call->args = args;
            m_subst[s.call] = call;
        }
    }

    const torch::TorchFile& m_file;
    std::vector<Site> m_sites;
    std::vector<const Value*> m_otherRefs;
    std::vector<bool> m_whole;
    std::vector<NewStorage> m_new;
    std::vector<size_t> m_firstNew;
    pickle::Arena m_arena;
    std::unordered_map<const Value*, const Value*> m_subst;
};

// Re-reads the written file, its storages proven to hold what was written (VerifiedWriter):
// every tensor at the same path with the same dtype, shape and values, aliases still aliases,
// and views that shared a storage still sharing one.
void verifySlim(const Plan& plan, const torch::TorchFile& written, const std::string& finalName)
{
    const torch::TorchFile* out = &written;
    // The reader numbers storages in the order the pickle first names them; ours are keyed "0".."n-1".
    std::vector<size_t> planned(out->storages().size(), SIZE_MAX);
    for (size_t i = 0; i < out->storages().size(); ++i)
        planned[i] = std::stoul(out->storages()[i].key);
    // ... and every tensor views, in it, the very bytes it viewed in the input: same dtype, shape,
    // stride, and an offset that lands on the same input byte. With the storages' bytes proven
    // above, its values are the input's.
    const auto& before = plan.file().tensors();
    for (const auto& t : before) {
        const torch::Tensor* n = out->tensor(t.path);
        auto bad = [&](const std::string& what) {
            throw Error("verification failed: tensor '" + t.path + "' " + what, finalName);
        };
        if (!n) bad("is missing");
        if ((t.aliasOf >= 0) != (n->aliasOf >= 0)) bad("lost or gained an alias");
        if (n->dtype != t.dtype || n->shape != t.shape || n->requiresGrad != t.requiresGrad)
            bad("changed its dtype, shape or requires_grad");
        if (t.aliasOf >= 0 || t.storage < 0 || !t.note.empty() || !t.numel()) continue;
        if (n->stride != t.stride) bad("changed its stride");
        if (n->storage < 0) bad("lost its storage");
        const NewStorage& ns = plan.storages()[planned[size_t(n->storage)]];
        const uint64_t es = torch::elementSize(t.dtype);
        if (ns.from != t.storage ||
            uint64_t(n->storageOffset) * es + ns.begin != uint64_t(t.storageOffset) * es)
            bad("does not view the bytes it viewed in the input (storage '" +
                plan.file().storages()[size_t(t.storage)].key + "')");
    }
    // Views that overlapped in the input must still share one storage.
    std::map<int, std::vector<std::pair<ByteRange, const torch::Tensor*>>> byStorage;
    for (const auto& t : before) {
        if (t.aliasOf >= 0 || t.storage < 0 || !t.note.empty() || !t.numel()) continue;
        const uint32_t es = torch::elementSize(t.dtype);
        uint64_t last = 0;
        for (size_t d = 0; d < t.shape.size(); ++d)
            last += uint64_t(t.shape[d] - 1) * uint64_t(t.stride[d]);
        byStorage[t.storage].push_back(
            {{uint64_t(t.storageOffset) * es, (uint64_t(t.storageOffset) + last + 1) * es},
             out->tensor(t.path)});
    }
    for (auto& [storage, views] : byStorage) {
        std::sort(views.begin(), views.end(),
                  [](const auto& a, const auto& b) { return a.first.begin < b.first.begin; });
        uint64_t end = 0;
        int into = -1;
        for (const auto& [range, n] : views) {
            if (range.begin < end && n->storage != into)
                throw Error("verification failed: tensor '" + n->path +
                                "' no longer shares storage with the views it overlapped",
                            finalName);
            if (range.begin >= end) into = n->storage;
            end = std::max(end, range.end);
        }
    }
}

struct Job
{
    const SlimOptions& options;
    const ProgressSink& progress;
    const CancelToken& cancel;
    io::OutputTransaction* tx = nullptr;
    uint64_t total = 0, done = 0;
    // Each file is proven before the next is read (the check needs the file's plan).
    std::optional<VerifiedWriter> writer =
        tx ? std::optional<VerifiedWriter>(std::in_place, *tx, cancel,
                                           [this](const std::string&, uint64_t n) { onBytes(n); })
           : std::nullopt;

    void onBytes(uint64_t n)
    {
        done += n;
        if (progress)
            progress(
                {int(total ? std::min<uint64_t>(done * 950 / total, 950) : 950), "writing", done, total});
    }

    void copy(const std::string& from, const std::string& rel, SlimFile& r)
    {
        const auto in = io::MappedFile::open(from);
        r.bytesBefore = r.bytesAfter = in->size();
        if (options.dryRun) return;
        // Re-read in bounded memory: the input may be the multi-gigabyte file that was not bloated.
        writer->copy(from, rel);
        writer->verified();
    }

    void slimOne(const std::string& from, const std::string& rel,
                 std::shared_ptr<const torch::TorchFile> file, std::unique_ptr<Plan> plan, SlimFile& r)
    {
        r.storagesBefore = file->storages().size();
        r.storageBefore = plan->storageBefore();
        r.storageAfter = plan->storageAfter();
        r.usedBytes = analyzeBloat(*file).usedBytes;
        r.storagesAfter = plan->storages().size();
        r.bytesBefore = file->fileSize();
        if (!plan->changes()) {
            r.action = "copied (not bloated)";
            r.storageAfter = r.storageBefore;
            r.storagesAfter = r.storagesBefore;
            plan.reset();
            file.reset();
            copy(from, rel, r);
            return;
        }
        r.action = "slimmed";
        const std::string pickleBytes = plan->pickleBytes();
        if (options.dryRun) { // the zip records around them are a few hundred bytes per storage
            r.bytesAfter = r.storageAfter + pickleBytes.size() + 200 * (r.storagesAfter + 4);
            return;
        }
        std::vector<torch::OutTensor> records;
        for (const NewStorage& n : plan->storages()) {
            torch::OutTensor o;
            o.name = std::to_string(records.size());
            o.dtype = torch::DType::UInt8;
            o.shape = {int64_t(n.nbytes)};
            o.nbytes = n.nbytes;
            const torch::TorchFile* f = file.get();
            auto blob = std::make_shared<io::Blob>();
            o.fill = [f, n, blob](uint64_t offset, uint64_t count, uint8_t* dst) {
                if (!blob->bytes.data() && n.nbytes) *blob = f->storageBytes(n.from);
                const uint8_t* p = blob->bytes.data() + n.begin + offset;
                std::memcpy(dst, p, count);
                f->release(p, count); // pages behind the copy leave the resident set
            };
            records.push_back(std::move(o));
        }
        const io::AtomicFile& out =
            writer->torchRecords(rel, pickleBytes, records,
                                 [&plan](const torch::TorchFile& written, const std::string& finalName) {
                                     verifySlim(*plan, written, finalName);
                                 });
        if (progress)
            progress(
                {int(total ? std::min<uint64_t>(done * 950 / total, 950) : 950), "verifying", done, total});
        writer->verified();
        r.bytesAfter = out.written();
        onBytes(r.bytesBefore > r.bytesAfter ? r.bytesBefore - r.bytesAfter
                                             : 0); // progress counts input bytes
    }
};

// The file as the caller's opened checkpoint parsed it (the window's), else parsed here.
std::shared_ptr<const torch::TorchFile> torchFileAt(const std::string& path, const layout::FileSet* files)
{
    if (files)
        if (const auto kept = files->find(path); kept && kept->torch())
            return std::shared_ptr<const torch::TorchFile>(kept, kept->torch());
    return torch::TorchFile::open(path);
}

bool isTorchFile(const std::string& path)
{
    const FileKind k = detect(path);
    return k == FileKind::TorchZip || k == FileKind::TorchLegacy;
}

} // namespace

namespace {

// A checkpoint folder with a tag that cannot be read (a rank file lost) is damaged: its slimmed
// copy would be just as damaged and the job would say "done" (issue 36). Refused, naming the tag
// and why. A folder that is no checkpoint (some .pt files) is slimmed file by file as before
// (null). The opened checkpoint is returned: its parsed files are not parsed again by the slim.
std::shared_ptr<const layout::OpenedCheckpoint> checkedCheckpoint(const std::string& folder)
{
    std::shared_ptr<const layout::OpenedCheckpoint> opened;
    try {
        opened = layout::openCheckpoint(folder);
    } catch (const Error&) {
        return nullptr;
    }
    for (const auto& t : opened->model.tags)
        if (!t.unreadable.empty())
            throw Error(
                "tag '" + t.name + "' cannot be read (" + t.unreadable +
                    "): a slimmed copy would be as incomplete; slim the files that can be read one by one",
                folder);
    return opened;
}

} // namespace

SlimResult slim(const std::string& input, const std::string& output, const SlimOptions& options,
                const ProgressSink& progress, const CancelToken& cancel, const layout::FileSet* parsed)
{
    std::error_code ec;
    const bool remote = io::isRemotePath(input);
    const io::PathKind kind = remote ? io::pathKind(input) : io::PathKind::Other;
    const bool folder = remote ? kind == io::PathKind::Folder : fs::is_directory(input, ec);
    if (!folder && (remote ? kind == io::PathKind::Missing : !fs::exists(input, ec)))
        throw Error("cannot open: No such file or directory", input);
    // Over plain HTTP nothing lists a folder: slimming "all of it" would copy nothing, or only
    // the files something opened before.
    if (folder && remote && !io::canList(input))
        throw Error(
            "an HTTP server cannot list a folder; slim its files one by one, or give an s3://, gs:// or "
            "hf:// URL",
            input);
    // Dry run or not: the user learns now that OUT would have been refused.
    io::checkOutputOutsideInputs({input}, output);
    const auto checked = folder ? checkedCheckpoint(input) : nullptr;
    if (!parsed && checked) parsed = checked->files.get();
    std::unique_ptr<io::OutputTransaction> tx;
    if (!options.dryRun) {
        tx = std::make_unique<io::OutputTransaction>(
            std::vector<std::string>{input}, output,
            folder ? io::OutputTransaction::Shape::Folder : io::OutputTransaction::Shape::File,
            options.overwrite ? io::OutputTransaction::Existing::Replace
                              : io::OutputTransaction::Existing::Refuse);
        reportNotes(progress, tx->notes());
    }

    // What to do with each file, in a stable order, with its size.
    std::vector<io::FileBelow> files;
    if (folder && remote) {
        files = io::listFilesBelow(input); // a store's listing (plain HTTP: the files opened)
    } else if (folder) {
        for (fs::recursive_directory_iterator it(input, ec), end; !ec && it != end; it.increment(ec)) {
            if (it->is_directory(ec)) continue;
            const std::string rel = fs::relative(it->path(), input, ec).string();
            if (!it->is_regular_file(ec)) {
                throw Error("is not a regular file (a link to one is followed; other kinds are not copied)",
                            it->path().string());
            }
            files.push_back({it->path().string(), rel, uint64_t(fs::file_size(it->path(), ec))});
        }
        if (ec) throw Error("cannot list the folder: " + ec.message(), input);
        std::sort(files.begin(), files.end(), [](const auto& a, const auto& b) { return a.path < b.path; });
    } else {
        files.push_back({input, {}, remote ? io::fileSize(input) : uint64_t(fs::file_size(input, ec))});
    }

    SlimResult result;
    Job job{options, progress, cancel, tx.get()};
    for (const auto& f : files)
        job.total += f.size;
    for (const auto& [abs, rel, size] : files) {
        cancel.throwIfCancelled();
        SlimFile r;
        r.path = folder ? rel : abs;
        if (isTorchFile(abs)) {
            auto f = torchFileAt(abs, parsed);
            auto plan = std::make_unique<Plan>(*f);
            job.slimOne(abs, rel, std::move(f), std::move(plan), r);
        } else if (folder) {
            r.action = "copied (not a torch.save file)";
            job.copy(abs, rel, r);
        } else {
            throw Error("is not a torch.save file (zip or legacy); only those can be slimmed", abs);
        }
        result.files.push_back(r);
    }
    if (tx) {
        cancel.throwIfCancelled();
        tx->commit();
    }
    if (progress) progress({1000, options.dryRun ? "planned" : "done", job.done, job.total});
    return result;
}

} // namespace ckpt::ops
