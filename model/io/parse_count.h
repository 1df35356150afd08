// How many times this process parsed each file, by path: tests prove "each input file is parsed
// once per job" without counting the re-reads that verify outputs. Parsing is per file, never per
// tensor, so one lock here costs nothing measurable.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>

namespace ckpt::io {

class ParseCount
{
public:
    static void add(const std::string& path)
    {
        const std::lock_guard<std::mutex> lock(s_lock);
        ++s_counts[path];
    }
    // Parses of files whose path starts with `prefix` (a folder and a trailing '/').
    static uint64_t under(const std::string& prefix)
    {
        const std::lock_guard<std::mutex> lock(s_lock);
        uint64_t n = 0;
        for (auto it = s_counts.lower_bound(prefix); it != s_counts.end() && it->first.starts_with(prefix);
             ++it)
            n += it->second;
        return n;
    }

private:
    static inline std::mutex s_lock;
    static inline std::map<std::string, uint64_t> s_counts;
};

} // namespace ckpt::io
