// The tensor files of one opened checkpoint, each parsed once and then shared by every operation
// and thread that reads the checkpoint. Sources (layout::Source::file) name files by id: a path,
// or — for bytes that are not a file of their own (an uncompressed tar member, a span of a
// .distcp) — the id under which the recognizer adopted the opened piece.
#pragma once

#include "io/blob.h"
#include "torch/dtype.h"

#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ckpt::torch {
class TorchFile;
}
namespace ckpt::safetensors {
class SafetensorsFile;
struct TensorInfo;
} // namespace ckpt::safetensors

namespace ckpt::layout {

// Where one tensor's elements are: its whole storage (kept alive by the blob) and the strided
// view into it. A deflated zip record is inflated when storage bytes are asked for, not before.
struct TensorBytes
{
    io::Blob storage;
    torch::DType dtype = torch::DType::Float32;
    std::vector<int64_t> shape, stride;
    int64_t storageOffset = 0; // elements
    bool contiguous = true;
};

// One parsed file: a torch.save file or a safetensors file.
class TensorFile
{
public:
    explicit TensorFile(std::shared_ptr<const torch::TorchFile> f);
    explicit TensorFile(std::shared_ptr<const safetensors::SafetensorsFile> f);

    const std::string& path() const;
    const torch::TorchFile* torch() const { return m_torch.get(); }
    const safetensors::SafetensorsFile* safetensors() const { return m_st.get(); }
    // The tensor at `path` (a `/` path in a torch file, a name in a safetensors file).
    bool has(const std::string& tensorPath) const;
    torch::DType dtypeOf(const std::string& tensorPath) const; // throws Error naming the file
    // Its bytes; throws Error naming the file when there is no such tensor or it has no data.
    // `fetch` false: a remote file's bytes are left for fetch() (a streaming reader asks for
    // the range it reads, not the whole storage).
    TensorBytes bytes(const std::string& tensorPath, bool fetch = true) const;
    // Makes bytes of bytes(…, false) readable: a no-op for a local file.
    void fetch(const uint8_t* begin, uint64_t size) const;
    // Whether its bytes come from a server (fetched when read) rather than a local map.
    bool isRemote() const;
    // The tensor's contiguous bytes when they lie uncompressed in the mapped file (zero-copy,
    // nothing read yet), else nullptr.
    const uint8_t* mappedContiguous(const std::string& tensorPath) const;
    // Lets pages behind a streaming reader go (see io::MappedFile::release).
    void release(const uint8_t* begin, uint64_t size) const;
    // A safetensors file's header entry by name (hashed), or nullptr.
    const safetensors::TensorInfo* stFind(const std::string& name) const;
    // Roughly the memory its parsed form holds (not the mapped bytes, which are the page cache's).
    uint64_t footprint() const;

private:
    std::shared_ptr<const torch::TorchFile> m_torch;
    std::shared_ptr<const safetensors::SafetensorsFile> m_st;
    std::unordered_map<std::string, size_t> m_stIndex; // safetensors: name -> header position
};

// What opening a checkpoint reports: each file as it is parsed, and whether to stop.
struct ParseObserver
{
    std::function<void(const std::string& id, uint64_t bytes)> parsed;
    std::function<bool()> cancelled; // asked before each parse: true throws Cancelled
};

// Parsed files are kept while their parsed forms fit a memory budget; past it, the least
// recently asked-for file opened from a path is let go (whoever still holds it keeps it alive)
// and parsed again when next asked for. Files a recognizer adopted are kept: their ids need not
// be paths. So a checkpoint of 64 ranks x 10,000 parameters does not keep 64 parsed model files.
class FileSet
{
public:
    static constexpr uint64_t kDefaultBudget = 512ull << 20;
    // Lets files go at once if they no longer fit.
    void setBudget(uint64_t bytes);
    // Set before a recognizer runs (not while other threads use the set).
    void observe(ParseObserver observer) { m_observer = std::move(observer); }
    // The file with this id; a path not yet adopted is opened (parsed) now, whatever its content
    // (torch zip, legacy torch or safetensors, sniffed): once, unless the budget let it go since.
    // Thread-safe.
    std::shared_ptr<const TensorFile> get(const std::string& id) const;
    // The file with this id if it is parsed and kept, else nullptr (never opens anything).
    std::shared_ptr<const TensorFile> find(const std::string& id) const;
    // Puts a file the recognizer already parsed (so the operation does not parse it again).
    void adopt(const std::string& id, std::shared_ptr<const TensorFile> file);
    void adopt(const std::string& id, std::shared_ptr<const torch::TorchFile> file);
    // Puts back a file opened by get() that the caller still holds, as the most recently used
    // (unpinned): a recognizer keeps the file that speaks for a tag (DeepSpeed's first model
    // file) from being the first one let go while it digests the others.
    void remember(const std::string& id, std::shared_ptr<const TensorFile> file) const;
    size_t size() const;
    uint64_t keptBytes() const; // the footprints of the files kept

private:
    struct Kept
    {
        std::shared_ptr<const TensorFile> file;
        uint64_t footprint = 0;
        uint64_t lastUse = 0;
        bool pinned = false; // adopted: cannot be opened again from its id
    };
    void parsed(const std::string& id, uint64_t bytes) const;
    void checkCancelled() const;
    // Both called locked; the files let go are moved to `gone`, to be freed once unlocked.
    void evict(const std::string* spare, std::vector<std::shared_ptr<const TensorFile>>& gone) const;
    const std::shared_ptr<const TensorFile>& keep(const std::string& id, Kept k,
                                                  std::vector<std::shared_ptr<const TensorFile>>& gone) const;
    struct Stamp // size, mtime and inode at the first parse
    {
        uint64_t size = 0;
        int64_t mtimeNs = 0;
        uint64_t inode = 0;
        bool operator==(const Stamp&) const = default;
    };
    ParseObserver m_observer;
    uint64_t m_budget = kDefaultBudget;
    mutable std::map<std::string, Stamp> m_stamps;
    mutable std::mutex m_mutex;
    mutable std::map<std::string, Kept> m_files;
    mutable uint64_t m_kept = 0, m_clock = 0;
};

} // namespace ckpt::layout
