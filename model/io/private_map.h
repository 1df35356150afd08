// A private, writable, copy-on-write map of a whole file, for handing tensors to code that may
// write into them (torch and numpy from Python): writes stay in this process and never reach the
// file. With it, where an address inside one of this process's file maps lies (which file, which
// byte), so a tensor found in the engine's read-only map can be handed out from a private one.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::io {

// A byte of a mapped file, and the file's identity when it was mapped (to refuse a file that
// was replaced since).
struct FileLocation
{
    std::string path;
    uint64_t offset = 0;
    uint64_t device = 0, inode = 0;
};

class PrivateMap
{
public:
    // The whole file at `where.path` if it is still the file `where` names (same device and
    // inode) and can be mapped; else nullptr (the caller copies instead).
    static std::shared_ptr<PrivateMap> open(const FileLocation& where);
    ~PrivateMap();
    PrivateMap(const PrivateMap&) = delete;
    PrivateMap& operator=(const PrivateMap&) = delete;

    uint8_t* data() const { return m_data; }
    uint64_t size() const { return m_size; }

private:
    PrivateMap() = default;
    uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
};

// Which file map of this process holds an address (the kernel's list of maps, read again when
// an address is not in the copy read before: files mapped since).
class MapIndex
{
public:
    std::optional<FileLocation> locate(const void* address);

private:
    struct Range
    {
        uintptr_t begin = 0, end = 0;
        uint64_t offset = 0, device = 0, inode = 0;
        std::string path;
    };
    void reload();
    std::vector<Range> m_ranges;
};

} // namespace ckpt::io
