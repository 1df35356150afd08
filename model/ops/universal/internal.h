// What the Universal conversion's parts share (the files beside this one): the rank files it
// reads, universal_checkpoint_info's merge rules, the pickle trees it builds, the pieces it reads
// and merges, and the writer that writes and verifies every file. Not for anything outside
// model/ops/universal*: the operation's interface is ops/universal.h.
#pragma once

#include "io/location.h"

#include "cast.h"
#include "compute_backend.h"
#include "io/mapped_file.h"
#include "io/output.h"
#include "layout/deepspeed.h"
#include "layout/file_set.h"
#include "ops/sharded.h"
#include "ops/tensor_source.h"
#include "ops/writers.h"
#include "pickle/writer.h"
#include "torch/torch_file.h"
#include "torch/torch_writer.h"

#include <algorithm>
#include <cstring>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <optional>
#include <regex>
#include <set>
#include <unordered_map>
#include <unordered_set>

namespace ckpt::ops::uni {

namespace fs = std::filesystem;
using pickle::Kind;
using pickle::Value;
using torch::asInt;
using torch::asString;
using torch::dictGet;

// The rank files the conversion reads, asked of the opened checkpoint's FileSet (parsed once,
// when the tag was opened) and held for the whole job: the pieces point into them.
class RankFiles
{
public:
    explicit RankFiles(const layout::FileSet& set) : m_set(set) {}
    const torch::TorchFile& get(const std::string& path)
    {
        auto& f = m_files[path];
        if (!f) {
            f = m_set.get(path);
            if (!f->torch())
                throw Error("not a torch.save file (DeepSpeed writes its rank files with torch.save)", path);
        }
        return *f->torch();
    }

private:
    const layout::FileSet& m_set;
    std::map<std::string, std::shared_ptr<const layout::TensorFile>> m_files;
};

// rules.cpp: what ds_to_universal would take, and universal_checkpoint_info.
// Refusals that need only file names and the first files, so that a missing rank file is named
// as the file that is missing (not just "rank 3"). Returns the tensor-parallel degree: the
// highest mp rank of any rank file, or more where the first model file says so
// (checkpoint_parallel_dimensions' tp_degree, mp_world_size); every (tp, dp) file must exist.
int preflight(const std::vector<layout::RankFile>& files, const std::string& tagDir, RankFiles& parsed);

// ---------------------------------------------------------------------------------------------
// Pickle trees for the files we write, built from nodes as torch.save would pickle them.

class Tree
{
public:
    Value* node(Kind k) { return m_arena.make(k); }
    Value* str(const std::string& s)
    {
        Value* v = node(Kind::Str);
        v->text = s;
        return v;
    }
    Value* integer(int64_t i)
    {
        Value* v = node(Kind::Int);
        v->integer = i;
        return v;
    }
    Value* boolean(bool b)
    {
        Value* v = node(Kind::Bool);
        v->boolean = b;
        return v;
    }
    Value* global(const std::string& module, const std::string& name)
    {
        Value* v = node(Kind::Global);
        v->text = module;
        v->name = name;
        return v;
    }
    Value* tuple(std::vector<Value*> items)
    {
        Value* v = node(Kind::Tuple);
        v->items = std::move(items);
        return v;
    }
    Value* ints(const std::vector<int64_t>& xs)
    {
        std::vector<Value*> items;
        for (int64_t x : xs)
            items.push_back(integer(x));
        return tuple(std::move(items));
    }
    Value* call(Value* callable, Value* args)
    {
        Value* v = node(Kind::Call);
        v->callable = callable;
        v->args = args;
        return v;
    }
    // torch._utils._rebuild_tensor_v2 of a whole, contiguous storage `key` on the CPU.
    Value* tensor(torch::DType dt, const std::vector<int64_t>& shape, const std::string& key)
    {
        const auto& inf = torch::info(dt);
        if (inf.storageClass.empty())
            throw Error("cannot write " + std::string(inf.name) + " tensors to a torch.save file");
        std::vector<int64_t> stride(shape.size(), 1);
        for (size_t i = shape.size(); i-- > 1;)
            stride[i - 1] = stride[i] * std::max<int64_t>(shape[i], 1);
        Value* pid = node(Kind::PersistentRef);
        pid->args = tuple({str("storage"), global("torch", std::string(inf.storageClass)), str(key),
                           str("cpu"), integer(int64_t(gpu::numelOf(shape)))});
        return call(global("torch._utils", "_rebuild_tensor_v2"),
                    tuple({pid, integer(0), ints(shape), ints(stride), boolean(false),
                           call(global("collections", "OrderedDict"), tuple({}))}));
    }

private:
    pickle::Arena m_arena;
};

// ---------------------------------------------------------------------------------------------
// Reading element ranges of the rank files' flat tensors.

// `bytes` bytes of storage `storage` of `file`, from byte `offset`.
struct Piece
{
    const torch::TorchFile* file = nullptr;
    int storage = -1;
    uint64_t offset = 0, bytes = 0;
};

// tp_merge.cpp: element ranges of the rank files' flat tensors, and their tensor-parallel merge.
Piece pieceOf(RankFiles& files, const layout::Source& s, torch::DType& dtype);
// The bytes of one output tensor: its pieces concatenated.
torch::OutTensor concatenation(const std::string& key, torch::DType dtype, std::vector<Piece> pieces,
                               bool positiveZeros);
// A whole tensor of a file as float32, as `tensor.float()` gives it.
torch::OutTensor asFloat32(const std::string& key, const torch::TorchFile& f, const torch::Tensor& t);

// One TP rank's slice of one state: its pieces, read at any byte offset.
struct FlatSlice
{
    std::vector<Piece> pieces;
    std::vector<uint64_t> starts; // byte offset of each piece in the slice
    uint64_t bytes = 0;

