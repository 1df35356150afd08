#include "io/zip_reader.h"

#include "io/fetch_watch.h"
#include "io/location.h"

#include <algorithm>
#include <atomic>
#include <thread>
#include <zlib.h>

namespace ckpt::io {

namespace {
constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kEnd64Sig = 0x06064b50;
constexpr uint32_t kEnd64LocatorSig = 0x07064b50;
constexpr uint64_t kCentralHeaderSize = 46;
constexpr uint64_t kLocalHeaderSize = 30;
// Deflate cannot expand by more than ~1032:1, so a larger claim is a lie, not a zip bomb we inflate.
constexpr uint64_t kMaxDeflateRatio = 1032;
// The end record with the longest comment, and the ZIP64 locator and end record before it.
constexpr uint64_t kTailWindow = 22 + 65535 + 20 + 56;
} // namespace

ZipReader::ZipReader(std::shared_ptr<const MappedFile> file) : m_file(std::move(file))
{
    try {
        parse();
    } catch (const Error& e) {
        throw e.withFile(m_file->path());
    }
}

bool ZipReader::looksLikeZip(ByteSpan b)
{
    return b.size() >= 4 && loadLE<uint32_t>(b.data()) == kLocalSig;
}

namespace {

// The parse steps below are free functions so they need nothing but the bytes and the path;
// they fail exactly as ZipReader::fail does.
[[noreturn]] void zipFail(const std::string& path, const std::string& why, uint64_t offset = Error::kNoOffset)
{
    throw Error("zip: " + why, path, offset);
}

// Where the central directory is and how many entries it claims.
struct Directory
{
    uint64_t count = 0;
    uint64_t size = 0;
    uint64_t offset = 0;
};

// The end record sits in the last 22 + 65535 (comment) bytes; search backwards.
uint64_t findEndRecord(ByteSpan b, const std::string& path)
{
    const uint64_t n = b.size();
    const uint64_t lowest = n >= 22 + 65535 ? n - 22 - 65535 : 0;
    for (uint64_t p = n - 22 + 1; p-- > lowest;) {
        if (loadLE<uint32_t>(b.data() + p) == kEndSig) return p;
    }
    zipFail(path, "no end-of-central-directory record (truncated file?)");
}

// Reads the classic end record at `eocd`, or the ZIP64 one it points to, and checks that the
// directory it describes fits in the file.
Directory readDirectory(const MappedFile& file, uint64_t eocd, const std::string& path)
{
    const ByteSpan b = file.bytes();
    const uint64_t n = b.size();
    Directory d;
    d.count = loadLE<uint16_t>(b.data() + eocd + 10);
    d.size = loadLE<uint32_t>(b.data() + eocd + 12);
    d.offset = loadLE<uint32_t>(b.data() + eocd + 16);

    // ZIP64: the locator is immediately before the classic end record.
    if (eocd >= 20 && loadLE<uint32_t>(b.data() + eocd - 20) == kEnd64LocatorSig) {
        const uint64_t rec = loadLE<uint64_t>(b.data() + eocd - 20 + 8);
        file.ensure(rec, 56);
        if (!rangeFits(rec, 56, n) || loadLE<uint32_t>(b.data() + rec) != kEnd64Sig)
            zipFail(path, "ZIP64 end record missing or out of range", eocd - 20);
        d.count = loadLE<uint64_t>(b.data() + rec + 32);
        d.size = loadLE<uint64_t>(b.data() + rec + 40);
        d.offset = loadLE<uint64_t>(b.data() + rec + 48);
    }
    if (!rangeFits(d.offset, d.size, n)) zipFail(path, "central directory lies outside the file", eocd);
    if (d.count > d.size / kCentralHeaderSize)
        zipFail(path, "central directory claims more entries than fit in it", eocd);
    if (d.count == 0) zipFail(path, "archive has no entries");
    return d;
}

// Decodes one central directory header at the cursor (which starts at file offset `at`),
// widening the saturated 32-bit fields from its ZIP64 extra field.
ZipEntry readCentralEntry(Cursor& c, uint64_t at, const std::string& path)
{
    if (c.le<uint32_t>() != kCentralSig) zipFail(path, "bad central directory entry signature", at);
    c.take(6); // versions, flags
    ZipEntry e;
    e.method = c.le<uint16_t>();
    c.take(4); // time, date
    e.crc32 = c.le<uint32_t>();
    e.compressedSize = c.le<uint32_t>();
    e.size = c.le<uint32_t>();
    const uint16_t nameLen = c.le<uint16_t>();
    const uint16_t extraLen = c.le<uint16_t>();
    const uint16_t commentLen = c.le<uint16_t>();
    c.take(8); // disk, attributes
    e.localHeaderOffset = c.le<uint32_t>();
    e.name = std::string(asStringView(c.take(nameLen)));
    Cursor extra(c.take(extraLen), "zip extra field");
    while (extra.remaining() >= 4) {
        const uint16_t id = extra.le<uint16_t>();
        const uint16_t len = extra.le<uint16_t>();
        Cursor x(extra.take(len), "zip64 extra field");
        if (id != 0x0001) continue;
        // Only the fields whose 32-bit slot is saturated are present, in this order.
        if (e.size == 0xFFFFFFFF) e.size = x.le<uint64_t>();
        if (e.compressedSize == 0xFFFFFFFF) e.compressedSize = x.le<uint64_t>();
        if (e.localHeaderOffset == 0xFFFFFFFF) e.localHeaderOffset = x.le<uint64_t>();
    }
    c.take(commentLen);
    return e;
}

// Checks the entry's method and sizes, then follows it to its local header to find where its
// data starts (the local name and extra lengths may differ from the central ones).
void locateEntryData(ZipEntry& e, ByteSpan b, uint64_t at, const std::string& path)
{
    const uint64_t n = b.size();
    if (e.method != 0 && e.method != 8)
        zipFail(path,
                "entry '" + e.name + "' uses unsupported compression method " + std::to_string(e.method), at);
    if (e.method == 0 && e.compressedSize != e.size)
        zipFail(path, "stored entry '" + e.name + "' has different compressed and uncompressed sizes", at);
    if (e.method == 8 && e.size / kMaxDeflateRatio > e.compressedSize + 1)
        zipFail(path,
                "deflated entry '" + e.name + "' claims an impossible size of " + std::to_string(e.size) +
                    " bytes",
                at);
    if (!rangeFits(e.localHeaderOffset, kLocalHeaderSize, n))
        zipFail(path, "entry '" + e.name + "' has its local header outside the file", at);
    const uint8_t* lh = b.data() + e.localHeaderOffset;
    if (loadLE<uint32_t>(lh) != kLocalSig)
        zipFail(path, "entry '" + e.name + "' has a bad local header", e.localHeaderOffset);
    e.dataOffset =
        e.localHeaderOffset + kLocalHeaderSize + loadLE<uint16_t>(lh + 26) + loadLE<uint16_t>(lh + 28);
    if (!rangeFits(e.dataOffset, e.compressedSize, n))
        zipFail(path,
                "entry '" + e.name + "' (" + std::to_string(e.compressedSize) +
                    " bytes) extends beyond the end of the file",
                e.localHeaderOffset);
}

// Overlapping entries are how zip bombs and polyglots are built; a real torch file never has them.
void checkNoOverlap(const std::vector<ZipEntry>& entries, uint64_t cdOffset, const std::string& path)
{
    std::vector<const ZipEntry*> sorted;
    for (const auto& e : entries)
        sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(), [](const ZipEntry* a, const ZipEntry* b2) {
        return a->localHeaderOffset < b2->localHeaderOffset;
    });
    for (size_t i = 1; i < sorted.size(); ++i) {
        const ZipEntry* prev = sorted[i - 1];
        if (sorted[i]->localHeaderOffset < prev->dataOffset + prev->compressedSize)
            zipFail(path, "entries '" + prev->name + "' and '" + sorted[i]->name + "' overlap",
                    sorted[i]->localHeaderOffset);
    }
    if (!sorted.empty() && sorted.back()->dataOffset + sorted.back()->compressedSize > cdOffset)
        zipFail(path, "entry '" + sorted.back()->name + "' overlaps the central directory", cdOffset);
}

} // namespace

