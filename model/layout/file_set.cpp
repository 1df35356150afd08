#include "layout/file_set.h"

#include "io/error.h"
#include "io/location.h"
#include "io/mapped_file.h"
#include "safetensors/safetensors_file.h"
#include "torch/torch_file.h"
#include <sys/stat.h>

namespace ckpt::layout {

TensorFile::TensorFile(std::shared_ptr<const torch::TorchFile> f) : m_torch(std::move(f)) {}
TensorFile::TensorFile(std::shared_ptr<const safetensors::SafetensorsFile> f) : m_st(std::move(f))
{
    for (size_t i = 0; i < m_st->tensors().size(); ++i)
        m_stIndex.emplace(m_st->tensors()[i].name, i);
}

const safetensors::TensorInfo* TensorFile::stFind(const std::string& name) const
{
    const auto it = m_stIndex.find(name);
    return it == m_stIndex.end() ? nullptr : &m_st->tensors()[it->second];
}

const std::string& TensorFile::path() const
{
    return m_torch ? m_torch->path() : m_st->path();
}

namespace {

std::vector<int64_t> contiguousStride(const std::vector<int64_t>& shape)
{
    std::vector<int64_t> stride(shape.size(), 1);
    for (size_t i = shape.size(); i-- > 1;)
        stride[i - 1] = stride[i] * shape[i];
    return stride;
}

} // namespace

bool TensorFile::has(const std::string& tensorPath) const
{
    return m_torch ? m_torch->tensor(tensorPath) != nullptr : stFind(tensorPath) != nullptr;
}

torch::DType TensorFile::dtypeOf(const std::string& tensorPath) const
{
    if (m_torch) {
        if (const torch::Tensor* t = m_torch->tensor(tensorPath)) return t->dtype;
    } else if (const auto* t = stFind(tensorPath)) {
        return t->dtype;
    }
    throw Error("no tensor at '" + tensorPath + "'", path());
}

TensorBytes TensorFile::bytes(const std::string& tensorPath, bool fetch) const
{
    TensorBytes b;
    if (m_torch) {
        const torch::Tensor* t = m_torch->tensor(tensorPath);
        if (!t) throw Error("no tensor at '" + tensorPath + "'", path());
        if (t->storage < 0) throw Error("tensor '" + tensorPath + "' has no data (" + t->note + ")", path());
        b.storage = m_torch->storageBytes(t->storage, fetch);
        b.dtype = t->dtype;
        b.shape = t->shape;
        b.stride = t->stride;
        b.storageOffset = t->storageOffset;
        b.contiguous = t->isContiguous();
        return b;
    }
    const auto* t = stFind(tensorPath);
    if (!t) throw Error("no tensor '" + tensorPath + "'", path());
    b.storage = {m_st->bytes(*t, fetch), m_st->file()};
    b.dtype = t->dtype;
    b.shape = t->shape;
    b.stride = contiguousStride(t->shape);
    return b;
}

const uint8_t* TensorFile::mappedContiguous(const std::string& tensorPath) const
{
    if (m_torch) {
        const torch::Tensor* t = m_torch->tensor(tensorPath);
        if (!t || t->storage < 0 || !t->isContiguous() || !t->numel()) return nullptr;
        const auto mapped = m_torch->mappedStorageBytes(t->storage);
        return mapped ? mapped->data() + uint64_t(t->storageOffset) * torch::elementSize(t->dtype) : nullptr;
    }
    const auto* t = stFind(tensorPath);
    return t ? m_st->bytes(*t).data() : nullptr;
}

bool TensorFile::isRemote() const
{
    return m_torch ? m_torch->mapped().isRemote() : m_st->file()->isRemote();
}

void TensorFile::fetch(const uint8_t* begin, uint64_t size) const
{
    if (m_torch) return m_torch->fetch(begin, size);
    const io::MappedFile& f = *m_st->file();
    f.ensure(uint64_t(begin - f.bytes().data()), size);
}

void TensorFile::release(const uint8_t* begin, uint64_t size) const
{
    if (m_torch)
        m_torch->release(begin, size);
    else
        m_st->file()->release(begin, size);
}

uint64_t TensorFile::footprint() const
{
    if (m_torch) return m_torch->footprint();
    return m_st->tensors().size() * (sizeof(safetensors::TensorInfo) + 128);
}

const std::shared_ptr<const TensorFile>&
FileSet::keep(const std::string& id, Kept k, std::vector<std::shared_ptr<const TensorFile>>& gone) const
{
    k.lastUse = ++m_clock;
    auto [it, inserted] = m_files.try_emplace(id, std::move(k));
    if (!inserted) { // another thread parsed it first (keep theirs), or an adoption replaces it
        if (!k.pinned) {
            it->second.lastUse = m_clock;
            return it->second.file;
        }
        m_kept -= it->second.footprint;
        it->second = std::move(k);
    }
    m_kept += it->second.footprint;
    evict(&it->first, gone);
    return it->second.file;
}

void FileSet::evict(const std::string* spare, std::vector<std::shared_ptr<const TensorFile>>& gone) const
{
    // Over budget: let the least recently used unpinned files go, never `spare` (just kept).
    while (m_kept > m_budget) {
        auto victim = m_files.end();
        for (auto v = m_files.begin(); v != m_files.end(); ++v)
            if (!v->second.pinned && &v->first != spare &&
                (victim == m_files.end() || v->second.lastUse < victim->second.lastUse))
                victim = v;
        if (victim == m_files.end()) break;
        m_kept -= victim->second.footprint;
        gone.push_back(std::move(victim->second.file)); // freed by the caller, after the lock
        m_files.erase(victim);
    }
}

void FileSet::setBudget(uint64_t bytes)
{
    std::vector<std::shared_ptr<const TensorFile>> gone;
    std::lock_guard lock(m_mutex);
    m_budget = bytes;
    evict(nullptr, gone);
}

std::shared_ptr<const TensorFile> FileSet::get(const std::string& id) const
{
    {
        std::lock_guard lock(m_mutex);
        if (auto it = m_files.find(id); it != m_files.end()) {
            it->second.lastUse = ++m_clock;
            return it->second.file;
        }
    }
    // Parsed outside the lock (it may take a while); should two threads race, the first stored wins.
    checkCancelled();
    // A file let go and parsed again must be the file the checkpoint was opened from: its tag's
    // partition map was read from the first parse (a training job may have rewritten it since).
    struct stat st
    {
    };
    const bool statted = ::stat(id.c_str(), &st) == 0;
    const Stamp stamp{uint64_t(st.st_size), int64_t(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec,
                      uint64_t(st.st_ino)};
    if (statted) {
        std::lock_guard lock(m_mutex);
        const auto [seen, first] = m_stamps.try_emplace(id, stamp);
        if (!first && !(seen->second == stamp))
            throw Error("the file changed on disk since the checkpoint was opened: open it again", id);
    }
    auto mapped = io::MappedFile::open(id);
    mapped->ensure(0, 64);
    const io::ByteSpan head = mapped->bytes().subspan(0, std::min<uint64_t>(mapped->size(), 64));
    std::shared_ptr<const TensorFile> f;
    if (safetensors::SafetensorsFile::looksLikeSafetensors(head))
        f = std::make_shared<TensorFile>(
            std::shared_ptr<const safetensors::SafetensorsFile>(safetensors::SafetensorsFile::open(mapped)));
    else
        f = std::make_shared<TensorFile>(
            std::shared_ptr<const torch::TorchFile>(torch::TorchFile::open(mapped)));
    parsed(id, mapped->size());
    const uint64_t footprint = f->footprint();
    std::vector<std::shared_ptr<const TensorFile>> gone; // declared first: destroyed after the lock
    std::lock_guard lock(m_mutex);
    return keep(id, {std::move(f), footprint, 0, false}, gone);
}

void FileSet::parsed(const std::string& id, uint64_t bytes) const
{
    if (m_observer.parsed) m_observer.parsed(id, bytes);
}

void FileSet::checkCancelled() const
{
    if (m_observer.cancelled && m_observer.cancelled()) throw Cancelled();
}

std::shared_ptr<const TensorFile> FileSet::find(const std::string& id) const
{
    std::lock_guard lock(m_mutex);
    const auto it = m_files.find(id);
    return it == m_files.end() ? nullptr : it->second.file;
}

void FileSet::adopt(const std::string& id, std::shared_ptr<const TensorFile> file)
{
    // Parsed by the recognizer itself: counted now (a stat only while someone watches), and the
    // next file is not begun if cancelled.
    if (m_observer.parsed) parsed(id, io::knownSize(id).value_or(0));
    {
        const uint64_t footprint = file->footprint();
        std::vector<std::shared_ptr<const TensorFile>> gone;
        std::lock_guard lock(m_mutex);
        keep(id, {std::move(file), footprint, 0, true}, gone);
    }
    checkCancelled();
}

void FileSet::adopt(const std::string& id, std::shared_ptr<const torch::TorchFile> file)
{
    adopt(id, std::make_shared<const TensorFile>(std::move(file)));
}

void FileSet::remember(const std::string& id, std::shared_ptr<const TensorFile> file) const
{
    const uint64_t footprint = file->footprint();
    std::vector<std::shared_ptr<const TensorFile>> gone;
    std::lock_guard lock(m_mutex);
    if (auto it = m_files.find(id); it != m_files.end()) {
        it->second.lastUse = ++m_clock;
        return;
    }
    keep(id, {std::move(file), footprint, 0, false}, gone);
}

size_t FileSet::size() const
{
    std::lock_guard lock(m_mutex);
    return m_files.size();
}

uint64_t FileSet::keptBytes() const
{
    std::lock_guard lock(m_mutex);
    return m_kept;
}

} // namespace ckpt::layout
