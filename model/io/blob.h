// Bytes that stay valid as long as the Blob lives: either a span into a memory map (zero-copy)
// or a buffer we had to produce (an inflated zip entry). The owner keeps whichever alive.
#pragma once

#include "io/bytes.h"

#include <memory>

namespace ckpt::io {

struct Blob
{
    ByteSpan bytes;
    std::shared_ptr<const void> owner;

    uint64_t size() const { return bytes.size(); }
};

} // namespace ckpt::io
