#include "io/archive.h"

#include "io/error.h"
#include "io/input_file.h"
#include "io/location.h"

#include <algorithm>
#include <archive.h>
#include <archive_entry.h>
#include <cstring>
#include <set>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt::io {

namespace {

struct ArchiveFree
{
    void operator()(archive* a) const { archive_read_free(a); }
};
using ArchivePtr = std::unique_ptr<archive, ArchiveFree>;

std::string reasonOf(archive* a)
{
    const char* s = archive_error_string(a);
    return s ? s : "unreadable archive";
}

using SupportFn = int (*)(archive*);
struct Decompressor
{
    const char* wrapper;
    SupportFn support;
};
constexpr Decompressor kDecompressors[] = {
    {"gzip", archive_read_support_filter_gzip}, {"bzip2", archive_read_support_filter_bzip2},
    {"xz", archive_read_support_filter_xz},     {"lzma", archive_read_support_filter_lzma},
    {"zstd", archive_read_support_filter_zstd}, {"lz4", archive_read_support_filter_lz4},
    {"lzop", archive_read_support_filter_lzop},
};

// Whether libarchive decompresses this in-process. Where it lacks the library it would run an
// external program (`lzop -d`, ...) instead, which a viewer of untrusted files never does; the
// probe is on a throwaway handle, since enabling a filter is what registers that program.
bool inProcess(SupportFn support)
{
    ArchivePtr probe(archive_read_new());
    return probe && support(probe.get()) == ARCHIVE_OK;
}

ArchivePtr newReader(const std::string& path, const std::string& wrapper)
{
    ArchivePtr a(archive_read_new());
    if (!a) throw Error("out of memory", path);
    for (const Decompressor& d : kDecompressors) {
        if (!inProcess(d.support)) {
            if (wrapper == d.wrapper)
                throw Error(std::string(d.wrapper) +
                                " compression cannot be read by this build without running an external "
                                "program; decompress the file first",
                            path);
            continue;
        }
        d.support(a.get());
    }
    archive_read_support_format_tar(a.get());
    archive_read_support_format_raw(a.get()); // bids last: a compressed stream that is not a tar
    return a;
}

// The member's name as the checkpoint means it, or "" for the archive's root directory entry;
// throws for names that would leave the archive.
std::string normalisedName(const std::string& raw, bool directory, const std::string& path)
{
    // Composer tars its temp dir with arcname='': a directory entry named "/" (Python reads it
    // as ""). It is the one absolute name that means "here".
    if (raw == "/" && directory) return {};
    std::string n = raw;
    while (n.starts_with("./"))
        n.erase(0, 2);
    while (n.size() > 1 && n.back() == '/')
        n.pop_back();
    if (n == "." || n.empty()) return {};
    if (n.front() == '/')
        throw Error(
            "member '" + raw + "' has an absolute name; refused (archive members must stay inside it)", path);
    for (size_t start = 0;;) {
        const size_t end = n.find('/', start);
        if (n.compare(start, end == std::string::npos ? std::string::npos : end - start, "..") == 0 &&
            (end == std::string::npos ? n.size() - start : end - start) == 2)
            throw Error("member '" + raw + "' has a '..' name that leaves the archive; refused", path);
        if (end == std::string::npos) break;
        start = end + 1;
    }
    return n;
}

void checkMemberType(archive_entry* e, const std::string& name, const std::string& path)
{
    const char* what = nullptr;
    if (archive_entry_hardlink(e))
        what = "a hard link";
    else if (archive_entry_filetype(e) == AE_IFLNK)
        what = "a symbolic link";
    else if (archive_entry_filetype(e) != AE_IFREG && archive_entry_filetype(e) != AE_IFDIR)
        what = "a device, FIFO or socket";
    else if (archive_entry_sparse_count(e) > 0)
        what = "a sparse file";
    if (what)
        throw Error("member '" + name + "' is " + what + "; refused (a checkpoint holds plain files)", path);
}

uint64_t fileSizeOf(int fd, const std::string& path)
{
    struct stat st
    {
    };
    if (::fstat(fd, &st) != 0) throw Error("cannot read the file's size", path);
    return uint64_t(st.st_size);
}

class Reader
{
public:
    Reader(const std::string& path, const UnpackLimits& limits) : m_path(path), m_limits(limits) {}

