// Wrappers a checkpoint may come in: a tar (plain or gzip/bzip2/xz compressed) or a raw
// compressed stream (.pt.gz, .pt.bz2, .pt.xz, .pt.lzma, .pt.zst, .pt.lz4), recognised by their
// magic bytes and read with libarchive. Members of an uncompressed tar are slices of the mapped
// file (never extracted, nothing copied); compressed bytes are streamed into a buffer of the
// member's size, up to a limit, so a decompression bomb is refused instead of filling memory.
// Hostile members (`..` or absolute names, links, devices) refuse the whole archive.
#pragma once

#include "io/bytes.h"
#include "io/mapped_file.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ckpt::io {

// "tar", "gzip", "bzip2", "xz", "lzma" (LZMA-alone), "zstd", "lz4", "lzop", or "" when the first
// bytes (at least 263 for a tar) are none of these.
std::string wrapperOf(ByteSpan head);
// The same for a file (reads its first 512 bytes); "" when it cannot be read. Never throws.
std::string wrapperOfFile(const std::string& path) noexcept;
// Whether reading a file in this wrapper fetches all of it first: a compressed stream at a URL,
// which no range reaches into (a tar's members are ranges of it).
bool fetchedWhole(const std::string& path, const std::string& wrapper);

struct UnpackLimits
{
    // No member (or raw stream) is decompressed beyond this: 8 GiB, or half the RAM if less.
    uint64_t maxBytes = 0;
    // Above `ratioFloor` decompressed bytes, more than `maxRatio` times the compressed file's size
    // is a bomb (real checkpoints compress 1-3x; only all-zero data goes far beyond).
    uint64_t ratioFloor = 256ull << 20;
    uint64_t maxRatio = 200;
    static UnpackLimits defaults();
};

struct ArchiveMember
{
    std::string name; // normalised: no leading "./"; directories end without '/'
    bool directory = false;
    uint64_t size = 0;
    uint64_t offset = 0; // of the data in the file, for members read in place (uncompressed tar)
    // The member's bytes as a file of its own named "<archive>!<name>" (a raw stream: the
    // archive's path), or null when the caller did not want them.
    std::shared_ptr<const MappedFile> data;
};

struct Unwrapped
{
    std::string wrapper;                // what wrapperOf said
    bool tar = false;                   // a tar (possibly compressed); else one raw compressed stream
    bool inPlace = false;               // members are slices of the mapped file
    std::vector<ArchiveMember> members; // in archive order; a raw stream: one, named ""
};

// The FileSet id of a member: "<archive>!<member>".
std::string memberId(const std::string& archive, const std::string& member);

// Opens a wrapped file and gives its members; `want(name)` says which regular members' bytes
// are produced (all when empty). Throws Error naming the file (and the member) for a hostile,
// truncated or over-limit archive, or for a compression this build cannot read in-process.
Unwrapped unwrap(const std::string& path, const std::function<bool(const std::string&)>& want = {},
                 const UnpackLimits& limits = UnpackLimits::defaults());

} // namespace ckpt::io
