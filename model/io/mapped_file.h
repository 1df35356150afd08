// A read-only memory map of a whole file. Tensor bytes are spans into it, so opening a
// checkpoint touches only the pages its parsers actually read.
#pragma once

#include "io/bytes.h"

#include <memory>
#include <string>
#include <vector>

namespace ckpt::io {

class MappedFile
{
public:
    // Throws Error naming the path when the file cannot be opened or mapped.
    static std::shared_ptr<const MappedFile> open(const std::string& path);
    // Bytes already in memory, under a display name (fuzzers, tests, members of archives).
    static std::shared_ptr<const MappedFile> fromBuffer(std::vector<uint8_t> bytes, const std::string& name);
    // Bytes [offset, offset+size) of another map, as a file of their own (a member of an
    // uncompressed tar, one item of a .distcp): zero-copy, keeps the parent mapped. Throws Error
    // naming the parent when the range does not lie inside it.
    static std::shared_ptr<const MappedFile> slice(std::shared_ptr<const MappedFile> parent, uint64_t offset,
                                                   uint64_t size, const std::string& name);
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::string& path() const { return m_path; }
    ByteSpan bytes() const { return {m_data, m_size}; }
    uint64_t size() const { return m_size; }
    // Tells the OS we are done with these bytes for now: their pages leave this process's
    // resident set (the page cache keeps them). Streaming jobs call it behind their read
    // position so memory stays bounded by the chunk size, not the file size.
    void release(const uint8_t* begin, uint64_t size) const;

private:
    MappedFile() = default;
    std::string m_path;
    const uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
    std::vector<uint8_t> m_buffer;              // only for fromBuffer
    std::shared_ptr<const MappedFile> m_parent; // only for slice
    bool m_mapped = false;
};

} // namespace ckpt::io
