// The one way an input is opened: read-only, and only when it is a regular file. A FIFO, socket
// or device is refused by its type before anything is opened, so a read can never block on it,
// and the opened descriptor is checked to be the file that was inspected (no swap in between).
#pragma once

#include "io/error.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace ckpt::io {

// What a path is, in words ("a directory", "a FIFO", "a UNIX socket", ...), following symlinks;
// empty for a regular file. Throws Error naming the path when it cannot be examined.
std::string nonRegularKind(const std::string& path);

// Throws Error naming the path unless it is a regular file (following symlinks).
void requireRegularFile(const std::string& path);
// Why `path` cannot be opened (errno `err`), naming it; a URL typed wrong ("s3:/b/k") is said to
// be one, with the URL meant, instead of "no such file".
Error cannotOpen(const std::string& path, int err);

// Opens a regular file read-only (O_NONBLOCK, O_NOCTTY, O_CLOEXEC); throws Error naming the path
// otherwise. The caller owns the returned descriptor.
int openRegularFile(const std::string& path);

// A small text file (a DeepSpeed `latest`, an index JSON) read whole, refusing one larger than
// maxBytes rather than reading an unbounded amount.
std::string readSmallFile(const std::string& path, uint64_t maxBytes);

// The first bytes of a regular file (fewer if it is shorter), for sniffing what it is; empty
// when it cannot be read or is not a regular file. Never throws: recognizers only ask "may it be".
std::string readHead(const std::string& path, size_t maxBytes) noexcept;

} // namespace ckpt::io