    // Refuses a size before any of it is produced (tar headers declare it) or while a raw stream
    // grows past it.
    void checkSize(uint64_t size, uint64_t compressed, const std::string& member) const
    {
        const std::string who =
            member.empty() ? std::string("the compressed stream") : "member '" + member + "'";
        if (size > m_limits.maxBytes)
            throw Error(
                who + " decompresses to more than " + std::to_string(m_limits.maxBytes >> 20) +
                    " MiB, the limit for decompressing in memory; refused (decompress it to disk first)",
                m_path);
        if (size > m_limits.ratioFloor && size / std::max<uint64_t>(compressed, 1) > m_limits.maxRatio)
            throw Error(who + " decompresses to " + std::to_string(size >> 20) + " MiB from a " +
                            std::to_string(compressed) +
                            "-byte file (a decompression bomb, not a checkpoint); refused",
                        m_path);
    }

    std::vector<uint8_t> readAll(archive* a, uint64_t declared, uint64_t compressed,
                                 const std::string& member)
    {
        std::vector<uint8_t> out;
        auto failed = [&] {
            return Error((member.empty() ? std::string() : "member '" + member + "': ") + reasonOf(a),
                         m_path);
        };
        if (declared != ~uint64_t(0)) { // a tar member: its size is known before a byte is produced
            checkSize(m_total + declared, compressed, member);
            out.resize(declared);
            uint64_t got = 0;
            while (got < declared) {
                const la_ssize_t n = archive_read_data(a, out.data() + got,
                                                       size_t(std::min<uint64_t>(declared - got, 64u << 20)));
                if (n < 0) throw failed();
                if (n == 0)
                    throw Error("member '" + member + "' is truncated: " + std::to_string(got) + " of its " +
                                    std::to_string(declared) + " bytes",
                                m_path);
                got += uint64_t(n);
            }
        } else { // a raw stream: checked as it grows, so a bomb stops at the limit
            std::vector<uint8_t> chunk(1u << 20);
            for (;;) {
                const la_ssize_t n = archive_read_data(a, chunk.data(), chunk.size());
                if (n < 0) throw failed();
                if (n == 0) break;
                checkSize(m_total + out.size() + uint64_t(n), compressed, member);
                out.insert(out.end(), chunk.begin(), chunk.begin() + n);
            }
        }
        m_total += out.size();
        return out;
    }

private:
    const std::string& m_path;
    const UnpackLimits& m_limits;
    uint64_t m_total = 0; // decompressed so far, all members together
};

} // namespace

std::string wrapperOf(ByteSpan h)
{
    auto at = [&](size_t off, std::initializer_list<uint8_t> magic) {
        if (h.size() < off + magic.size()) return false;
        size_t i = off;
        for (uint8_t b : magic)
            if (h[i++] != b) return false;
        return true;
    };
    if (at(257, {'u', 's', 't', 'a', 'r'})) return "tar";
    if (at(0, {0x1f, 0x8b, 0x08})) return "gzip";
    if (at(0, {'B', 'Z', 'h'}) && h.size() > 3 && h[3] >= '1' && h[3] <= '9') return "bzip2";
    if (at(0, {0xfd, '7', 'z', 'X', 'Z', 0x00})) return "xz";
    if (at(0, {0x28, 0xb5, 0x2f, 0xfd})) return "zstd";
    if (at(0, {0x04, 0x22, 0x4d, 0x18})) return "lz4";
    if (at(0, {0x89, 'L', 'Z', 'O'})) return "lzop";
    // LZMA-alone has no magic: the usual properties byte, then a dictionary size of at least
    // 4 KiB (which also tells it from a safetensors header length starting 5D 00 00).
    if (h.size() >= 13 && h[0] == 0x5d) {
        const uint32_t dict =
            uint32_t(h[1]) | uint32_t(h[2]) << 8 | uint32_t(h[3]) << 16 | uint32_t(h[4]) << 24;
        if (dict >= 4096) return "lzma";
    }
    return {};
}

std::string wrapperOfFile(const std::string& path) noexcept
{
    const std::string head = readHead(path, 512);
    return wrapperOf(ByteSpan(reinterpret_cast<const uint8_t*>(head.data()), head.size()));
}

