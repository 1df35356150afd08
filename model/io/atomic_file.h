// An output file written under a temporary name beside its destination and renamed into place
// only after the caller has verified it. If it is destroyed uncommitted (error, cancel), the
// temporary file is removed, so partial output never appears under the final name. Only an
// OutputTransaction creates one: that is how every output passes the input/output check.
#pragma once

#include "io/error.h"

#include <cstdint>
#include <string>

namespace ckpt::io {

class AtomicFile
{
public:
    ~AtomicFile();
    AtomicFile(const AtomicFile&) = delete;
    AtomicFile& operator=(const AtomicFile&) = delete;

    void write(const void* data, uint64_t size);
    // Closes, with the kernel's writeback started; the file can then be re-read at tempPath()
    // for verification. It is made durable by sync() (commit() calls it when not done yet), so
    // that a job's files reach the disk together instead of one fsync stalling each file.
    void finish();
    // fsync of the finished file.
    void sync();

    const std::string& tempPath() const { return m_temp; }
    const std::string& finalPath() const { return m_final; }
    uint64_t written() const { return m_written; }

private:
    friend class OutputTransaction;
    // `shownPath`: the name errors give, when the file is written elsewhere first (a staging folder).
    explicit AtomicFile(std::string finalPath, std::string shownPath = {});
    // Renames over the final path.
    void commit();

    std::string m_final;
    std::string m_shown;
    std::string m_temp;
    int m_fd = -1;
    uint64_t m_written = 0;
    bool m_committed = false;
    bool m_synced = false;
};

} // namespace ckpt::io
