// The output side shared by every operation that writes tensors (consolidate, export, slim, the
// Universal conversion): one writer that streams each file under its temporary name, hashing the
// bytes as they go, then re-reads what landed on disk and compares before the caller commits
// (renames) anything.
#pragma once

#include "io/atomic_file.h"
#include "io/output.h"
#include "io/verified_writer.h"
#include "ops/job.h"
#include "ops/tensor_digest.h"
#include "torch/out_tensor.h"
#include "torch/torch_writer.h"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace ckpt::torch {
class TorchFile;
}

namespace ckpt::ops {

// Writes the files of one output through its transaction, each proven before it may take its
// name: its bytes hashed (xxh3) while written, the finished file re-read from its temporary name
// in bounded memory and compared, tensor by tensor or storage by storage. The re-reading runs on
// a thread of its own while the next file is written (io::Verifier), so it costs the writer no
// time; verified() waits for every check and throws the first failure, as an Error naming the
// file. A `rel` of "" is the transaction's one output file (OutputTransaction::Shape::File).
class VerifiedWriter
{
public:
    // n more bytes of file `rel` written (the caller's progress).
    using OnBytes = std::function<void(const std::string& rel, uint64_t n)>;
    // More checks of a torch.save file once its storages are proven: `written` re-opened from the
    // temporary name, `finalName` the name an Error gives.
    using Check = std::function<void(const torch::TorchFile& written, const std::string& finalName)>;

    VerifiedWriter(io::OutputTransaction& tx, const CancelToken& cancel, OnBytes onBytes = {});

    // Tensors as a safetensors file, sorted into save_file's order first (`tensors` is reordered).
    const io::AtomicFile& safetensors(const std::string& rel, std::vector<torch::OutTensor>& tensors,
                                      const std::map<std::string, std::string>& metadata);
    // Tensors, and aliases that share their storage, as a torch.save zip (archive folder "archive").
    const io::AtomicFile& torchZip(const std::string& rel, const std::vector<torch::OutTensor>& tensors,
                                   const std::vector<torch::Alias>& aliases);
    // A pickle and one record per storage (named by the pickle's keys) as a torch.save zip, its
    // archive folder named after the file as torch.save names it: the pickle must parse and
    // every storage hold the bytes written; then `check`.
    const io::AtomicFile& torchRecords(const std::string& rel, const std::string& pickle,
                                       const std::vector<torch::OutTensor>& storages, Check check = {});
    // A byte-for-byte copy of `from`.
    const io::AtomicFile& copy(const std::string& from, const std::string& rel);

    // Every file written so far has been re-read and found as written.
    void verified() { m_verifier.finish(); }
    size_t files() const { return m_files; }
    uint64_t written() const { return m_written; }
    // Each tensor file's tensors with their digests as streamed out, by `rel` (an export's
    // manifest: what it read, tensor by tensor).
    const std::map<std::string, std::vector<TensorDigest>>& digests() const { return m_digests; }

private:
    io::AtomicFile& start(const std::string& rel);
    void done(const io::AtomicFile& out);
    std::function<void(uint64_t)> counter(const std::string& rel) const;
    void remember(const std::string& rel, const std::vector<torch::OutTensor>& tensors,
                  const std::vector<uint64_t>& hashes, const std::vector<torch::Alias>& aliases);

    io::OutputTransaction& m_tx;
    const CancelToken& m_cancel;
    OnBytes m_onBytes;
    size_t m_files = 0;
    uint64_t m_written = 0;
    std::map<std::string, std::vector<TensorDigest>> m_digests;
    io::Verifier m_verifier; // last: stopped before the rest goes
};

} // namespace ckpt::ops
