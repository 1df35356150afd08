#include "io/private_map.h"

#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

namespace ckpt::io {

std::shared_ptr<PrivateMap> PrivateMap::open(const FileLocation& where)
{
    const int fd = ::open(where.path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    struct stat st
    {
    };
    std::shared_ptr<PrivateMap> m;
    if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && uint64_t(st.st_ino) == where.inode &&
        uint64_t(st.st_dev) == where.device && st.st_size > 0) {
        // MAP_PRIVATE + PROT_WRITE on a read-only descriptor: pages are the file's until written,
        // then the process's own copies.
        void* p = ::mmap(nullptr, size_t(st.st_size), PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
        if (p != MAP_FAILED) {
            m.reset(new PrivateMap());
            m->m_data = static_cast<uint8_t*>(p);
            m->m_size = uint64_t(st.st_size);
        }
    }
    ::close(fd);
    return m;
}

PrivateMap::~PrivateMap()
{
    if (m_data) ::munmap(m_data, m_size);
}

void MapIndex::reload()
{
    m_ranges.clear();
    std::ifstream maps("/proc/self/maps");
    std::string line;
    while (std::getline(maps, line)) {
        std::istringstream in(line);
        std::string span, perms, dev, path;
        uint64_t offset = 0, inode = 0;
        in >> span >> perms >> std::hex >> offset >> dev >> std::dec >> inode;
        std::getline(in >> std::ws, path);
        const size_t dash = span.find('-'), colon = dev.find(':');
        if (path.empty() || path.front() != '/' || inode == 0 || dash == std::string::npos ||
            colon == std::string::npos)
            continue; // anonymous memory, the heap, the stack: no file behind it
        Range r;
        r.begin = std::stoull(span.substr(0, dash), nullptr, 16);
        r.end = std::stoull(span.substr(dash + 1), nullptr, 16);
        r.offset = offset;
        r.device = makedev(std::stoul(dev.substr(0, colon), nullptr, 16),
                           std::stoul(dev.substr(colon + 1), nullptr, 16));
        r.inode = inode;
        r.path = path;
        m_ranges.push_back(std::move(r));
    }
}

std::optional<FileLocation> MapIndex::locate(const void* address)
{
    const auto a = reinterpret_cast<uintptr_t>(address);
    for (int pass = 0; pass < 2; ++pass) {
        for (const Range& r : m_ranges)
            if (a >= r.begin && a < r.end)
                return FileLocation{r.path, r.offset + (a - r.begin), r.device, r.inode};
        if (pass == 0) reload();
    }
    return std::nullopt;
}

} // namespace ckpt::io