void ZipReader::fail(const std::string& why, uint64_t offset) const
{
    zipFail(m_file->path(), why, offset);
}

void ZipReader::parse()
{
    const ByteSpan b = m_file->bytes();
    const std::string& path = m_file->path();
    const uint64_t n = b.size();
    if (n < 22) fail("file too small for a zip archive (" + std::to_string(n) + " bytes)");

    // A remote file fetches what each step reads before it reads it: the tail (end records and,
    // usually, the directory), the directory, then every local header in one wave.
    m_file->ensure(n - std::min<uint64_t>(n, kTailWindow), kTailWindow);
    const uint64_t eocd = findEndRecord(b, path);
    const Directory dir = readDirectory(*m_file, eocd, path);
    m_file->ensure(dir.offset, dir.size);

    m_entries.reserve(dir.count);
    std::vector<uint64_t> at;
    std::vector<FileRange> localHeaders;
    Cursor c(b.subspan(dir.offset, dir.size), "zip central directory");
    for (uint64_t i = 0; i < dir.count; ++i) {
        at.push_back(dir.offset + c.pos());
        m_entries.push_back(readCentralEntry(c, at.back(), path));
        localHeaders.push_back({m_entries.back().localHeaderOffset, kLocalHeaderSize});
    }
    m_file->ensure(localHeaders);
    for (uint64_t i = 0; i < dir.count; ++i)
        locateEntryData(m_entries[i], b, at[i], path);
    checkNoOverlap(m_entries, dir.offset, path);

    // Readers look entries up per storage and per chunk: a scan would make that quadratic.
    m_byName.reserve(m_entries.size());
    for (size_t i = 0; i < m_entries.size(); ++i)
        m_byName.emplace(m_entries[i].name, i);
}

