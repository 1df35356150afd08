// A read-only view of bytes plus bounds-checked little-endian readers. Every parser in model/
// reads through these so that a lying length field becomes an Error, never an out-of-range read.
#pragma once

#include "io/error.h"

#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>

namespace ckpt::io {

using ByteSpan = std::span<const uint8_t>;

inline std::string_view asStringView(ByteSpan s)
{
    return {reinterpret_cast<const char*>(s.data()), s.size()};
}

// Returns true if [offset, offset+length) lies within a buffer of `size` bytes, without overflow.
inline bool rangeFits(uint64_t offset, uint64_t length, uint64_t size)
{
    return offset <= size && length <= size - offset;
}

template <typename T> inline T loadLE(const uint8_t* p)
{
    T v;
    std::memcpy(&v, p, sizeof(T)); // little-endian hosts only; see DESIGN.md "Portable code"
    return v;
}

// The longest text line Cursor::line reads by default (pickle's text opcodes: GLOBAL, INT, ...).
inline constexpr uint64_t kMaxTextLine = 1 << 20;

// Sequential reader over a span; all reads are checked against the end.
class Cursor
{
public:
    Cursor(ByteSpan data, std::string what) : m_data(data), m_what(std::move(what)) {}

    uint64_t pos() const { return m_pos; }
    uint64_t remaining() const { return m_data.size() - m_pos; }
    bool atEnd() const { return m_pos >= m_data.size(); }
    void seek(uint64_t p)
    {
        if (p > m_data.size()) fail("offset beyond end of data");
        m_pos = p;
    }

    template <typename T> T le()
    {
        need(sizeof(T));
        T v = loadLE<T>(m_data.data() + m_pos);
        m_pos += sizeof(T);
        return v;
    }
    uint8_t u8() { return le<uint8_t>(); }

    ByteSpan take(uint64_t n)
    {
        need(n);
        ByteSpan s = m_data.subspan(m_pos, n);
        m_pos += n;
        return s;
    }

    // Reads up to and excluding '\n' (consumed); fails if no newline within `limit` bytes.
    std::string_view line(uint64_t limit = kMaxTextLine)
    {
        const uint64_t start = m_pos;
        const uint64_t end = std::min<uint64_t>(m_data.size(), m_pos + limit);
        for (uint64_t i = start; i < end; ++i) {
            if (m_data[i] == '\n') {
                m_pos = i + 1;
                return asStringView(m_data.subspan(start, i - start));
            }
        }
        fail("unterminated text argument");
    }

    [[noreturn]] void fail(const std::string& why) const { throw Error(m_what + ": " + why, {}, m_pos); }

    void need(uint64_t n) const
    {
        if (n > remaining())
            throw Error(m_what + ": truncated (needs " + std::to_string(n) + " more bytes, " +
                            std::to_string(remaining()) + " left)",
                        {}, m_pos);
    }

private:
    ByteSpan m_data;
    std::string m_what;
    uint64_t m_pos = 0;
};

} // namespace ckpt::io
