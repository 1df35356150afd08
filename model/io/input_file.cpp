#include "io/input_file.h"

#include "io/location.h"

#include "io/mapped_file.h"
#include "io/remote/url.h"

#include "io/error.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ckpt::io {

namespace {

std::string kindOf(mode_t mode)
{
    if (S_ISREG(mode)) return {};
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a UNIX socket";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    return "not a regular file";
}

[[noreturn]] void refuse(const std::string& kind, const std::string& path)
{
    throw Error("is " + kind + ", not a regular file; refusing to read it", path);
}

} // namespace

Error cannotOpen(const std::string& path, int err)
{
    if (const std::string meant = meantUrl(path); !meant.empty() && err == ENOENT)
        return Error("not a URL as written (and no local file of that name): did you mean " + meant + " ?",
                     path);
    return Error(std::string("cannot open: ") + std::strerror(err), path);
}

std::string nonRegularKind(const std::string& path)
{
    struct stat st
    {
    };
    if (::stat(path.c_str(), &st) != 0) throw cannotOpen(path, errno);
    return kindOf(st.st_mode);
}

void requireRegularFile(const std::string& path)
{
    if (const std::string kind = nonRegularKind(path); !kind.empty()) refuse(kind, path);
}

int openRegularFile(const std::string& path)
{
    // Refuse by type first: open() itself blocks on a FIFO without a writer, and opening some
    // devices has side effects.
    requireRegularFile(path);
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0) throw cannotOpen(path, errno);
    struct stat st
    {
    };
    if (::fstat(fd, &st) != 0) {
        const int e = errno;
        ::close(fd);
        throw Error(std::string("cannot stat: ") + std::strerror(e), path);
    }
    if (const std::string kind = kindOf(st.st_mode); !kind.empty()) { // replaced after the check
        ::close(fd);
        refuse(kind, path);
    }
    // Regular files ignore O_NONBLOCK for reads, but clear it so nothing depends on that.
    ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
    return fd;
}

namespace {

// A small file at a URL: through the remote map, so a later parse of it fetches nothing again.
std::string readRemote(const std::string& path, uint64_t maxBytes)
{
    const auto f = MappedFile::open(path);
    const uint64_t n = std::min<uint64_t>(f->size(), maxBytes);
    f->ensure(0, n);
    return std::string(reinterpret_cast<const char*>(f->bytes().data()), n);
}

} // namespace

std::string readSmallFile(const std::string& path, uint64_t maxBytes)
{
    if (remote::isRemote(path)) {
        std::string text = readRemote(path, maxBytes + 1);
        if (text.size() > maxBytes)
            throw Error("is larger than the " + std::to_string(maxBytes) + " bytes such a file can have",
                        path);
        return text;
    }
    const int fd = openRegularFile(path);
    std::string text;
    char buf[4096];
    for (;;) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw Error(std::string("cannot read: ") + std::strerror(e), path);
        }
        if (n == 0) break;
        if (text.size() + uint64_t(n) > maxBytes) {
            ::close(fd);
            throw Error("is larger than the " + std::to_string(maxBytes) + " bytes such a file can have",
                        path);
        }
        text.append(buf, size_t(n));
    }
    ::close(fd);
    return text;
}

} // namespace ckpt::io

namespace ckpt::io {

std::string readHead(const std::string& path, size_t maxBytes) noexcept
{
    try {
        if (remote::isRemote(path)) return readRemote(path, maxBytes);
        const int fd = openRegularFile(path);
        std::string head(maxBytes, '\0');
        size_t got = 0;
        while (got < maxBytes) {
            const ssize_t n = ::read(fd, head.data() + got, maxBytes - got);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) break;
            got += size_t(n);
        }
        ::close(fd);
        head.resize(got);
        return head;
    } catch (...) {
        return {};
    }
}

} // namespace ckpt::io
