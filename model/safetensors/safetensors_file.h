// safetensors: a reader that validates exactly as the reference implementation does (header
// cap, no gaps, overlaps or trailing bytes, sizes match shapes) and a streaming writer.
#pragma once

#include "io/mapped_file.h"
#include "torch/dtype.h"
#include "torch/out_tensor.h"

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ckpt::safetensors {

constexpr uint64_t kMaxHeaderSize = 100'000'000;

struct TensorInfo
{
    std::string name;
    std::string code; // "F32"
    torch::DType dtype = torch::DType::Float32;
    std::vector<int64_t> shape;
    uint64_t begin = 0, end = 0; // relative to the data section
    uint64_t numel() const;
};

class SafetensorsFile
{
public:
    // The JSON object after the length is the signature; the length itself may lie, and the
    // reader then says how.
    static bool looksLikeSafetensors(io::ByteSpan head);
    static std::unique_ptr<SafetensorsFile> open(const std::string& path);
    static std::unique_ptr<SafetensorsFile> open(std::shared_ptr<const io::MappedFile> file);
    static uint64_t parses() { return s_parses.load(); } // as TorchFile::parses

    const std::string& path() const { return m_file->path(); }
    const std::vector<TensorInfo>& tensors() const { return m_tensors; } // in header order
    const std::map<std::string, std::string>& metadata() const { return m_metadata; }
    uint64_t dataOffset() const { return m_dataOffset; }
    // `fetch` false leaves a remote file's bytes for the caller to ensure (see ZipReader::read).
    io::ByteSpan bytes(const TensorInfo& t, bool fetch = true) const
    {
        if (fetch) m_file->ensure(m_dataOffset + t.begin, t.end - t.begin);
        return m_file->bytes().subspan(m_dataOffset + t.begin, t.end - t.begin);
    }
    std::shared_ptr<const io::MappedFile> file() const { return m_file; }

private:
    std::shared_ptr<const io::MappedFile> m_file;
    std::vector<TensorInfo> m_tensors;
    std::map<std::string, std::string> m_metadata;
    uint64_t m_dataOffset = 0;
    static inline std::atomic<uint64_t> s_parses{0};
};

using torch::OutTensor;

// Orders tensors as the reference writer does (dtype alignment descending, then name) and
// returns the padded header. `metadata` is written first as "__metadata__".
std::string buildHeader(std::vector<OutTensor>& tensors, const std::map<std::string, std::string>& metadata);

} // namespace ckpt::safetensors
