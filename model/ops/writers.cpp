#include "ops/writers.h"

#include "compute_backend.h"
#include "io/tensor_hasher.h"
#include "safetensors/safetensors_file.h"
#include "torch/chunk_stream.h"
#include "torch/torch_file.h"

#include <filesystem>
#include <memory>
#include <unordered_map>

namespace ckpt::ops {

namespace {

[[noreturn]] void mismatch(const std::string& finalName, const std::string& what)
{
    throw Error("verification after writing failed: " + what, finalName);
}

// What a check needs of a written tensor: not its fill, which may hold the sources it read.
struct Written
{
    std::string name;
    std::vector<int64_t> shape;
    torch::DType dtype;
    uint64_t hash = 0;
};

std::vector<Written> writtenOf(const std::vector<torch::OutTensor>& tensors,
                               const std::vector<uint64_t>& hashes)
{
    std::vector<Written> out;
    for (size_t i = 0; i < tensors.size(); ++i)
        out.push_back({tensors[i].name, tensors[i].shape, tensors[i].dtype, hashes.at(i)});
    return out;
}

void checkSafetensors(const std::string& temp, const std::string& finalName,
                      const std::vector<Written>& tensors, const CancelToken& cancel)
{
    const auto check = safetensors::SafetensorsFile::open(temp);
    if (check->tensors().size() != tensors.size()) mismatch(finalName, "tensor count differs");
    std::map<std::string, const safetensors::TensorInfo*> byName;
    for (const auto& t : check->tensors())
        byName[t.name] = &t;
    for (const Written& w : tensors) {
        cancel.throwIfCancelled();
        auto it = byName.find(w.name);
        if (it == byName.end() || it->second->shape != w.shape || it->second->dtype != w.dtype)
            mismatch(finalName, "tensor '" + w.name + "' is missing or has another shape or dtype");
        const auto b = check->bytes(*it->second);
        if (io::hashReleasing(*check->file(), b.data(), b.size(), &cancel) != w.hash)
            mismatch(finalName, "tensor '" + w.name + "' differs");
    }
}

void checkTorchZip(const std::string& temp, const std::string& finalName, const std::vector<Written>& tensors,
                   const std::vector<torch::Alias>& aliases, const CancelToken& cancel)
{
    const auto check = torch::TorchFile::open(temp);
    if (check->tensors().size() != tensors.size() + aliases.size())
        mismatch(finalName, "tensor count differs");
    for (const Written& w : tensors) {
        cancel.throwIfCancelled();
        const torch::Tensor* t = check->tensor(w.name);
        if (!t || t->shape != w.shape || t->dtype != w.dtype)
            mismatch(finalName, "tensor '" + w.name + "' is missing or has another shape or dtype");
        const auto blob = check->storageBytes(t->storage);
        if (blob.size() != t->nbytes())
            mismatch(finalName, "tensor '" + w.name + "' does not own compact storage");
        if (io::hashReleasing(check->mapped(), blob.bytes.data(), blob.size(), &cancel) != w.hash)
            mismatch(finalName, "tensor '" + w.name + "' differs");
    }
    for (const auto& a : aliases) {
        const torch::Tensor* t = check->tensor(a.name);
        const torch::Tensor* target = check->tensor(a.target);
        if (!t || !target || t->storage != target->storage)
            mismatch(finalName, "alias '" + a.name + "' is not shared");
    }
}

// Every storage of the re-read file is one that was written, with its size and bytes.
void checkStorages(const torch::TorchFile& back, const std::string& finalName,
                   const std::unordered_map<std::string, std::pair<uint64_t, uint64_t>>& want,
                   const CancelToken& cancel)
{
    if (back.storages().size() != want.size())
        mismatch(finalName, std::to_string(back.storages().size()) + " storages read back, " +
                                std::to_string(want.size()) + " written");
    for (size_t i = 0; i < back.storages().size(); ++i) {
        cancel.throwIfCancelled();
        const torch::Storage& s = back.storages()[i];
        const auto it = want.find(s.key);
        const auto differs = [&] {
            const io::Blob blob = back.storageBytes(int(i));
            return io::hashReleasing(back, blob.bytes.data(), blob.bytes.size(), &cancel) !=
                   it->second.second;
        };
        if (it == want.end() || s.nbytes != it->second.first || differs())
            mismatch(finalName, "storage '" + s.key + "' does not hold what was written");
    }
}

} // namespace

VerifiedWriter::VerifiedWriter(io::OutputTransaction& tx, const CancelToken& cancel, OnBytes onBytes)
    : m_tx(tx), m_cancel(cancel), m_onBytes(std::move(onBytes))
{
}

io::AtomicFile& VerifiedWriter::start(const std::string& rel)
{
    m_cancel.throwIfCancelled();
    return m_tx.create(rel);
}

void VerifiedWriter::done(const io::AtomicFile& out)
{
    ++m_files;
    m_written += out.written();
}

void VerifiedWriter::remember(const std::string& rel, const std::vector<torch::OutTensor>& tensors,
                              const std::vector<uint64_t>& hashes, const std::vector<torch::Alias>& aliases)
{
    std::vector<TensorDigest>& d = m_digests[rel];
    std::map<std::string, uint64_t> byName;
    for (size_t i = 0; i < tensors.size(); ++i) {
        d.push_back({tensors[i].name, hashes.at(i)});
        byName[tensors[i].name] = hashes[i];
    }
    for (const torch::Alias& a : aliases) // the same bytes under a second name
        if (const auto it = byName.find(a.target); it != byName.end()) d.push_back({a.name, it->second});
}

std::function<void(uint64_t)> VerifiedWriter::counter(const std::string& rel) const
{
    return [this, rel](uint64_t n) {
        if (m_onBytes) m_onBytes(rel, n);
    };
}

const io::AtomicFile& VerifiedWriter::safetensors(const std::string& rel,
                                                  std::vector<torch::OutTensor>& tensors,
                                                  const std::map<std::string, std::string>& metadata)
{
    io::AtomicFile& out = start(rel);
    const std::string header = safetensors::buildHeader(tensors, metadata);
    const uint64_t n = header.size();
    out.write(&n, 8);
    out.write(header.data(), header.size());
    io::TensorHasher hasher(tensors.size());
    const auto onBytes = counter(rel);
    torch::streamChunks(
        tensors,
        [&](size_t, const uint8_t* data, uint64_t size) {
            out.write(data, size);
            if (onBytes) onBytes(size);
        },
        m_cancel, &hasher);
    out.finish();
    done(out);
    const std::vector<uint64_t> hashes = hasher.digests();
    remember(rel, tensors, hashes, {});
    m_verifier.add([&out, written = writtenOf(tensors, hashes), &cancel = m_cancel] {
        checkSafetensors(out.tempPath(), out.finalPath(), written, cancel);
    });
    return out;
}

const io::AtomicFile& VerifiedWriter::torchZip(const std::string& rel,
                                               const std::vector<torch::OutTensor>& tensors,
                                               const std::vector<torch::Alias>& aliases)
{
    io::AtomicFile& out = start(rel);
    const auto hashes = torch::writeTorchZip(out, tensors, aliases, "archive", counter(rel), m_cancel);
    out.finish();
    done(out);
    remember(rel, tensors, hashes, aliases);
    m_verifier.add([&out, written = writtenOf(tensors, hashes), aliases, &cancel = m_cancel] {
        checkTorchZip(out.tempPath(), out.finalPath(), written, aliases, cancel);
    });
    return out;
}

const io::AtomicFile& VerifiedWriter::torchRecords(const std::string& rel, const std::string& pickle,
                                                   const std::vector<torch::OutTensor>& storages, Check check)
{
    io::AtomicFile& out = start(rel);
    std::string archive = std::filesystem::path(out.finalPath()).stem().string();
    if (archive.empty()) archive = "archive";
    const std::vector<uint64_t> hashes =
        torch::writeTorchZipRecords(out, archive, pickle, storages, counter(rel), m_cancel);
    out.finish();
    done(out);
    std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> want; // key: size, xxh3
    for (size_t i = 0; i < storages.size(); ++i)
        want[storages[i].name] = {storages[i].nbytes, hashes[i]};
    m_verifier.add([&out, want = std::move(want), check = std::move(check), &cancel = m_cancel] {
        const auto back = torch::TorchFile::open(out.tempPath());
        checkStorages(*back, out.finalPath(), want, cancel);
        if (check) check(*back, out.finalPath());
    });
    return out;
}

const io::AtomicFile& VerifiedWriter::copy(const std::string& from, const std::string& rel)
{
    io::AtomicFile& out = start(rel);
    const io::Copied copied = io::copyHashed(from, out, counter(rel), m_cancel);
    done(out);
    m_verifier.add([&out, copied, &cancel = m_cancel] { io::verifyCopy(out, copied, cancel); });
    return out;
}

} // namespace ckpt::ops
