// A torch.save file (zip format, PyTorch >= 1.6, or the legacy pickled stream) opened lazily:
// the pickle is parsed into a value tree and storages are located, but no tensor bytes are read
// until storageBytes() is asked for them.
#pragma once

#include "io/blob.h"
#include "io/mapped_file.h"
#include "io/zip_reader.h"
#include "pickle/machine.h"
#include "torch/dtensor.h"
#include "torch/dtype.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace ckpt::torch {

struct Storage
{
    std::string key;
    DType dtype = DType::UInt8; // fixed by the first persistent id naming this key
    uint64_t nbytes = 0;        // what the pickle declares: numel * element size
    std::string location;       // "cpu", "cuda:0", ...
    std::string record;         // zip entry name, or "" for legacy files
    uint64_t fileOffset = 0;    // legacy: where the bytes start in the file
    int viewOf = -1;            // legacy view storages: index of the root storage
    uint64_t viewOffset = 0;    // ...and the byte offset into it
};

struct Tensor
{
    std::string path;
    DType dtype = DType::Float32;
    std::vector<int64_t> shape;
    std::vector<int64_t> stride;
    int64_t storageOffset = 0; // elements
    int storage = -1;          // index into TorchFile::storages(); -1 for meta/storage-less tensors
    bool requiresGrad = false;
    bool isParameter = false;
    std::string subclass; // _rebuild_from_type_v2 class, "module.Name"
    std::string note;     // "quantized", "meta", ... for tensors we describe but cannot export
    int aliasOf = -1;     // same Python object as an earlier tensor (pickle memo)
    // A DTensor's local shard (the tensor itself, with its data) and where it lies in the whole;
    // null for any other tensor.
    std::shared_ptr<const DTensorSpec> dtensor;

    uint64_t numel() const;
    uint64_t nbytes() const { return numel() * elementSize(dtype); }
    bool isContiguous() const;
};

enum class EntryKind { Tensor, Dict, List, Tuple, Set, Object, Value, Alias };

// One line of the object tree, in walk order; depth gives the nesting.
struct Entry
{
    std::string path;
    std::string name; // last path component
    int depth = 0;
    EntryKind kind = EntryKind::Value;
    std::string type;    // "dict", "OrderedDict", "argparse.Namespace", "int", ...
    std::string summary; // short repr for values, item count for containers
    int tensor = -1;     // index into tensors() for EntryKind::Tensor
};

class TorchFile
{
public:
    enum class Format { Zip, Legacy };

    static bool looksLikeTorch(io::ByteSpan head);
    // Opens and parses; throws Error naming the file on anything malformed.
    static std::unique_ptr<TorchFile> open(const std::string& path, const pickle::Limits& limits = {});
    static std::unique_ptr<TorchFile> open(std::shared_ptr<const io::MappedFile> file,
                                           const pickle::Limits& limits = {});
    // How many files this process has parsed: tests prove "each file is parsed once per job".
    static uint64_t parses() { return s_parses.load(); }

    const std::string& path() const { return m_file->path(); }
    Format format() const { return m_format; }
    const char* formatName() const { return m_format == Format::Zip ? "torch-zip" : "torch-legacy"; }
    int protocol() const { return m_protocol; }
    const pickle::Value* root() const { return m_root; }
    const std::vector<Storage>& storages() const { return m_storages; }
    const std::vector<Tensor>& tensors() const { return m_tensors; }
    const std::vector<Entry>& entries() const { return m_entries; }
    // The tensor at a path ("optimizer_state_dict/fp32_flat_groups/0"), or nullptr.
    const Tensor* tensor(std::string_view path) const;
    // The value node at a path, following dict keys and list indices, or nullptr.
    const pickle::Value* value(std::string_view path) const;
    const std::vector<pickle::GlobalRef>& globals() const { return m_globals; }
    // Roughly what the parsed file holds in memory (value nodes, the walked tree, tensors,
    // storages, the zip directory), for caches that keep parsed files within a budget.
    uint64_t footprint() const;
    const std::vector<std::string>& warnings() const { return m_warnings; }
    uint64_t fileSize() const { return m_file->size(); }
    const io::MappedFile& mapped() const { return *m_file; }

    // The whole storage, zero-copy where the file allows it. A deflated record is inflated once
    // and kept while it is among the most recently read (within a byte budget, at least the last
    // one), so reading a storage chunk by chunk does not inflate it per chunk. Thread-safe.
    // `fetch` false: see io::ZipReader::read (a remote stored record is left for fetch()).
    io::Blob storageBytes(int storage, bool fetch = true) const;
    // The storage's bytes when they lie uncompressed in the file (no inflating, no copy), else
    // an empty optional.
    std::optional<io::ByteSpan> mappedStorageBytes(int storage) const;
    // Drops pages of these bytes (from storageBytes) from the resident set; see MappedFile::release.
    void release(const uint8_t* begin, uint64_t size) const { m_file->release(begin, size); }
    // Makes these bytes (from storageBytes(…, false)) readable; see MappedFile::ensure.
    void fetch(const uint8_t* begin, uint64_t size) const
    {
        m_file->ensure(uint64_t(begin - m_file->bytes().data()), size);
    }

private:
    TorchFile() = default;
    void openZip(const pickle::Limits& limits);
    void openLegacy(const pickle::Limits& limits);
    int64_t persistentLoad(const pickle::Value* pid, bool legacy);
    void checkStorageRecords();
    void walk();

    std::shared_ptr<const io::MappedFile> m_file;
    std::unique_ptr<io::ZipReader> m_zip;
    std::string m_prefix;
    Format m_format = Format::Zip;
    int m_protocol = 0;
    pickle::Arena m_arena;
    const pickle::Value* m_root = nullptr;
    std::vector<Storage> m_storages;
    std::vector<Tensor> m_tensors;
    std::vector<Entry> m_entries;
    std::vector<pickle::GlobalRef> m_globals;
    std::vector<std::string> m_warnings;
    std::unordered_map<std::string, int> m_tensorByPath;
    std::unordered_map<std::string, int> m_storageByKey; // the first storage of each key

    // Inflated records, most recently used last.
    static constexpr uint64_t kInflatedBudget = 256u << 20;
    mutable std::mutex m_inflatedMutex;
    mutable std::vector<std::pair<int, io::Blob>> m_inflated;

    static inline std::atomic<uint64_t> s_parses{0};
    friend class Walker;
};

// Navigation in a value tree: dict (or OrderedDict) lookup by string key, sequence by index,
// and scalar extraction that also sees through enum-like REDUCE calls (ZeroStageEnum(2)).
const pickle::Value* dictGet(const pickle::Value* dict, std::string_view key);
const pickle::Value* seqAt(const pickle::Value* seq, size_t i);
std::optional<int64_t> asInt(const pickle::Value* v);
std::optional<double> asFloat(const pickle::Value* v);
std::optional<std::string> asString(const pickle::Value* v);
std::optional<std::vector<int64_t>> asInts(const pickle::Value* v); // tuple, list or torch.Size

// Short Python-like rendering of a value (used by inspect and the GUI).
std::string pyRepr(const pickle::Value* v, size_t maxLen = 80);
std::string bigIntToDecimal(std::string_view twosComplementLE);

} // namespace ckpt::torch
