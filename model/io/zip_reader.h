// Reads the central directory of a zip archive held in a memory map. STORED entries become
// zero-copy spans; deflated entries (a checkpoint re-zipped by a user) are inflated on demand.
// Every size and offset is checked against the file before use.
#pragma once

#include "io/blob.h"
#include "io/mapped_file.h"

#include <optional>
#include <string>
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
    const ZipEntry* find(std::string_view name) const;
    // The entry's bytes: a span of the map for STORED, a fresh buffer for deflate.
    Blob read(const ZipEntry& entry) const;
    const std::string& path() const { return m_file->path(); }
    const std::shared_ptr<const MappedFile>& file() const { return m_file; }

private:
    [[noreturn]] void fail(const std::string& why, uint64_t offset = Error::kNoOffset) const;
    void parse();

    std::shared_ptr<const MappedFile> m_file;
    std::vector<ZipEntry> m_entries;
};

} // namespace ckpt::io
