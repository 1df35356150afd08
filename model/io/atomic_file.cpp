#include "io/atomic_file.h"

#include "io/output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

namespace ckpt::io {

AtomicFile::AtomicFile(std::string finalPath, std::string shownPath)
    : m_final(std::move(finalPath)), m_shown(shownPath.empty() ? m_final : std::move(shownPath))
{
    const auto slash = m_final.rfind('/');
    const std::string dir = slash == std::string::npos ? "" : m_final.substr(0, slash + 1);
    const std::string base = slash == std::string::npos ? m_final : m_final.substr(slash + 1);
    m_temp = dir + partialName(base);
    // Registered before it exists, so an interrupt at any moment finds it.
    detail::trackTemporary(m_temp, true);
    // O_EXCL: a temporary name is ours alone; O_NOFOLLOW: never write through a planted link.
    m_fd = ::open(m_temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (m_fd < 0) {
        const int e = errno;
        detail::trackTemporary(m_temp, false);
        throw Error(std::string("cannot create output: ") + std::strerror(e), m_shown);
    }
}

AtomicFile::~AtomicFile()
{
    if (m_fd >= 0) ::close(m_fd);
    if (!m_committed) {
        ::unlink(m_temp.c_str());
        detail::trackTemporary(m_temp, false);
    }
}

void AtomicFile::write(const void* data, uint64_t size)
{
    const auto* p = static_cast<const uint8_t*>(data);
    while (size) {
        const ssize_t n = ::write(m_fd, p, std::min<uint64_t>(size, 1u << 30));
        if (n < 0) {
            if (errno == EINTR) continue;
            throw Error(std::string("write failed: ") + std::strerror(errno), m_shown);
        }
        p += n;
        size -= uint64_t(n);
        m_written += uint64_t(n);
    }
}

void AtomicFile::finish()
{
    if (m_fd < 0) return;
    ::sync_file_range(m_fd, 0, 0, SYNC_FILE_RANGE_WRITE); // a hint: sync() checks the outcome
    if (::close(m_fd) != 0) {
        m_fd = -1;
        throw Error(std::string("close failed: ") + std::strerror(errno), m_shown);
    }
    m_fd = -1;
}

void AtomicFile::sync()
{
    finish();
    if (m_synced) return;
    // fsync of any descriptor of the file writes its dirty pages and reports their errors.
    const int fd = ::open(m_temp.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) throw Error(std::string("cannot reopen output to sync it: ") + std::strerror(errno), m_shown);
    const int rc = ::fsync(fd);
    const int e = errno;
    ::close(fd);
    if (rc != 0) throw Error(std::string("fsync failed: ") + std::strerror(e), m_shown);
    m_synced = true;
}

void AtomicFile::commit()
{
    sync();
    if (std::rename(m_temp.c_str(), m_final.c_str()) != 0)
        throw Error(std::string("cannot rename output into place: ") + std::strerror(errno), m_shown);
    m_committed = true;
    detail::trackTemporary(m_temp, false);
}

} // namespace ckpt::io
