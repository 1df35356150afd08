// Reads the central directory of a zip archive held in a memory map. STORED entries become
// zero-copy spans; deflated entries (a checkpoint re-zipped by a user) are inflated on demand.
// Every size and offset is checked against the file before use; names are looked up by hash.
#pragma once

#include "io/blob.h"
#include "io/mapped_file.h"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace ckpt::io {

struct ZipEntry
{
    std::string name;
    uint16_t method = 0; // 0 stored, 8 deflate
    uint32_t crc32 = 0;
    uint64_t compressedSize = 0;
    uint64_t size = 0;
    uint64_t localHeaderOffset = 0;
    uint64_t dataOffset = 0;
};

class ZipReader
{
public:
    // Parses the directory; throws Error naming the file on any inconsistency.
    explicit ZipReader(std::shared_ptr<const MappedFile> file);

    static bool looksLikeZip(ByteSpan bytes);

    const std::vector<ZipEntry>& entries() const { return m_entries; }
    // The first entry of that name, or nullptr.
    const ZipEntry* find(std::string_view name) const;
    // The entry's first `limit` bytes (all of them by default): a span of the map for STORED, a
    // fresh buffer for deflate. Inflating stops once `limit` bytes are out, and the buffer grows
    // with what the stream really produces, so a size the directory lies about costs no memory.
    // `fetch` false leaves a STORED entry's bytes of a remote file unfetched: the caller ensures
    // the ranges it reads (a streaming reader, so a large record is not fetched whole).
    Blob read(const ZipEntry& entry, uint64_t limit = UINT64_MAX, bool fetch = true) const;
    // Remote torch.save files about to be parsed one after another: their directories, local
    // headers and pickles are fetched side by side first (a thread per file, up to 16 at once,
    // each taking the job's FetchWatch), so a tag of 64 rank files costs the round trips of one,
    // not 64 in a row. Local files and files that fail are left alone: the parse that follows
    // reads them and reports what is wrong.
    static void warmRemote(const std::vector<std::string>& paths);
    // How many times any ZipReader has run inflate on an entry (tests check that chunked reads
    // inflate an entry once, not once per chunk).
    static uint64_t inflations();
    const std::string& path() const { return m_file->path(); }
    const std::shared_ptr<const MappedFile>& file() const { return m_file; }

private:
    [[noreturn]] void fail(const std::string& why, uint64_t offset = Error::kNoOffset) const;
    void parse();

    struct NameHash
    {
        using is_transparent = void;
        size_t operator()(std::string_view s) const { return std::hash<std::string_view>()(s); }
    };

    std::shared_ptr<const MappedFile> m_file;
    std::vector<ZipEntry> m_entries;
    std::unordered_map<std::string, size_t, NameHash, std::equal_to<>> m_byName; // first of each name
};

} // namespace ckpt::io
