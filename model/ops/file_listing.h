// One file as `ckpt inspect` lists it, typed: its object tree (every entry, in walk order), every
// tensor with where its bytes lie (dtype, shape, stride, storage and offset), its storages, the
// globals its pickle names and where its bytes go. Built from the parsed file alone: no tensor
// bytes are read, except the one value of a 0-d tensor. The window builds its tree from this; the
// `--json` document is toJson() of it (ops/inspect.h).
#pragma once

#include "layout/file_set.h"
#include "ops/bloat.h"
#include "pickle/safety.h"
#include "torch/torch_file.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::ops {

struct ListedTensor
{
    torch::Tensor tensor;       // as the file describes it (path, dtype, shape, stride, offset, ...)
    std::string storage;        // its storage's key (a zip record, a safetensors name); empty: none
    uint64_t storageBytes = 0;  // that storage's size
    bool storageShared = false; // another tensor views the same storage
    std::string aliasOf;        // the path of the tensor that is the same Python object
    std::string value;          // a 0-d tensor's value, as Python prints it
};

struct ListedGlobal
{
    std::string module, name;
    pickle::Safety safety = pickle::Safety::Opaque;
    int count = 0;
};

struct FileListing
{
    std::string file;
    std::string format; // "torch-zip", "torch-legacy", "safetensors"
    std::optional<int> protocol;
    uint64_t fileSize = 0;
    std::map<std::string, std::string> metadata; // safetensors' __metadata__
    std::vector<ListedTensor> tensors;
    std::vector<torch::Storage> storages;
    std::vector<ListedGlobal> globals;
    std::vector<torch::Entry> entries; // the object tree, depth first; tensors by index
    std::optional<FileBloat> bloat;    // torch files
    std::vector<std::string> warnings;
};

// A file an opened checkpoint already parsed (no second parse).
FileListing listFile(const layout::TensorFile& file);
// A file that is a sequence of items, each a file of its own (layout::RankFile::items: a DCP
// .distcp, one torch.save per tensor chunk or value), as one listing: every item's tensors,
// storages and entries under the item's label ("model/fc.weight@0,4/..."), parsed through
// `files` (already parsed by the opening).
FileListing listItems(const layout::RankFile& file, const layout::FileSet& files);
// Opens `path` (torch zip, legacy torch or safetensors, sniffed) and lists it.
FileListing listFile(const std::string& path);

} // namespace ckpt::ops
