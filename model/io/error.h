// The one error type that crosses layer boundaries: it names the file, where in it (when known),
// and what was wrong. The CLI and GUI turn it into a single line for the user.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace ckpt {

class Error : public std::runtime_error
{
public:
    static constexpr uint64_t kNoOffset = ~uint64_t(0);

    explicit Error(std::string message, std::string file = {}, uint64_t offset = kNoOffset)
        : std::runtime_error(compose(message, file, offset)), m_message(std::move(message)),
          m_file(std::move(file)), m_offset(offset)
    {
    }

    const std::string& message() const { return m_message; }
    const std::string& file() const { return m_file; }
    uint64_t offset() const { return m_offset; }

    // Adds the file name to an error thrown by a layer that only saw bytes.
    Error withFile(const std::string& file) const
    {
        return m_file.empty() ? Error(m_message, file, m_offset) : *this;
    }

private:
    static std::string compose(const std::string& message, const std::string& file, uint64_t offset)
    {
        std::string s;
        if (!file.empty()) s += file + ": ";
        s += message;
        if (offset != kNoOffset) s += " (at byte " + std::to_string(offset) + ")";
        return s;
    }

    std::string m_message;
    std::string m_file;
    uint64_t m_offset;
};

// Thrown when a cancel token fires; callers remove partial output and report "cancelled".
class Cancelled : public std::runtime_error
{
public:
    Cancelled() : std::runtime_error("cancelled") {}
};

} // namespace ckpt
