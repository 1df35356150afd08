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
    ~MappedFile();
    MappedFile(const MappedFile&) = delete;
    MappedFile& operator=(const MappedFile&) = delete;

    const std::string& path() const { return m_path; }
    ByteSpan bytes() const { return {m_data, m_size}; }
    uint64_t size() const { return m_size; }

private:
    MappedFile() = default;
    std::string m_path;
    const uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
    std::vector<uint8_t> m_buffer; // only for fromBuffer
    bool m_mapped = false;
};

} // namespace ckpt::io
