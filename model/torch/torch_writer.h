// Writes a state dict as a torch.save zip file that torch.load(weights_only=True) accepts:
// a plain dict of tensors, each owning compact storage (no bloat), aliases sharing storage.
// Record layout follows PyTorch's writer (STORED, 64-byte aligned data, data descriptors,
// ZIP64 end records); only the globals on the weights_only allowlist are used.
#pragma once

#include "io/atomic_file.h"
#include "io/job.h"
#include "torch/out_tensor.h"

#include <string>
#include <utility>
#include <vector>

namespace ckpt::torch {

struct Alias
{
    std::string name;   // key written
    std::string target; // tensor whose storage it shares
};

// Streams `tensors` (and aliases, in that order after them) into `out`. Returns the xxh3 of each
// tensor's bytes, for verification after re-reading.
std::vector<uint64_t> writeTorchZip(io::AtomicFile& out, const std::vector<OutTensor>& tensors,
                                    const std::vector<Alias>& aliases, const std::string& archiveName,
                                    const std::function<void(uint64_t)>& onBytes,
                                    const io::CancelToken& cancel);

// The records of a torch.save zip around a pickle written elsewhere: `pickle` as data.pkl, then
// one record data/<name> per storage (OutTensor::name is the storage key, nbytes its size),
// byteorder and version. Returns the xxh3 of each storage's bytes.
std::vector<uint64_t> writeTorchZipRecords(io::AtomicFile& out, const std::string& archiveName,
                                           const std::string& pickle, const std::vector<OutTensor>& storages,
                                           const std::function<void(uint64_t)>& onBytes,
                                           const io::CancelToken& cancel);

} // namespace ckpt::torch
