#include "io/mapped_file.h"

#include "io/input_file.h"
#include "io/remote/remote_mapping.h"
#include "io/remote/url.h"

#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <fcntl.h>
#include <map>
#include <mutex>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt::io {

namespace {

// One remote object, one mapping, while anyone holds it (or it is among the last opened) and
// for a minute: recognizing a family, listing its tags and parsing the files open the same URL
// several times in one job, and each open must cost no request and no byte fetched again. Past
// a minute, an open asks the server afresh (a new ETag pinned), so a long-lived window sees a
// replaced object.
using Clock = std::chrono::steady_clock;

struct MappingCache
{
    // Enough for every rank file of a large tag that prefetch opened before the parse needs
    // them; each holds its head and tail pages (at most 384 KiB) unless a reader keeps more.
    static constexpr size_t kRecent = 256;
    std::mutex m;
    std::map<std::string, std::pair<Clock::time_point, std::weak_ptr<remote::RemoteMapping>>> live;
    std::deque<std::shared_ptr<remote::RemoteMapping>> recent; // kept alive a while

    std::shared_ptr<remote::RemoteMapping> find(const std::string& url)
    {
        const auto it = live.find(url);
        if (it == live.end() || Clock::now() - it->second.first >= std::chrono::minutes(1)) return nullptr;
        return it->second.second.lock();
    }
    void add(const std::string& url, const std::shared_ptr<remote::RemoteMapping>& p)
    {
        live[url] = {Clock::now(), p};
        recent.push_back(p);
        if (recent.size() > kRecent) recent.pop_front();
        std::erase_if(live, [](const auto& kv) { return kv.second.second.expired(); });
    }
};

MappingCache& cache()
{
    static MappingCache c;
    return c;
}

std::shared_ptr<remote::RemoteMapping> sharedMapping(const std::string& url)
{
    MappingCache& c = cache();
    std::lock_guard lock(c.m);
    if (url.empty()) { // MappedFile::dropRemoteCache
        c.live.clear();
        c.recent.clear();
        return nullptr;
    }
    if (auto p = c.find(url)) return p;
    std::shared_ptr<remote::RemoteMapping> p = remote::RemoteMapping::open(url);
    c.add(url, p);
    return p;
}

} // namespace

void MappedFile::prefetch(const std::vector<std::pair<std::string, uint64_t>>& files)
{
    MappingCache& c = cache();
    std::vector<remote::OpenPlan> plans;
    {
        std::lock_guard lock(c.m);
        for (const auto& [path, size] : files)
            if (remote::isRemote(path) && !c.find(path)) plans.push_back({path, size});
    }
    if (plans.empty()) return;
    auto opened = remote::RemoteMapping::openMany(plans);
    std::lock_guard lock(c.m);
    // Kept beside the recent ones for as long as the job that asked is likely to need them.
    for (size_t i = 0; i < plans.size(); ++i)
        if (opened[i]) c.add(plans[i].url, std::shared_ptr<remote::RemoteMapping>(std::move(opened[i])));
}

std::optional<uint64_t> MappedFile::openedRemoteSize(const std::string& url)
{
    MappingCache& c = cache();
    std::lock_guard lock(c.m);
    if (const auto p = c.find(url)) return p->size();
    return std::nullopt;
}

std::vector<std::pair<std::string, uint64_t>> MappedFile::openedRemoteUnder(const std::string& prefix)
{
    MappingCache& c = cache();
    std::lock_guard lock(c.m);
    std::vector<std::pair<std::string, uint64_t>> out;
    for (auto it = c.live.lower_bound(prefix); it != c.live.end() && it->first.rfind(prefix, 0) == 0; ++it)
        if (const auto p = c.find(it->first)) out.push_back({it->first, p->size()});
    return out;
}

void MappedFile::dropRemoteCache()
{
    sharedMapping({});
}

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path)
{
    if (remote::isRemote(path)) {
        std::shared_ptr<MappedFile> f(new MappedFile);
        f->m_remote = sharedMapping(path);
        f->m_path = path;
        f->m_data = f->m_remote->data();
        f->m_size = f->m_remote->size();
        return f;
    }
    const int fd = openRegularFile(path); // never a FIFO or device: those could block or never end
    struct stat st
    {
    };
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        throw Error(std::string("cannot stat: ") + std::strerror(e), path);
    }
    std::shared_ptr<MappedFile> f(new MappedFile);
    f->m_path = path;
    f->m_size = uint64_t(st.st_size);
    if (f->m_size > 0) {
        void* p = ::mmap(nullptr, f->m_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            const int e = errno;
            ::close(fd);
            throw Error(std::string("cannot map: ") + std::strerror(e), path);
        }
        f->m_data = static_cast<const uint8_t*>(p);
        f->m_mapped = true;
    }
    ::close(fd);
    return f;
}

std::shared_ptr<const MappedFile> MappedFile::fromBuffer(std::vector<uint8_t> bytes, const std::string& name)
{
    std::shared_ptr<MappedFile> f(new MappedFile);
    f->m_path = name;
    f->m_buffer = std::move(bytes);
    f->m_data = f->m_buffer.data();
    f->m_size = f->m_buffer.size();
    return f;
}

std::shared_ptr<const MappedFile> MappedFile::slice(std::shared_ptr<const MappedFile> parent, uint64_t offset,
                                                    uint64_t size, const std::string& name)
{
    if (offset > parent->size() || size > parent->size() - offset)
        throw Error("bytes " + std::to_string(offset) + "+" + std::to_string(size) + " lie beyond its end (" +
                        std::to_string(parent->size()) + " bytes)",
                    parent->path());
    std::shared_ptr<MappedFile> f(new MappedFile);
    f->m_path = name;
    f->m_data = parent->m_data + offset;
    f->m_size = size;
    f->m_remote = parent->m_remote;
    f->m_remoteOffset = parent->m_remoteOffset + offset;
    f->m_parent = std::move(parent);
    return f;
}

void MappedFile::ensureRemote(std::span<const FileRange> ranges) const
{
    std::vector<remote::ByteRange> shifted;
    shifted.reserve(ranges.size());
    for (const FileRange& r : ranges) {
        if (r.offset >= m_size || r.size == 0) continue;
        shifted.push_back({m_remoteOffset + r.offset, std::min(r.size, m_size - r.offset)});
    }
    m_remote->ensure(shifted);
}

bool MappedFile::isRemote() const
{
    return m_remote != nullptr;
}

RemoteStats MappedFile::remoteStats() const
{
    if (!m_remote) return {};
    const auto s = m_remote->stats();
    return {s.bytesFetched, s.requests, s.residentBytes};
}

void MappedFile::release(const uint8_t* begin, uint64_t size) const
{
    if (m_parent) return m_parent->release(begin, size);
    if (m_remote) {
        if (begin >= m_data && begin + size <= m_data + m_size)
            m_remote->release(uint64_t(begin - m_remote->data()), size);
        return;
    }
    if (!m_mapped || begin < m_data || begin + size > m_data + m_size) return;
    const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
    // Only whole pages inside the range: a page shared with bytes still to come stays.
    const uint64_t from = (uint64_t(begin - m_data) + page - 1) / page * page;
    const uint64_t to = uint64_t(begin - m_data + size) / page * page;
    if (to > from) ::madvise(const_cast<uint8_t*>(m_data) + from, to - from, MADV_DONTNEED);
}

MappedFile::~MappedFile()
{
    if (m_mapped) ::munmap(const_cast<uint8_t*>(m_data), m_size);
}

} // namespace ckpt::io
