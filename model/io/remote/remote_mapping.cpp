#include "io/remote/remote_mapping.h"

#include "io/error.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sys/mman.h>
#include <unistd.h>

namespace ckpt::io::remote {

namespace {

void protect(uint8_t* p, uint64_t n, int prot, const std::string& url)
{
    if (n && ::mprotect(p, n, prot) != 0)
        throw Error(std::string("cannot change the protection of fetched pages: ") + std::strerror(errno),
                    url);
}

} // namespace

std::unique_ptr<RemoteMapping> RemoteMapping::adopt(OpenedObject opened)
{
    std::unique_ptr<RemoteMapping> m(new RemoteMapping);
    m->m_object = std::move(opened.object);
    m->m_size = m->m_object->size();
    m->m_page = uint64_t(::sysconf(_SC_PAGESIZE));
    const uint64_t pages = std::max<uint64_t>(1, (m->m_size + m->m_page - 1) / m->m_page);
    m->m_reserved = pages * m->m_page;
    // Address space only: NORESERVE commits nothing, PROT_NONE makes an unfetched page fault.
    void* p = ::mmap(nullptr, m->m_reserved, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED)
        throw Error("cannot reserve " + std::to_string(m->m_reserved) +
                        " bytes of address space: " + std::strerror(errno),
                    m->url());
    m->m_base = static_cast<uint8_t*>(p);
    m->m_present.assign(pages, false);
    for (const auto& [offset, bytes] : opened.pieces)
        m->adoptPiece(offset, bytes);
    m->m_lastEnd = opened.pieces.empty() ? 0 : opened.pieces.front().second.size();
    return m;
}

// Keeps the whole pages of bytes fetched with the open (and the last, partial page of the file
// when they reach its end); a page they cover only in part is fetched when asked for.
void RemoteMapping::adoptPiece(uint64_t offset, const std::vector<uint8_t>& bytes)
{
    const uint64_t end = std::min(m_size, offset + bytes.size());
    const uint64_t first = (offset + m_page - 1) / m_page;
    const uint64_t last = end == m_size ? (end + m_page - 1) / m_page : end / m_page;
    if (last <= first) return;
    const uint64_t from = first * m_page, to = std::min(m_size, last * m_page);
    protect(m_base + from, (last - first) * m_page, PROT_READ | PROT_WRITE, url());
    std::memcpy(m_base + from, bytes.data() + (from - offset), to - from);
    protect(m_base + from, (last - first) * m_page, PROT_READ, url());
    setPresent(first, last, true);
}

std::unique_ptr<RemoteMapping> RemoteMapping::open(const std::string& url, const CancelToken* cancel)
{
    auto opened = RemoteObject::openMany({{url, 0}}, kHeadWindow, 0, cancel);
    if (opened[0].error) throw *opened[0].error;
    return adopt(std::move(opened[0]));
}

std::vector<std::unique_ptr<RemoteMapping>> RemoteMapping::openMany(const std::vector<OpenPlan>& plans,
                                                                    const CancelToken* cancel)
{
    std::vector<std::unique_ptr<RemoteMapping>> out;
    for (auto& o : RemoteObject::openMany(plans, kHeadWindow, kTailWindow, cancel)) {
        try {
            out.push_back(o.error ? nullptr : adopt(std::move(o)));
        } catch (const Error&) {
            out.push_back(nullptr);
        }
    }
    return out;
}

RemoteMapping::~RemoteMapping()
{
    if (m_base) ::munmap(m_base, m_reserved);
}

void RemoteMapping::setPresent(uint64_t firstPage, uint64_t endPage, bool present)
{
    for (uint64_t p = firstPage; p < endPage; ++p) {
        if (m_present[p] == present) continue;
        m_present[p] = present;
        m_residentPages += present ? 1 : uint64_t(-1);
    }
}

// The pages the ranges need that are not here, as byte runs: sorted, merged where they touch or
// where the hole between them is small and not here either, and cut to kMaxRequest.
std::vector<ByteRange> RemoteMapping::missingRuns(std::span<const ByteRange> ranges)
{
    std::vector<std::pair<uint64_t, uint64_t>> pages; // [first, end) page runs
    for (ByteRange r : ranges) {
        if (r.offset >= m_size || r.size == 0) continue;
        uint64_t end = r.offset + std::min(r.size, m_size - r.offset);
        const bool sequential = r.offset == m_lastEnd;
        m_lastEnd = end;
        // Read ahead only when a sequential reader reaches pages not here: a window that grows
        // (doubling, as the kernel's readahead does) while the reader keeps coming back for more.
        const uint64_t firstPage = r.offset / m_page, endPage = (end + m_page - 1) / m_page;
        const bool needs =
            std::find(m_present.begin() + int64_t(firstPage), m_present.begin() + int64_t(endPage), false) !=
            m_present.begin() + int64_t(endPage);
        if (!sequential) m_window = kReadaheadStart;
        if (sequential && needs) {
            end = std::min(m_size, end + m_window);
            m_window = std::min(m_window * 2, kReadahead);
        }
        for (uint64_t p = r.offset / m_page; p < (end + m_page - 1) / m_page; ++p) {
            if (m_present[p]) continue;
            if (!pages.empty() && pages.back().second == p)
                pages.back().second = p + 1;
            else
                pages.emplace_back(p, p + 1);
        }
    }
    std::sort(pages.begin(), pages.end());
    std::vector<std::pair<uint64_t, uint64_t>> merged;
    for (const auto& run : pages) {
        if (!merged.empty() && run.first <= merged.back().second + kCoalesceGap / m_page) {
            const uint64_t from = merged.back().second;
            const bool holeMissing = std::none_of(m_present.begin() + std::min<int64_t>(from, run.first),
                                                  m_present.begin() + run.first, [](bool b) { return b; });
            if (run.first <= from || holeMissing) {
                merged.back().second = std::max(merged.back().second, run.second);
                continue;
            }
        }
        merged.push_back(run);
    }
    std::vector<ByteRange> out;
    for (const auto& [first, end] : merged) {
        const uint64_t from = first * m_page;
        const uint64_t to = std::min(m_size, end * m_page);
        for (uint64_t at = from; at < to; at += kMaxRequest)
            out.push_back({at, std::min(kMaxRequest, to - at)});
    }
    return out;
}

void RemoteMapping::fill(const std::vector<ByteRange>& runs, const CancelToken* cancel)
{
    std::vector<uint8_t*> dest;
    const auto pagesOf = [&](ByteRange r) {
        return std::pair(r.offset / m_page, (r.offset + r.size + m_page - 1) / m_page);
    };
    for (ByteRange r : runs) {
        const auto [first, end] = pagesOf(r);
        protect(m_base + first * m_page, (end - first) * m_page, PROT_READ | PROT_WRITE, url());
        dest.push_back(m_base + r.offset);
    }
    try {
        m_object->read(runs, dest, cancel);
    } catch (...) {
        // Nothing half-written stays readable: those pages are fetched again next time.
        for (ByteRange r : runs) {
            const auto [first, end] = pagesOf(r);
            ::madvise(m_base + first * m_page, (end - first) * m_page, MADV_DONTNEED);
            ::mprotect(m_base + first * m_page, (end - first) * m_page, PROT_NONE);
        }
        throw;
    }
    for (ByteRange r : runs) {
        const auto [first, end] = pagesOf(r);
        protect(m_base + first * m_page, (end - first) * m_page, PROT_READ, url());
        setPresent(first, end, true);
    }
}

void RemoteMapping::ensure(std::span<const ByteRange> ranges, const CancelToken* cancel)
{
    std::lock_guard lock(m_mutex);
    const std::vector<ByteRange> runs = missingRuns(ranges);
    if (!runs.empty()) fill(runs, cancel);
}

void RemoteMapping::release(uint64_t offset, uint64_t size)
{
    std::lock_guard lock(m_mutex);
    if (offset >= m_size) return;
    const uint64_t end = std::min(m_size, offset + size);
    const uint64_t first = (offset + m_page - 1) / m_page;
    // The file's last page counts as whole when the range reaches the end.
    const uint64_t last = end == m_size ? (end + m_page - 1) / m_page : end / m_page;
    if (last <= first) return;
    ::madvise(m_base + first * m_page, (last - first) * m_page, MADV_DONTNEED);
    ::mprotect(m_base + first * m_page, (last - first) * m_page, PROT_NONE);
    setPresent(first, last, false);
}

MappingStats RemoteMapping::stats() const
{
    std::lock_guard lock(m_mutex);
    return {m_object->bytesFetched(), m_object->requests(), m_residentPages * m_page};
}

} // namespace ckpt::io::remote