bool fetchedWhole(const std::string& path, const std::string& wrapper)
{
    return isRemotePath(path) && !wrapper.empty() && wrapper != "tar";
}

UnpackLimits UnpackLimits::defaults()
{
    UnpackLimits l;
    l.maxBytes = 8ull << 30;
    const long pages = ::sysconf(_SC_PHYS_PAGES), pageSize = ::sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && pageSize > 0)
        l.maxBytes = std::min<uint64_t>(l.maxBytes, uint64_t(pages) * uint64_t(pageSize) / 2);
    return l;
}

std::string memberId(const std::string& archive, const std::string& member)
{
    return archive + "!" + member;
}

namespace {

// The input as libarchive reads it. An uncompressed tar is read from the map, so its members are
// slices of it; compressed input is streamed from the descriptor, block by block. A remote file
// is read through its map by callbacks: a tar's member data is skipped, not fetched (only the
// 512-byte headers are), and a compressed stream is fetched block by block and released behind,
// so neither is downloaded into memory whole.
struct Input
{
    std::shared_ptr<const MappedFile> mapped; // an uncompressed tar, or any remote file
    uint64_t fileSize = 0;
    int fd = -1;             // owned: closed with the Input, also when opening fails half way
    uint64_t position = 0;   // of the next block handed to libarchive (remote files)
    uint64_t released = 0;   // what is behind this was released (a remote compressed file)
    bool keepBlocks = false; // an in-place tar: its members are slices of these pages

    Input() = default;
    Input(const Input&) = delete;
    Input& operator=(const Input&) = delete;
    ~Input()
    {
        if (fd >= 0) ::close(fd);
    }
};

// A remote file's next block, fetched, as a pointer into its map (so a member's first data block
// locates the member in the file, as for a tar read from memory). What is behind is released,
// unless members are slices of it.
constexpr uint64_t kRemoteBlock = 256u << 10;

la_ssize_t readRemote(archive* a, void* data, const void** block)
{
    auto& in = *static_cast<Input*>(data);
    const uint64_t n = std::min(kRemoteBlock, in.fileSize - in.position);
    try {
        in.mapped->ensure(in.position, n);
    } catch (const Error& e) {
        archive_set_error(a, EIO, "%s", e.what());
        return -1;
    }
    const uint8_t* base = in.mapped->bytes().data();
    if (!in.keepBlocks && in.position >= in.released + 2 * kRemoteBlock) { // libarchive may hold the last
        const uint64_t upTo = in.position - kRemoteBlock;
        in.mapped->release(base + in.released, upTo - in.released);
        in.released = upTo;
    }
    *block = base + in.position;
    in.position += n;
    return la_ssize_t(n);
}

la_int64_t skipRemote(archive*, void* data, la_int64_t request)
{
    auto& in = *static_cast<Input*>(data);
    const uint64_t n =
        std::min<uint64_t>(uint64_t(std::max<la_int64_t>(request, 0)), in.fileSize - in.position);
    in.position += n;
    return la_int64_t(n);
}

void openInput(archive* a, const std::string& path, bool inPlace, Input& in)
{
    if (isRemotePath(path)) {
        in.mapped = MappedFile::open(path);
        in.fileSize = in.mapped->size();
        in.keepBlocks = inPlace;
        archive_read_set_callback_data(a, &in);
        archive_read_set_read_callback(a, readRemote);
        archive_read_set_skip_callback(a, skipRemote);
        if (archive_read_open1(a) != ARCHIVE_OK) throw Error(reasonOf(a), path);
    } else if (inPlace) {
        in.mapped = MappedFile::open(path);
        in.fileSize = in.mapped->size();
        in.keepBlocks = true;
        if (archive_read_open_memory(a, in.mapped->bytes().data(), in.mapped->size()) != ARCHIVE_OK)
            throw Error(reasonOf(a), path);
    } else {
        in.fd = openRegularFile(path);
        in.fileSize = fileSizeOf(in.fd, path);
        if (archive_read_open_fd(a, in.fd, 1u << 20) != ARCHIVE_OK) throw Error(reasonOf(a), path);
    }
}

// The tar member's normalised name and kind from its header, with its type and uniqueness
// checked; an empty name means the member is skipped (such as "./").
ArchiveMember tarMemberHeader(archive_entry* e, const std::string& path, std::set<std::string>& seen)
{
    const char* rawName = archive_entry_pathname(e);
    if (!rawName) rawName = archive_entry_pathname_utf8(e);
    if (!rawName) throw Error("a member's name cannot be read; refused", path);
    const std::string raw = rawName;
    checkMemberType(e, raw, path);
    ArchiveMember m;
    m.directory = archive_entry_filetype(e) == AE_IFDIR;
    m.name = normalisedName(raw, m.directory, path);
    if (m.name.empty()) return m;
    if (!seen.insert(m.name).second)
        throw Error("member '" + m.name + "' appears twice; refused (which one is meant is ambiguous)", path);
    m.size = archive_entry_size_is_set(e) ? uint64_t(archive_entry_size(e)) : 0;
    return m;
}

// Points the member of a tar read from memory at its bytes in the map, without copying them:
// libarchive hands out the member's first block as a pointer into the buffer it was given.
void sliceInPlace(archive* a, ArchiveMember& m, const Input& in, const std::string& path)
{
    const void* block = nullptr;
    size_t len = 0;
    la_int64_t off = 0;
    const int rd = archive_read_data_block(a, &block, &len, &off);
    if (rd < ARCHIVE_WARN) throw Error("member '" + m.name + "': " + reasonOf(a), path);
    const auto* p = static_cast<const uint8_t*>(block);
    const uint8_t* base = in.mapped->bytes().data();
    if (rd == ARCHIVE_EOF || m.size == 0)
        m.offset = 0, m.size = 0;
    else if (p >= base && p < base + in.fileSize && off == 0)
        m.offset = uint64_t(p - base);
    else // libarchive copied after all: never expected for a tar read from memory
        throw Error("member '" + m.name + "' cannot be located in the file", path);
    if (m.offset + m.size > in.fileSize)
        throw Error("member '" + m.name + "' is truncated: it declares " + std::to_string(m.size) +
                        " bytes, the file ends after " + std::to_string(in.fileSize - m.offset),
                    path);
    m.data = MappedFile::slice(in.mapped, m.offset, m.size, memberId(path, m.name));
}

} // namespace

