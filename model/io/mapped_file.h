// A read-only memory map of a whole file. Tensor bytes are spans into it, so opening a
// checkpoint touches only the pages its parsers actually read. A remote object (s3://,
// http(s)://) is one too: its bytes are fetched when a parser calls ensure() on them (see
// docs/ARCHITECTURE.md, "Remote files"); for a local file ensure() costs nothing.
#pragma once

#include "io/bytes.h"

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

namespace ckpt::io {

namespace remote {
class RemoteMapping;
}

struct FileRange
{
    uint64_t offset = 0;
    uint64_t size = 0;
};

struct RemoteStats
{
    uint64_t bytesFetched = 0;
    uint64_t requests = 0;
    uint64_t residentBytes = 0;
};

class MappedFile
{
public:
    // Throws Error naming the path when the file cannot be opened or mapped. A remote URL
    // (remote::isRemote) is opened remotely: one request, for its head bytes, size and ETag.
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

    // Makes bytes readable before a parser touches them: a no-op for local files and buffers;
    // for a remote file, the pages not yet fetched are fetched (all ranges in one wave of
    // concurrent requests). Throws Error naming the URL. Ranges are clamped to the file.
    void ensure(std::span<const FileRange> ranges) const
    {
        if (m_remote) ensureRemote(ranges);
    }
    void ensure(uint64_t offset, uint64_t size) const
    {
        const FileRange r{offset, size};
        ensure(std::span<const FileRange>(&r, 1));
    }
    bool isRemote() const;
    // Remote objects opened again within a minute share one mapping (no request, no byte
    // fetched twice); this forgets them, so the next open asks the server afresh.
    static void dropRemoteCache();
    // A hint that these files (with their sizes, 0 when unknown) are about to be opened: remote
    // ones not open yet are opened together, heads and zip tails in one wave of requests, so a
    // tag of many rank files costs one round trip, not one per file. Local files: nothing.
    static void prefetch(const std::vector<std::pair<std::string, uint64_t>>& files);
    // The size of a remote file open (or prefetched) in this process, without asking its server.
    static std::optional<uint64_t> openedRemoteSize(const std::string& url);
    // The remote files open (or prefetched) in this process whose URL starts with `prefix`,
    // with their sizes.
    static std::vector<std::pair<std::string, uint64_t>> openedRemoteUnder(const std::string& prefix);
    // Zero for a local file.
    RemoteStats remoteStats() const;

private:
    void ensureRemote(std::span<const FileRange> ranges) const;

    MappedFile() = default;
    std::string m_path;
    const uint8_t* m_data = nullptr;
    uint64_t m_size = 0;
    std::vector<uint8_t> m_buffer;              // only for fromBuffer
    std::shared_ptr<const MappedFile> m_parent; // only for slice
    bool m_mapped = false;
    std::shared_ptr<remote::RemoteMapping> m_remote; // only for remote objects (and their slices)
    uint64_t m_remoteOffset = 0;                     // where a slice starts in the remote object
};

} // namespace ckpt::io
