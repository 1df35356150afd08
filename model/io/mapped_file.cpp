#include "io/mapped_file.h"

#include "io/input_file.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt::io {

std::shared_ptr<const MappedFile> MappedFile::open(const std::string& path)
{
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
    f->m_parent = std::move(parent);
    return f;
}

void MappedFile::release(const uint8_t* begin, uint64_t size) const
{
    if (m_parent) return m_parent->release(begin, size);
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
