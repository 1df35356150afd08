// A remote object laid out in memory like a mapped file: an address range reserved for its
// whole size (PROT_NONE, no memory committed), whose pages are fetched when a parser asks for
// them with ensure() and dropped again by release(). A page nobody ensured stays unreadable,
// so a forgotten ensure() is a crash in tests, never bytes silently read as zeros.
#pragma once

#include "io/job.h"
#include "io/remote/remote_object.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace ckpt::io::remote {

struct MappingStats
{
    uint64_t bytesFetched = 0; // body bytes received, open included
    uint64_t requests = 0;     // HTTP attempts, open included
    uint64_t residentBytes = 0;
};

class RemoteMapping
{
public:
    // The first request reads the head window (it also pins size and ETag); see kHeadWindow.
    static std::unique_ptr<RemoteMapping> open(const std::string& url, const CancelToken* cancel = nullptr);
    // Several at once, in one wave of requests (heads, and tails where the size is known); null
    // where one failed: a hint's failure is left for the open that needs the file to report.
    static std::vector<std::unique_ptr<RemoteMapping>> openMany(const std::vector<OpenPlan>& plans,
                                                                const CancelToken* cancel = nullptr);
    ~RemoteMapping();
    RemoteMapping(const RemoteMapping&) = delete;
    RemoteMapping& operator=(const RemoteMapping&) = delete;

    const uint8_t* data() const { return m_base; }
    uint64_t size() const { return m_size; }
    const std::string& url() const { return m_object->url(); }

    // Makes every byte of the ranges readable, fetching the pages not yet here in one wave of
    // concurrent requests (neighbouring pages coalesced, a sequential reader's next window
    // read ahead). Throws Error naming the URL; what was fetched before the error stays.
    void ensure(std::span<const ByteRange> ranges, const CancelToken* cancel = nullptr);
    // Drops the whole pages inside the range (a streaming reader behind its position).
    void release(uint64_t offset, uint64_t size);
    MappingStats stats() const;

    static constexpr uint64_t kHeadWindow = 256u << 10;   // a safetensors header or a zip's first records
    static constexpr uint64_t kTailWindow = 128u << 10;   // a zip's end records and (usually) directory
    static constexpr uint64_t kMaxRequest = 8u << 20;     // AWS's advice for parallel ranged GETs
    static constexpr uint64_t kCoalesceGap = 64u << 10;   // fetching a hole this small beats a round trip
    static constexpr uint64_t kReadaheadStart = 1u << 20; // a sequential reader's first window
    static constexpr uint64_t kReadahead = 8u << 20;      // its largest

private:
    RemoteMapping() = default;
    static std::unique_ptr<RemoteMapping> adopt(OpenedObject opened);
    void adoptPiece(uint64_t offset, const std::vector<uint8_t>& bytes);
    std::vector<ByteRange> missingRuns(std::span<const ByteRange> ranges);
    void fill(const std::vector<ByteRange>& runs, const CancelToken* cancel);
    void setPresent(uint64_t firstPage, uint64_t endPage, bool present);

    std::shared_ptr<RemoteObject> m_object;
    uint8_t* m_base = nullptr;
    uint64_t m_size = 0;
    uint64_t m_reserved = 0;
    uint64_t m_page = 4096;
    std::vector<bool> m_present; // one bit a page
    uint64_t m_residentPages = 0;
    uint64_t m_lastEnd = 0; // where the previous ensure ended: the next starting there is sequential
    uint64_t m_window = kReadaheadStart;
    mutable std::mutex m_mutex;
};

} // namespace ckpt::io::remote