    void add(const Piece& p)
    {
        starts.push_back(bytes);
        pieces.push_back(p);
        bytes += p.bytes;
    }
    void read(uint64_t offset, uint64_t count, uint8_t* dst) const
    {
        size_t i = size_t(std::upper_bound(starts.begin(), starts.end(), offset) - starts.begin()) - 1;
        while (count) {
            const Piece& p = pieces.at(i);
            const uint64_t in = offset - starts[i], n = std::min(count, p.bytes - in);
            const io::Blob blob = p.file->storageBytes(p.storage);
            const uint8_t* src = blob.bytes.data() + p.offset + in;
            std::memcpy(dst, src, n);
            p.file->release(src, n);
            dst += n, offset += n, count -= n, ++i;
        }
    }
};

// The keys merge_tp_slices writes before 'param', as nodes of `tree` (sub_param_shape's from the
// save's universal_checkpoint_info in `m0`, written back as saved).
std::vector<std::pair<std::string, Value*>> mergeKeys(const layout::UniversalMergeKeys& keys, Tree& tree,
                                                      const torch::TorchFile& m0);
// The merged tensor of one state: `nbytes` bytes (a prefix, after a vocabulary cut) of the
// gather the plan describes, read from the slices as the writer asks for them.
torch::OutTensor merged(const std::string& name, const std::string& state, torch::DType dtype,
                        std::shared_ptr<const std::vector<FlatSlice>> slices, const layout::TensorParallel& m,
                        uint64_t nbytes, const std::string& file);

// ---------------------------------------------------------------------------------------------
// Writing: every file under its temporary name, re-read and checked before it counts.

class Writer
{
public:
    Writer(io::OutputTransaction& tx, const ProgressSink& progress, const CancelToken& cancel, uint64_t total)
        : m_progress(progress), m_total(total),
          m_out(tx, cancel, [this](const std::string& rel, uint64_t n) { advance(rel, n); })
    {
    }

    // A torch.save zip: `pickle` and one record per storage, then re-read: the pickle parses and
    // every storage holds the bytes written.
    void torchFile(const std::string& rel, const std::string& pickle,
                   const std::vector<torch::OutTensor>& storages)
    {
        m_out.torchRecords(rel, pickle, storages);
    }

    // A byte-for-byte copy (shutil.copy2 in ds_to_universal), hashed on the way and re-read.
    void copy(const std::string& from, const std::string& rel) { m_out.copy(from, rel); }

    // Every file written has been read back and found as written.
    void verified() { m_out.verified(); }

    struct Totals
    {
        size_t files = 0;
        uint64_t bytes = 0, planned = 0;
    };

    size_t files() const { return m_out.files(); }
    uint64_t written() const { return m_out.written(); }

private:
    void advance(const std::string& rel, uint64_t n)
    {
        m_done += n;
        if (m_progress)
            m_progress(
                {int(m_total ? std::min<uint64_t>(m_done * 990 / m_total, 990) : 990), rel, m_done, m_total});
    }

    const ProgressSink& m_progress;
    uint64_t m_total = 0, m_done = 0;
    VerifiedWriter m_out; // last: its checks stop before the rest goes
};

// `root` (a node of `src`'s pickle, or a new node over some of them) as torch.save writes a
// loaded object: the same pickle, every storage it reaches copied whole.
void writeTree(Writer& w, const std::string& rel, const Value* root, const torch::TorchFile& src);
// A file whose content is one new tensor (stage 3) or {keys..., 'param': tensor} (stage <= 2).
void writeState(Writer& w, const std::string& rel, const std::vector<std::pair<std::string, Value*>>& keys,
                bool asDict, torch::OutTensor data, const std::vector<int64_t>& shape);

} // namespace ckpt::ops::uni