Unwrapped unwrap(const std::string& path, const std::function<bool(const std::string&)>& want,
                 const UnpackLimits& limits)
{
    Unwrapped u;
    u.wrapper = wrapperOfFile(path);
    if (u.wrapper.empty()) throw Error("not a tar archive or a compressed file", path);
    ArchivePtr a = newReader(path, u.wrapper);
    Input in; // after `a`, so the descriptor is closed before the reader is freed
    openInput(a.get(), path, u.wrapper == "tar", in);
    u.inPlace = in.keepBlocks;

    Reader reader(path, limits);
    std::set<std::string> seen;
    archive_entry* e = nullptr;
    for (;;) {
        const int r = archive_read_next_header(a.get(), &e);
        if (r == ARCHIVE_EOF) break;
        if (r < ARCHIVE_WARN) // most often a truncated file: say where it broke off
            throw Error(
                (u.members.empty() ? std::string() : "after member '" + u.members.back().name + "': ") +
                    reasonOf(a.get()),
                path);
        const int format = archive_format(a.get()) & ARCHIVE_FORMAT_BASE_MASK;
        if (format == ARCHIVE_FORMAT_RAW) { // a compressed file, not a tar: one nameless member
            ArchiveMember m;
            std::vector<uint8_t> bytes = reader.readAll(a.get(), ~uint64_t(0), in.fileSize, {});
            m.size = bytes.size();
            m.data = MappedFile::fromBuffer(std::move(bytes), path);
            u.members.push_back(std::move(m));
            break;
        }
        u.tar = true;
        ArchiveMember m = tarMemberHeader(e, path, seen);
        if (m.name.empty()) continue;
        if (!m.directory && (!want || want(m.name))) {
            if (u.inPlace)
                sliceInPlace(a.get(), m, in, path);
            else
                m.data = MappedFile::fromBuffer(reader.readAll(a.get(), m.size, in.fileSize, m.name),
                                                memberId(path, m.name));
        }
        u.members.push_back(std::move(m));
    }
    // (A stream of zeros reads as an empty tar: its first block is tar's end marker.)
    if (u.members.empty() && !u.tar)
        throw Error("holds no data: neither a tar member nor a compressed file", path);
    return u;
}

} // namespace ckpt::io