void ZipReader::warmRemote(const std::vector<std::string>& paths)
{
    std::vector<std::string> remote;
    for (const auto& p : paths)
        if (isRemotePath(p)) remote.push_back(p);
    if (remote.size() < 2) return; // one file gains nothing from a thread
    const FetchWatch* watch = FetchWatch::current();
    std::atomic<size_t> next{0};
    auto work = [&] {
        FetchWatch::Scope scope(watch);
        for (size_t i = next++; i < remote.size(); i = next++) {
            if (watch && watch->cancelled()) return;
            try {
                const ZipReader zip(MappedFile::open(remote[i]));
                for (const ZipEntry& e : zip.entries()) // the pickle the parse reads first
                    if (e.name == "data.pkl" || e.name.ends_with("/data.pkl")) zip.read(e, 1u << 30);
            } catch (const std::exception&) {
                // Not a zip, or unreadable: its parse says so.
            }
        }
    };
    std::vector<std::thread> threads;
    for (size_t t = 0; t < std::min<size_t>(16, remote.size()); ++t)
        threads.emplace_back(work);
    for (auto& t : threads)
        t.join();
}

const ZipEntry* ZipReader::find(std::string_view name) const
{
    const auto it = m_byName.find(name);
    return it == m_byName.end() ? nullptr : &m_entries[it->second];
}

namespace {
std::atomic<uint64_t> g_inflations{0};
} // namespace

uint64_t ZipReader::inflations()
{
    return g_inflations;
}

Blob ZipReader::read(const ZipEntry& e, uint64_t limit, bool fetch) const
{
    if (fetch || e.method != 0)
        m_file->ensure(e.dataOffset, e.method == 0 ? std::min(limit, e.compressedSize) : e.compressedSize);
    const ByteSpan raw = m_file->bytes().subspan(e.dataOffset, e.compressedSize);
    if (e.method == 0) return {raw.subspan(0, std::min(limit, raw.size())), m_file};

    ++g_inflations;
    const uint64_t want = std::min(e.size, limit);
    // Real tensors deflate by little, so this is usually the one allocation; a stream that
    // produces more than it would (a compressible tensor) grows it, one that lies does not.
    auto out = std::make_shared<std::vector<uint8_t>>(std::min(want, raw.size() * 4 + (64u << 10)));
    z_stream zs{};
    if (inflateInit2(&zs, -MAX_WBITS) != Z_OK) fail("cannot initialise zlib");
    zs.next_in = const_cast<Bytef*>(raw.data());
    uint64_t inLeft = raw.size();
    uint8_t probe = 0; // one byte past `want`: output beyond the declared size is an error
    bool probing = false;
    int rc = Z_OK;
    // zlib counts in uInt; feed and drain in slices so entries over 4 GiB work.
    while (rc == Z_OK) {
        if (zs.avail_in == 0 && inLeft) {
            zs.avail_in = uInt(std::min<uint64_t>(inLeft, 1u << 30));
            inLeft -= zs.avail_in;
        }
        if (zs.avail_out == 0 && !probing) {
            const uint64_t produced = zs.total_out;
            if (produced == want) {
                if (want < e.size) break; // the caller needs no more
                zs.next_out = &probe;
                zs.avail_out = 1;
                probing = true;
            } else {
                if (produced == out->size()) out->resize(std::min(want, out->size() * 2));
                zs.next_out = out->data() + produced;
                zs.avail_out = uInt(std::min<uint64_t>(out->size() - produced, 1u << 30));
            }
        }
        rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && inLeft == 0) break; // ran out of input
        if (probing && zs.avail_out == 0) break;                         // more data than declared
    }
    const uint64_t produced = zs.total_out;
    inflateEnd(&zs);
    if (produced == want && want < e.size && !probing) {
        // stopped early on purpose
    } else if (rc != Z_STREAM_END) {
        fail("entry '" + e.name + "' is not valid deflate data or its declared size is wrong", e.dataOffset);
    } else if (produced != e.size) {
        fail("entry '" + e.name + "' inflates to " + std::to_string(produced) + " bytes, directory says " +
                 std::to_string(e.size),
             e.dataOffset);
    }
    ByteSpan span(out->data(), want);
    return {span, std::shared_ptr<const void>(out, out.get())};
}

} // namespace ckpt::io
