#include "ops/universal.h"

#include "io/location.h"

#include "cast.h"
#include "compute_backend.h"
#include "io/mapped_file.h"
#include "io/output.h"
#include "io/verified_writer.h"
#include "layout/deepspeed.h"
#include "layout/file_set.h"
#include "ops/sharded.h"
#include "ops/tensor_source.h"
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

namespace ckpt::ops {

namespace fs = std::filesystem;
using pickle::Kind;
using pickle::Value;
using torch::asInt;
using torch::asString;
using torch::dictGet;

namespace {

// ---------------------------------------------------------------------------------------------
// Whether ds_to_universal would take the tag at all.

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

// Refusals that need only file names and the first files, so that a missing rank file is named
// as the file that is missing (not just "rank 3"). Returns the tensor-parallel degree: the
// highest mp rank of any rank file, or more where the first model file says so
// (checkpoint_parallel_dimensions' tp_degree, mp_world_size); every (tp, dp) file must exist.
int preflight(const std::vector<layout::RankFile>& files, const std::string& tagDir, RankFiles& parsed)
{
    std::map<std::pair<int, int>, const layout::RankFile*> optims; // (tp, dp)
    std::string prefix;
    bool stage3Models = false;
    std::set<std::pair<int, int>> models; // (tp, dp); dp -1: mp_rank_XX_model_states.pt
    int tpDegree = 1;
    for (const auto& f : files) {
        if (f.role == layout::FileRole::Layer)
            throw Error("pipeline-parallel checkpoint (layer files such as " + f.name +
                            "): not converted to Universal yet",
                        tagDir);
        if (f.role == layout::FileRole::Expert || f.role == layout::FileRole::ExpertOptim)
            throw Error("MoE checkpoint (expert files such as " + f.name +
                            "): not converted to Universal yet",
                        tagDir);
        if (f.role == layout::FileRole::ModelStates || f.role == layout::FileRole::OptimStates)
            tpDegree = std::max(tpDegree, f.mpRank + 1);
        if (f.role == layout::FileRole::OptimStates) {
            optims[{f.mpRank, f.dpRank}] = &f;
            prefix = f.prefix;
        }
        if (f.role == layout::FileRole::ModelStates) {
            if (f.dpRank >= 0) stage3Models = true;
            models.insert({f.mpRank, f.dpRank});
        }
    }
    if (optims.empty())
        throw Error("no *_optim_states.pt files: a ZeRO-0 or non-ZeRO save has no optimizer partitions to "
                    "convert (ds_to_universal: \"can't find *_optim_states.pt files\")",
                    tagDir);
    const auto mp = [](int t) {
        std::string s = std::to_string(t);
        return "mp_rank_" + (s.size() < 2 ? "0" + s : s);
    };
    const auto optimName = [&](int t, int r) {
        return prefix + "zero_pp_rank_" + std::to_string(r) + "_" + mp(t) + "_optim_states.pt";
    };
    const auto modelName = [&](int t, int r) {
        return (r < 0 ? "" : "zero_pp_rank_" + std::to_string(r) + "_") + mp(t) + "_model_states.pt";
    };
    // Ranks 0..W-1 with W = partition_count of rank 0's file.
    const layout::RankFile* first = optims.count({0, 0}) ? optims.at({0, 0}) : nullptr;
    if (!first)
        throw Error("missing: the optimizer states of rank 0", (fs::path(tagDir) / optimName(0, 0)).string());
    const Value* pc = parsed.get(first->path).value("optimizer_state_dict/partition_count");
    int64_t world = 0;
    if (auto n = asInt(pc))
        world = *n;
    else if (auto l = torch::asInts(pc); l && !l->empty())
        world = *std::max_element(l->begin(), l->end());
    if (world <= 0 || world > (1 << 20))
        throw Error("no usable partition_count in the optimizer states", first->path);
    // The tensor-parallel degree the first model file declares (a missing mp_rank_01 file is named,
    // not taken for a save with one tensor-parallel rank).
    const std::string model0 = (fs::path(tagDir) / modelName(0, stage3Models ? 0 : -1)).string();
    if (models.count({0, stage3Models ? 0 : -1})) {
        const torch::TorchFile& m0 = parsed.get(model0);
        const auto declared = asInt(m0.value("checkpoint_parallel_dimensions/tp_degree"));
        const auto mpWorld = asInt(m0.value("mp_world_size"));
        for (const auto& d : {declared, mpWorld})
            if (d && *d > tpDegree && *d <= 4096) tpDegree = int(*d);
    }
    for (int t = 0; t < tpDegree; ++t) {
        const std::string of =
            tpDegree > 1 ? " of tensor-parallel rank " + std::to_string(t) + " of " + std::to_string(tpDegree)
                         : "";
        if (!stage3Models && !models.count({t, -1}))
            throw Error("missing: the model states" + of, (fs::path(tagDir) / modelName(t, -1)).string());
        for (int r = 0; r < world; ++r) {
            if (!optims.count({t, r}))
                throw Error("missing: the optimizer states of rank " + std::to_string(r) + " of " +
                                std::to_string(world) + of + " (the save did not complete on every rank)",
                            (fs::path(tagDir) / optimName(t, r)).string());
            if (stage3Models && !models.count({t, r}))
                throw Error("missing: the model states of rank " + std::to_string(r) + " of " +
                                std::to_string(world) + of,
                            (fs::path(tagDir) / modelName(t, r)).string());
        }
    }
    for (const auto& [k, f] : optims)
        if (k.second >= world)
            throw Error("optimizer states of rank " + std::to_string(k.second) + " but partition_count is " +
                            std::to_string(world) + " (a stale file from an older save?)",
                        f->path);
    return tpDegree;
}

// ---------------------------------------------------------------------------------------------
// universal_checkpoint_info: how ds_to_universal merges the tensor-parallel slices of a parameter
// (merge_tp_slices). With one tensor-parallel rank only the keys it writes and the vocabulary
// cut remain.

struct Pattern
{
    std::string text;
    std::regex re;
};

Pattern compiled(const std::string& s, const std::string& file)
{
    try {
        return {s, std::regex(s)};
    } catch (const std::regex_error& e) {
        throw Error("universal_checkpoint_info pattern '" + s +
                        "' is not a regular expression we can read (" + e.what() + ")",
                    file);
    }
}

// Python's re.match: anchored at the start only.
bool reMatch(const Pattern& p, const std::string& name)
{
    return std::regex_search(name, p.re, std::regex_constants::match_continuous);
}

// One entry of parameter_with_sub_params: SubparamShape(patterns, shape, partition_dim).
struct SubParams
{
    std::vector<Pattern> patterns;
    const Value* patternsNode = nullptr; // as the checkpoint holds them: written back unchanged
    const Value* shapeNode = nullptr;
    const Value* dimNode = nullptr;
    int64_t partitionDim = 0;
};

struct Rules
{
    std::vector<Pattern> replicated, average, row, vocab, twoSub;
    std::vector<SubParams> subParams;
    const Value* shardWidths = nullptr; // sub_param_shard_widths (version >= 0.4)
    double version = 0;
    std::optional<int64_t> originalVocab;
    std::set<std::string> unused;

    static std::vector<Pattern> list(const Value* info, const char* key, std::set<std::string>& all,
                                     const std::string& file)
    {
        std::vector<Pattern> out;
        const Value* l = dictGet(info, key);
        if (!l || l->kind == Kind::None) return out;
        if (l->kind != Kind::List && l->kind != Kind::Tuple)
            throw Error(std::string("universal_checkpoint_info '") + key + "' is not a list of patterns",
                        file);
        for (const Value* p : l->items) {
            const auto s = asString(p);
            if (!s)
                throw Error(std::string("universal_checkpoint_info '") + key + "' holds a non-string", file);
            out.push_back(compiled(*s, file));
            all.insert(*s);
        }
        return out;
    }

    // re.match of each pattern; more than one match is DeepSpeed's error too.
    const Pattern* match(const std::vector<Pattern>& ps, const std::string& name, const std::string& file)
    {
        const Pattern* hit = nullptr;
        for (const Pattern& p : ps)
            if (reMatch(p, name)) {
                if (hit)
                    throw Error("parameter '" + name + "' matches more than one pattern ('" + hit->text +
                                    "', '" + p.text + "') of universal_checkpoint_info",
                                file);
                hit = &p;
            }
        if (hit) unused.erase(hit->text);
        return hit;
    }

    // The first sub-parameter entry with a matching pattern (DeepSpeed takes the first).
    std::pair<const SubParams*, const Pattern*> matchSub(const std::string& name)
    {
        for (const SubParams& sp : subParams)
            for (const Pattern& p : sp.patterns)
                if (reMatch(p, name)) {
                    unused.erase(p.text);
                    return {&sp, &p};
                }
        return {nullptr, nullptr};
    }
};

Rules readRules(const Value* info, const std::string& file)
{
    Rules r;
    if (!info) return r;
    if (info->kind != Kind::Dict) throw Error("universal_checkpoint_info is not a dict", file);
    for (const char* refused : {"affine_map", "autotp_unsupported_parameter_patterns"}) {
        const Value* v = dictGet(info, refused);
        if (v && !(v->kind == Kind::Dict && v->entries.empty()) && v->kind != Kind::None)
            throw Error(std::string("universal_checkpoint_info has '") + refused +
                            "' (AutoTP metadata): not converted to Universal yet",
                        file);
    }
    std::set<std::string> all;
    r.replicated = Rules::list(info, "tp_replicated_parameter_patterns", all, file);
    r.average = Rules::list(info, "parameter_to_average_patterns", all, file);
    r.row = Rules::list(info, "parameter_with_row_parallelism_patterns", all, file);
    r.vocab = Rules::list(info, "vocabulary_parameter_patterns", all, file);
    r.twoSub = Rules::list(info, "parameter_with_2_sub_params_cat_dim_0", all, file);
    if (const Value* sp = dictGet(info, "parameter_with_sub_params"); sp && sp->kind != Kind::None) {
        if (sp->kind != Kind::List && sp->kind != Kind::Tuple)
            throw Error("universal_checkpoint_info 'parameter_with_sub_params' is not a list", file);
        for (const Value* e : sp->items) {
            // SubparamShape(**entry): exactly these three keys.
            if (!e || e->kind != Kind::Dict || e->entries.size() != 3 || !dictGet(e, "patterns") ||
                !dictGet(e, "shape") || !dictGet(e, "partition_dim"))
                throw Error(
                    "universal_checkpoint_info 'parameter_with_sub_params' holds an entry that is not "
                    "{patterns, shape, partition_dim}",
                    file);
            SubParams s;
            s.patternsNode = dictGet(e, "patterns");
            s.shapeNode = dictGet(e, "shape");
            s.dimNode = dictGet(e, "partition_dim");
            const auto dim = asInt(s.dimNode);
            if (!dim || *dim < 0 || (s.shapeNode->kind != Kind::Tuple && s.shapeNode->kind != Kind::List) ||
                size_t(*dim) >= s.shapeNode->items.size())
                throw Error("universal_checkpoint_info 'parameter_with_sub_params': partition_dim is not a "
                            "dimension of its shape",
                            file);
            s.partitionDim = *dim;
            if (s.patternsNode->kind != Kind::List && s.patternsNode->kind != Kind::Tuple)
                throw Error("universal_checkpoint_info 'parameter_with_sub_params' patterns are not a list",
                            file);
            for (const Value* p : s.patternsNode->items) {
                const auto text = asString(p);
                if (!text)
                    throw Error(
                        "universal_checkpoint_info 'parameter_with_sub_params' holds a non-string pattern",
                        file);
                s.patterns.push_back(compiled(*text, file));
                all.insert(*text);
            }
            r.subParams.push_back(std::move(s));
        }
    }
    r.shardWidths = dictGet(info, "sub_param_shard_widths");
    r.version = torch::asFloat(dictGet(info, "universal_checkpoint_version"))
                    .value_or(double(asInt(dictGet(info, "universal_checkpoint_version")).value_or(0)));
    r.originalVocab = asInt(dictGet(info, "original_vocab_size"));
    if (!r.vocab.empty() && !r.originalVocab)
        throw Error("universal_checkpoint_info has vocabulary patterns but no original_vocab_size", file);
    r.unused = all;
    return r;
}

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

Piece pieceOf(RankFiles& files, const layout::Source& s, torch::DType& dtype)
{
    const torch::TorchFile& f = files.get(s.file);
    const torch::Tensor* t = f.tensor(s.tensorPath.str());
    if (!t || t->storage < 0) throw Error("expected a tensor at '" + s.tensorPath + "'", s.file);
    if (t->shape.size() != 1 || (t->shape[0] > 1 && t->stride[0] != 1))
        throw Error("'" + s.tensorPath + "' is not a flat contiguous tensor", s.file);
    if (s.offset + s.count > t->numel())
        throw Error("'" + s.tensorPath + "' is shorter than the partition layout needs", s.file);
    dtype = t->dtype;
    const uint64_t es = torch::elementSize(t->dtype);
    Piece p{&f, t->storage, (uint64_t(t->storageOffset) + s.offset) * es, s.count * es};
    if (p.offset + p.bytes > f.storages()[size_t(t->storage)].nbytes)
        throw Error("'" + s.tensorPath + "' reaches past the end of its storage", s.file);
    return p;
}

// The bytes of one output tensor: its pieces concatenated.
torch::OutTensor concatenation(const std::string& key, torch::DType dtype, std::vector<Piece> pieces,
                               bool positiveZeros)
{
    torch::OutTensor o;
    o.name = key;
    o.dtype = dtype;
    for (const Piece& p : pieces)
        o.nbytes += p.bytes;
    o.shape = {int64_t(o.nbytes / torch::elementSize(dtype))};
    const uint32_t es = torch::elementSize(dtype);
    o.fill = [pieces = std::move(pieces), positiveZeros, es](uint64_t offset, uint64_t count, uint8_t* dst) {
        uint8_t* const start = dst;
        const uint64_t n0 = count;
        for (const Piece& p : pieces) {
            if (!count) break;
            if (offset >= p.bytes) {
                offset -= p.bytes;
                continue;
            }
            const uint64_t n = std::min(count, p.bytes - offset);
            const io::Blob blob = p.file->storageBytes(p.storage);
            const uint8_t* src = blob.bytes.data() + p.offset + offset;
            std::memcpy(dst, src, n);
            p.file->release(src, n); // read once, front to back: the pages may go
            dst += n;
            count -= n;
            offset = 0;
        }
        if (positiveZeros) // DeepSpeed averages TP slices as 0 + x + ...: -0.0 comes out as +0.0
            for (uint8_t* e = start; e + es <= start + n0; e += es) {
                bool negZero = (e[es - 1] == 0x80);
                for (uint32_t i = 0; i + 1 < es && negZero; ++i)
                    negZero = e[i] == 0;
                if (negZero) e[es - 1] = 0;
            }
    };
    return o;
}

// A whole tensor of a file as float32, as `tensor.float()` gives it.
torch::OutTensor asFloat32(const std::string& key, const torch::TorchFile& f, const torch::Tensor& t)
{
    const auto from = scalarOf(t.dtype);
    if (!from || t.storage < 0) throw Error("'" + t.path + "' cannot be converted to float32", f.path());
    torch::OutTensor o;
    o.name = key;
    o.dtype = torch::DType::Float32;
    o.shape = {int64_t(t.numel())};
    o.nbytes = t.numel() * 4;
    const torch::TorchFile* file = &f;
    o.fill = [file, t, from = *from](uint64_t offset, uint64_t count, uint8_t* dst) {
        const io::Blob blob = file->storageBytes(t.storage);
        const gpu::StridedView v{blob.bytes.data(), torch::elementSize(t.dtype), t.shape, t.stride,
                                 t.storageOffset};
        std::vector<uint8_t> staging(count / 4 * torch::elementSize(t.dtype));
        gpu::cpuBackend().gather(v, offset / 4, count / 4, staging.data());
        gpu::cpuBackend().cast(from, gpu::Scalar::F32, staging.data(), dst, count / 4);
    };
    return o;
}

// ---------------------------------------------------------------------------------------------
// Merging the tensor-parallel slices of one parameter as merge_tp_slices does, without holding
// them: each TP rank's slice is its data-parallel fragments (read in place), viewed with a shape;
// the merged tensor is a concatenation along one dimension of blocks of those slices.

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

// Along dimension `dim`: `width` entries of TP rank `tp`'s slice from entry `start`.
struct Block
{
    size_t tp = 0;
    int64_t start = 0, width = 0;
};

struct MergePlan
{
    enum class Mode { Gather, Replicated, Average } mode = Mode::Gather;
    std::vector<std::pair<std::string, Value*>> keys; // written before 'param'
    std::vector<int64_t> shape;                       // of the merged tensor (vocabulary cut applied)
    size_t dim = 0;
    std::vector<std::vector<int64_t>> views; // each TP slice viewed with this shape
    std::vector<Block> blocks;               // Gather: the merged tensor along `dim`, per outer index
};

int64_t product(const std::vector<int64_t>& s, size_t from, size_t to)
{
    int64_t n = 1;
    for (size_t i = from; i < to && i < s.size(); ++i)
        n *= s[i];
    return n;
}

// How merge_tp_slices merges one parameter, rule by rule: the first matching rule wins, as there.
class MergePlanner
{
public:
    MergePlanner(Rules& rules, Tree& tree, const std::string& name,
                 const std::vector<std::vector<int64_t>>& shapes, const std::string& file)
        : m_rules(rules), m_tree(tree), m_name(name), m_shapes(shapes), m_file(file), m_tp(shapes.size())
    {
        m_plan.views = shapes;
    }

    MergePlan plan()
    {
        const auto [sub, subPattern] = m_rules.matchSub(m_name); // matched first, as there
        if (m_rules.match(m_rules.replicated, m_name, m_file))
            whole(MergePlan::Mode::Replicated, "replicated");
        else if (m_rules.match(m_rules.average, m_name, m_file))
            whole(MergePlan::Mode::Average, "averaged");
        else if (m_rules.match(m_rules.twoSub, m_name, m_file))
            twoSubParams();
        else if (sub)
            subParams(*sub, *subPattern);
        else
            concatenated(m_rules.match(m_rules.row, m_name, m_file) ? 1 : 0);
        if (m_plan.mode != MergePlan::Mode::Gather) { // the slices whole, along a flat view
            for (auto& v : m_plan.views)
                v = {product(v, 0, v.size())};
            m_plan.dim = 0;
            m_plan.blocks = {{0, 0, m_plan.views[0][0]}};
        }
        if (m_rules.match(m_rules.vocab, m_name, m_file)) {
            if (m_plan.shape.size() < 2)
                throw refuse("a vocabulary parameter with fewer than two dimensions");
            m_plan.keys.push_back({"vocab_tensor", m_tree.boolean(true)});
            m_plan.shape[0] =
                std::min(m_plan.shape[0], *m_rules.originalVocab); // param[:original_vocab_size, :]
        }
        return std::move(m_plan);
    }

private:
    Error refuse(const std::string& why) const
    {
        return Error("parameter '" + m_name + "': " + why + " (ds_to_universal cannot merge it either)",
                     m_file);
    }

    // Replicated or averaged: every slice has the parameter's whole shape.
    void whole(MergePlan::Mode mode, const char* rule)
    {
        for (size_t t = 1; t < m_tp; ++t)
            if (m_shapes[t] != m_shapes[0])
                throw refuse(std::string("its tensor-parallel slices differ in shape but it is ") + rule);
        m_plan.mode = mode;
        m_plan.shape = m_shapes[0];
    }

    // torch.cat of the slices along `dim`: all other dimensions agree.
    void cat(size_t dim)
    {
        m_plan.dim = dim;
        m_plan.shape = m_shapes[0];
        if (m_tp == 1) return; // the slice as it is (also where torch.cat would refuse a 0-d one)
        const std::string cannot =
            "its tensor-parallel slices cannot be concatenated along dimension " + std::to_string(dim);
        for (size_t t = 0; t < m_tp; ++t) {
            if (m_shapes[t].size() != m_shapes[0].size() || m_shapes[t].size() <= dim) throw refuse(cannot);
            for (size_t d = 0; d < m_shapes[0].size(); ++d)
                if (d != dim && m_shapes[t][d] != m_shapes[0][d]) throw refuse(cannot);
        }
        m_plan.shape[dim] = 0;
        for (size_t t = 0; t < m_tp; ++t)
            m_plan.shape[dim] += m_shapes[t][dim];
    }

    // The default: each slice whole, one after another along dim 0 (1 for row parallelism).
    void concatenated(size_t dim)
    {
        cat(dim);
        for (size_t t = 0; t < m_tp && m_tp > 1; ++t)
            m_plan.blocks.push_back({t, 0, m_shapes[t][dim]});
        m_plan.keys = {{"cat_dim", m_tree.integer(int64_t(dim))}};
    }

    // torch.chunk(slice, 2, dim=0) of each slice: first halves, then second halves.
    void twoSubParams()
    {
        cat(0);
        for (int half = 0; half < 2 && m_tp > 1; ++half)
            for (size_t t = 0; t < m_tp; ++t) {
                const int64_t n = m_shapes[t][0], c = (n + 1) / 2;
                if (n < 2) throw refuse("a tensor-parallel slice too small for two sub-parameters");
                m_plan.blocks.push_back({t, half ? c : 0, half ? n - c : c});
            }
        m_plan.keys = {{"cat_dim", m_tree.integer(0)}, {"param_n_sub_params", m_tree.integer(2)}};
    }

    std::vector<int64_t> intsOf(const Value* v) const
    {
        std::vector<int64_t> out;
        if (!v || (v->kind != Kind::Tuple && v->kind != Kind::List))
            throw refuse("its sub-parameter metadata is not a list of sizes");
        for (const Value* x : v->items) {
            const auto i = asInt(x);
            if (!i) throw refuse("its sub-parameter metadata is not a list of sizes");
            out.push_back(*i);
        }
        return out;
    }

    // Each sub-parameter's size and its width on each TP rank, and the shape written back.
    struct SubSizes
    {
        std::vector<int64_t> sizes;
        std::vector<std::vector<int64_t>> widths; // per sub-parameter, per TP rank
        const Value* shapeOut = nullptr;
    };

    // Version >= 0.4: the sizes, and the widths sub_param_shard_widths records.
    SubSizes recordedWidths(const SubParams& sub, const Pattern& pattern) const
    {
        SubSizes z{intsOf(sub.shapeNode->items[size_t(sub.partitionDim)]), {}, sub.shapeNode};
        const Value* w = dictGet(m_rules.shardWidths, pattern.text);
        if (!w)
            throw refuse(
                "universal checkpoint version >= 0.4 records no sub_param_shard_widths for its pattern '" +
                pattern.text + "'");
        if (w->kind != Kind::List && w->kind != Kind::Tuple)
            throw refuse("sub_param_shard_widths is not a list");
        for (const Value* x : w->items)
            z.widths.push_back(intsOf(x));
        return z;
    }

    // Older versions: sizes (or a count dividing the partition dimension), split evenly.
    SubSizes evenWidths(const SubParams& sub)
    {
        const size_t pd = size_t(sub.partitionDim);
        const Value* spec = sub.shapeNode->items[pd];
        SubSizes z{{}, {}, sub.shapeNode};
        if (spec->kind == Kind::Tuple) {
            z.sizes = intsOf(spec);
        } else {
            const auto count = asInt(spec);
            if (!count) throw refuse("its sub-parameter shape holds neither a count nor sizes");
            int64_t full = 0;
            for (const auto& s : m_shapes) {
                if (s.size() <= pd) throw refuse("its slices have no partition dimension");
                full += s[pd];
            }
            if (*count <= 0 || full % *count)
                throw refuse("its sub-parameter count does not divide the partition dimension");
            z.sizes.assign(size_t(*count), full / *count);
            Value* normalized = m_tree.node(Kind::Tuple); // tuple(shape) with the sizes in place
            normalized->items = sub.shapeNode->items;
            normalized->items[pd] = m_tree.ints(z.sizes);
            z.shapeOut = normalized;
        }
        for (int64_t s : z.sizes)
            if (s % int64_t(m_tp))
                throw refuse("a sub-parameter size is not divisible by the tensor-parallel degree and the "
                             "universal checkpoint version predates sub_param_shard_widths");
        for (int64_t s : z.sizes)
            z.widths.push_back(std::vector<int64_t>(m_tp, s / int64_t(m_tp)));
        return z;
    }

    // The logical shape: tuples summed, the partition dimension the sizes' sum, one placeholder
    // resolved from the element count.
    std::vector<int64_t> logicalShape(const SubParams& sub, const std::vector<int64_t>& sizes) const
    {
        std::vector<int64_t> logical;
        for (const Value* d : sub.shapeNode->items) {
            if (d->kind == Kind::Tuple) {
                int64_t sum = 0;
                for (int64_t x : intsOf(d))
                    sum += x;
                logical.push_back(sum);
            } else if (const auto i = asInt(d)) {
                logical.push_back(*i);
            } else {
                throw refuse("its sub-parameter shape holds something other than sizes");
            }
        }
        const size_t pd = size_t(sub.partitionDim);
        logical[pd] = 0;
        for (int64_t s : sizes)
            logical[pd] += s;
        int64_t total = 0;
        for (const auto& s : m_shapes)
            total += product(s, 0, s.size());
        size_t holes = 0, hole = 0;
        int64_t known = 1;
        for (size_t d = 0; d < logical.size(); ++d)
            if (logical[d] < 0)
                ++holes, hole = d;
            else
                known *= logical[d];
        if (holes > 1) throw refuse("its sub-parameter shape has more than one placeholder");
        if (holes) {
            if (known <= 0 || total % known)
                throw refuse("its sub-parameter shape does not fit its elements");
            logical[hole] = total / known;
        }
        return logical;
    }

    // parameter_with_sub_params: each TP rank holds its width of every sub-parameter, one after
    // another along the partition dimension; the merged tensor takes sub-parameter by sub-parameter.
    void subParams(const SubParams& sub, const Pattern& pattern)
    {
        SubSizes z = m_rules.version >= 0.4 ? recordedWidths(sub, pattern) : evenWidths(sub);
        if (z.widths.size() != z.sizes.size())
            throw refuse("its shard widths do not match its sub-parameters");
        for (size_t k = 0; k < z.sizes.size(); ++k) {
            int64_t sum = 0;
            for (int64_t w : z.widths[k])
                sum += w;
            if (z.widths[k].size() != m_tp || sum != z.sizes[k])
                throw refuse("its shard widths do not add up to its sub-parameter sizes");
        }
        const size_t pd = size_t(sub.partitionDim);
        const std::vector<int64_t> logical = logicalShape(sub, z.sizes);
        for (size_t t = 0; t < m_tp; ++t) {
            std::vector<int64_t> rank = logical;
            rank[pd] = 0;
            for (const auto& w : z.widths)
                rank[pd] += w[t];
            if (product(rank, 0, rank.size()) != product(m_shapes[t], 0, m_shapes[t].size()))
                throw refuse("tensor-parallel rank " + std::to_string(t) +
                             " holds a different number of elements than its shard widths describe");
            m_plan.views[t] = rank;
        }
        std::vector<int64_t> offsets(m_tp, 0);
        for (const auto& w : z.widths)
            for (size_t t = 0; t < m_tp; ++t) {
                m_plan.blocks.push_back({t, offsets[t], w[t]});
                offsets[t] += w[t];
            }
        m_plan.dim = pd;
        m_plan.shape = logical;
        Value* obj = m_tree.node(Kind::Call); // SubparamShape(patterns, shape, partition_dim)
        obj->isNew = true;
        obj->callable = m_tree.global("deepspeed.checkpoint.universal_checkpoint", "SubparamShape");
        obj->args = m_tree.tuple({});
        obj->state = m_tree.node(Kind::Dict);
        obj->state->entries = {{m_tree.str("patterns"), const_cast<Value*>(sub.patternsNode)},
                               {m_tree.str("shape"), const_cast<Value*>(z.shapeOut)},
                               {m_tree.str("partition_dim"), const_cast<Value*>(sub.dimNode)}};
        m_plan.keys = {{"sub_param_shape", obj}};
    }

    Rules& m_rules;
    Tree& m_tree;
    const std::string& m_name;
    const std::vector<std::vector<int64_t>>& m_shapes;
    const std::string& m_file;
    const size_t m_tp;
    MergePlan m_plan;
};

// How merge_tp_slices merges a parameter whose TP slices have these shapes (param_shapes of each
// mp rank), and the keys it writes.
MergePlan planMerge(Rules& rules, Tree& tree, const std::string& name,
                    const std::vector<std::vector<int64_t>>& shapes, const std::string& file)
{
    return MergePlanner(rules, tree, name, shapes, file).plan();
}

// The merged tensor of one state: `nbytes` bytes (a prefix, after a vocabulary cut) of the
// gather the plan describes, read from the slices as the writer asks for them.
torch::OutTensor merged(const std::string& name, const std::string& state, torch::DType dtype,
                        std::shared_ptr<const std::vector<FlatSlice>> slices, const MergePlan& m,
                        uint64_t nbytes, const std::string& file)
{
    const uint32_t es = torch::elementSize(dtype);
    torch::OutTensor o;
    o.name = "0";
    o.dtype = dtype;
    o.nbytes = nbytes;
    o.shape = {int64_t(nbytes / es)};
    const auto& v0 = m.views[m.blocks.front().tp];
    const uint64_t inner = uint64_t(product(v0, m.dim + 1, v0.size())) * es;
    std::vector<uint64_t> dimOf; // each slice's size along dim
    for (const auto& v : m.views)
        dimOf.push_back(uint64_t(v[m.dim]));
    uint64_t row = 0; // bytes of the merged tensor per outer index
    for (const Block& b : m.blocks)
        row += uint64_t(b.width) * inner;
    o.fill = [slices, blocks = m.blocks, dimOf, inner, row, es, mode = m.mode, name, state, file, dtype,
              scalar = scalarOf(dtype)](uint64_t offset, uint64_t count, uint8_t* dst) {
        if (mode == MergePlan::Mode::Gather) {
            while (count) {
                const uint64_t outer = offset / row;
                uint64_t in = offset % row;
                size_t b = 0;
                while (in >= uint64_t(blocks[b].width) * inner)
                    in -= uint64_t(blocks[b++].width) * inner;
                const Block& blk = blocks[b];
                const uint64_t n = std::min(count, uint64_t(blk.width) * inner - in);
                (*slices)[blk.tp].read((outer * dimOf[blk.tp] + uint64_t(blk.start)) * inner + in, n, dst);
                dst += n, offset += n, count -= n;
            }
            return;
        }
        (*slices)[0].read(offset, count, dst);
        if (slices->size() == 1) return;
        std::vector<uint8_t> other(count);
        if (mode == MergePlan::Mode::Replicated) { // torch.equal: values compare, NaN differs
            for (size_t t = 1; t < slices->size(); ++t) {
                (*slices)[t].read(offset, count, other.data());
                bool same = true;
                if (scalar && torch::info(dtype).isFloat) { // bf16/fp16 too: -0.0 == +0.0, NaN != NaN
                    for (uint64_t i = 0; i + es <= count && same; i += es)
                        same = gpu::toDouble(*scalar, dst + i) == gpu::toDouble(*scalar, other.data() + i);
                } else {
                    same = std::memcmp(dst, other.data(), count) == 0;
                }
                if (!same)
                    throw Error("parameter '" + name + "' is tensor-parallel replicated, but its '" + state +
                                    "' differs between mp rank 0 and mp rank " + std::to_string(t) +
                                    " (ds_to_universal asserts they are equal)",
                                file);
            }
            return;
        }
        // sum(slices) / len(slices): ((0 + s0) + s1 + ...) / n in float32, as torch computes it
        std::vector<float> acc(count / 4);
        for (size_t i = 0; i < acc.size(); ++i) {
            float x;
            std::memcpy(&x, dst + 4 * i, 4);
            acc[i] = 0.0f + x;
        }
        for (size_t t = 1; t < slices->size(); ++t) {
            (*slices)[t].read(offset, count, other.data());
            for (size_t i = 0; i < acc.size(); ++i) {
                float x;
                std::memcpy(&x, other.data() + 4 * i, 4);
                acc[i] = acc[i] + x;
            }
        }
        const float n = float(slices->size());
        for (size_t i = 0; i < acc.size(); ++i) {
            const float r = acc[i] / n;
            std::memcpy(dst + 4 * i, &r, 4);
        }
    };
    return o;
}

// ---------------------------------------------------------------------------------------------
// Writing: every file under its temporary name, re-read and checked before it counts.

class Writer
{
public:
    Writer(io::OutputTransaction& tx, const ProgressSink& progress, const CancelToken& cancel, uint64_t total)
        : m_tx(tx), m_progress(progress), m_cancel(cancel), m_total(total)
    {
    }

    // A torch.save zip: `pickle` and one record per storage, then re-read: the pickle parses and
    // every storage holds the bytes written.
    void torchFile(const std::string& rel, const std::string& pickle,
                   const std::vector<torch::OutTensor>& storages)
    {
        m_cancel.throwIfCancelled();
        m_stage = rel;
        io::AtomicFile& out = m_tx.create(rel);
        std::vector<uint64_t> hashes = torch::writeTorchZipRecords(
            out, fs::path(rel).stem().string(), pickle, storages, [this](uint64_t n) { advance(n); },
            m_cancel);
        out.finish();
        done(out);
        std::unordered_map<std::string, std::pair<uint64_t, uint64_t>> want; // key: size, xxh3
        for (size_t i = 0; i < storages.size(); ++i)
            want[storages[i].name] = {storages[i].nbytes, hashes[i]};
        m_verifier.add([&out, want = std::move(want), &cancel = m_cancel] {
            const auto back = torch::TorchFile::open(out.tempPath());
            if (back->storages().size() != want.size())
                throw Error("verification failed: " + std::to_string(back->storages().size()) +
                                " storages read back, " + std::to_string(want.size()) + " written",
                            out.finalPath());
            for (size_t i = 0; i < back->storages().size(); ++i) {
                const torch::Storage& s = back->storages()[i];
                const auto it = want.find(s.key);
                if (it == want.end() || s.nbytes != it->second.first)
                    throw Error("verification failed: storage '" + s.key + "' does not hold what was written",
                                out.finalPath());
                const io::Blob blob = back->storageBytes(int(i));
                if (io::hashReleasing(*back, blob.bytes.data(), blob.bytes.size(), &cancel) !=
                    it->second.second)
                    throw Error("verification failed: storage '" + s.key + "' does not hold what was written",
                                out.finalPath());
            }
        });
    }

    // A byte-for-byte copy (shutil.copy2 in ds_to_universal), hashed on the way and re-read.
    void copy(const std::string& from, const std::string& rel)
    {
        m_cancel.throwIfCancelled();
        m_stage = rel;
        io::AtomicFile& out = m_tx.create(rel);
        const io::Copied copied = io::copyHashed(
            from, out, [this](uint64_t n) { advance(n); }, m_cancel);
        done(out);
        m_verifier.add([&out, copied, &cancel = m_cancel] { io::verifyCopy(out, copied, cancel); });
    }

    // Every file written has been read back and found as written.
    void verified() { m_verifier.finish(); }

    struct Totals
    {
        size_t files = 0;
        uint64_t bytes = 0, planned = 0;
    };

    size_t files() const { return m_files; }
    uint64_t written() const { return m_written; }

private:
    void advance(uint64_t n)
    {
        m_done += n;
        if (m_progress)
            m_progress({int(m_total ? std::min<uint64_t>(m_done * 990 / m_total, 990) : 990), m_stage, m_done,
                        m_total});
    }
    void done(const io::AtomicFile& out)
    {
        ++m_files;
        m_written += out.written();
    }

    io::OutputTransaction& m_tx;
    const ProgressSink& m_progress;
    const CancelToken& m_cancel;
    uint64_t m_total = 0, m_done = 0, m_written = 0;
    size_t m_files = 0;
    std::string m_stage;
    io::Verifier m_verifier; // last: stopped before the rest goes
};

// `root` (a node of `src`'s pickle, or a new node over some of them) as torch.save writes a
// loaded object: the same pickle, every storage it reaches copied whole.
void writeTree(Writer& w, const std::string& rel, const Value* root, const torch::TorchFile& src)
{
    Tree tree;
    std::unordered_map<const Value*, const Value*> subst;
    std::vector<torch::OutTensor> records;
    std::set<int> taken;
    std::vector<const Value*> todo{root};
    std::unordered_set<const Value*> seen;
    const auto& storages = src.storages();
    while (!todo.empty()) {
        const Value* v = todo.back();
        todo.pop_back();
        if (!v || !seen.insert(v).second) continue;
        if (v->kind != Kind::PersistentRef) {
            pickle::forEachChild(v, [&](const Value* c) { todo.push_back(c); });
            continue;
        }
        const Value* a = v->args;
        if (v->integer < 0 || size_t(v->integer) >= storages.size() || !a || a->kind != Kind::Tuple ||
            a->items.size() < 5)
            throw Error("a persistent id that is not a storage", src.path());
        const torch::Storage& s = storages[size_t(v->integer)];
        if (s.viewOf >= 0)
            throw Error("legacy storage views cannot be copied into a Universal checkpoint", src.path());
        // Zip ids have five items; a legacy file's sixth (view metadata) has no place in a zip.
        Value* pid = tree.node(Kind::PersistentRef);
        pid->args = tree.tuple({a->items[0], a->items[1], tree.str(s.key), a->items[3], a->items[4]});
        subst[v] = pid;
        if (!taken.insert(int(v->integer)).second) continue;
        torch::OutTensor o;
        o.name = s.key;
        o.dtype = torch::DType::UInt8;
        o.shape = {int64_t(s.nbytes)};
        o.nbytes = s.nbytes;
        const torch::TorchFile* f = &src;
        const int index = int(v->integer);
        o.fill = [f, index](uint64_t offset, uint64_t count, uint8_t* dst) {
            const io::Blob blob = f->storageBytes(index);
            std::memcpy(dst, blob.bytes.data() + offset, count);
            f->release(blob.bytes.data() + offset, count);
        };
        records.push_back(std::move(o));
    }
    pickle::WriteOptions o;
    o.protocol = 2;
    o.substitute = [&subst](const Value* v) -> const Value* {
        const auto it = subst.find(v);
        return it == subst.end() ? nullptr : it->second;
    };
    w.torchFile(rel, pickle::write(root, o), records);
}

// A file whose content is one new tensor (stage 3) or {keys..., 'param': tensor} (stage <= 2).
void writeState(Writer& w, const std::string& rel, const std::vector<std::pair<std::string, Value*>>& keys,
                bool asDict, torch::OutTensor data, const std::vector<int64_t>& shape)
{
    Tree tree;
    data.name = "0";
    Value* t = tree.tensor(data.dtype, shape, data.name);
    Value* root = t;
    if (asDict) {
        root = tree.node(Kind::Dict);
        for (const auto& [k, v] : keys)
            root->entries.push_back({tree.str(k), v});
        root->entries.push_back({tree.str("param"), t});
    }
    pickle::WriteOptions o;
    o.protocol = 2;
    w.torchFile(rel, pickle::write(root, o), {std::move(data)});
}

// ---------------------------------------------------------------------------------------------

struct Plan
{
    std::string optim0, model0;      // rank 0's optimizer file; the model file ds_to_universal reads
    std::vector<std::string> copies; // model-states files copied into the output
};

// The files an earlier conversion wrote into the folder: its zero/ tree and the model-states
// files copied beside it. Replaced as a set by a conversion that overwrites (--overwrite).
bool earlierUniversalOutput(const std::string& name)
{
    const auto ends = [&](const std::string& x) {
        return name.size() >= x.size() && name.compare(name.size() - x.size(), x.size(), x) == 0;
    };
    return name == "zero" || ends("_model_states.pt") || ends("_optim_states.pt");
}

// OUT as ds_to_universal takes --output_folder; latest_universal names it from its parent.
struct Destination
{
    fs::path out, latest;
};

Destination destinationOf(const std::string& output)
{
    fs::path out = fs::path(output).lexically_normal();
    if (!out.has_filename()) out = out.parent_path();
    if (out.empty() || out.filename() == "." || out.filename() == "..")
        throw Error("give the Universal checkpoint a folder name of its own (latest_universal names it)",
                    output);
    return {out, (out.has_parent_path() ? out.parent_path() : fs::path(".")) / "latest_universal"};
}

io::OutputTransaction::Existing existingRule(const UniversalOptions& options)
{
    if (options.shard.sharded()) return io::OutputTransaction::Existing::Shared; // the other shards' files
    return options.overwrite ? io::OutputTransaction::Existing::Replace
                             : io::OutputTransaction::Existing::Refuse;
}

// The tag as each tensor-parallel rank holds it: each rank's model file and its data-parallel
// optimizer files, read as the layout reads mp rank 0 (param_shapes of that rank, its
// partitions), through the opened checkpoint's FileSet (no file parsed again).
struct TpRanks
{
    std::vector<const layout::Tag*> tags;
    std::deque<layout::Tag> read; // ranks read here (all of them when there are several)
};

TpRanks tensorParallelRanks(const layout::OpenedTag& in, int tpDegree)
{
    TpRanks r;
    if (tpDegree == 1) { // the opened tag is rank 0's
        r.tags.push_back(in.tag);
        return r;
    }
    for (int t = 0; t < tpDegree; ++t) {
        std::vector<layout::RankFile> mine;
        for (const auto& f : in->files) {
            const bool rankFile =
                f.role == layout::FileRole::ModelStates || f.role == layout::FileRole::OptimStates;
            if (rankFile ? f.mpRank != t : t != 0) continue;
            mine.push_back(f);
            mine.back().mpRank = 0;
        }
        r.read.push_back(layout::openDeepSpeedTagFiles(std::move(mine), in->dir, in->name, in->latest,
                                                       *in.checkpoint->files));
        r.tags.push_back(&r.read.back());
    }
    return r;
}

// DeepSpeed model files in a tag folder: what preflight can tell about (a ZeRO-0 save, a missing
// optimizer file). Anything else (another family, archive members) is no conversion's input.
bool hasRankFilesOnDisk(const std::vector<layout::RankFile>& files)
{
    std::error_code ec;
    return std::any_of(files.begin(), files.end(), [&](const layout::RankFile& f) {
        return f.role == layout::FileRole::ModelStates &&
               (io::isRemotePath(f.path) || fs::is_regular_file(f.path, ec));
    });
}

// ZeRO partitions saved alike by every tensor-parallel rank.
void checkConvertible(const TpRanks& ranks)
{
    const layout::Tag& tag = *ranks.tags.front();
    if (tag.optimizer != "zero" && tag.optimizer != "bf16_optimizer")
        throw Error("no ZeRO optimizer partitions: nothing to convert to Universal", tag.dir);
    if (tag.zeroStage < 1 || tag.zeroStage > 3)
        throw Error("ZeRO stage " + std::to_string(tag.zeroStage) + " cannot be converted", tag.dir);
    for (size_t t = 1; t < ranks.tags.size(); ++t) {
        const layout::Tag& other = *ranks.tags[t];
        if (other.zeroStage != tag.zeroStage || other.optimizer != tag.optimizer ||
            other.worldSize != tag.worldSize)
            throw Error("tensor-parallel rank " + std::to_string(t) +
                            " was saved by another optimizer or data-parallel world size than rank 0",
                        other.files.empty() ? tag.dir : other.files.front().path);
    }
}

// Which files ds_to_universal reads and copies: rank 0's optimizer file, the model file, and
// mp_rank_* files (stage <= 2) or every *model_states.pt (3), of every tensor-parallel rank.
Plan planFiles(const layout::Tag& tag, bool stage3)
{
    Plan plan;
    for (const auto& f : tag.files) {
        if (f.role == layout::FileRole::OptimStates && f.dpRank == 0 && f.mpRank == 0) plan.optim0 = f.path;
        if (f.role == layout::FileRole::ModelStates && f.mpRank == 0 && plan.model0.empty())
            plan.model0 = f.path;
        if (f.role == layout::FileRole::ModelStates && (stage3 || f.name.rfind("mp_rank_", 0) == 0))
            plan.copies.push_back(f.path);
    }
    std::sort(plan.copies.begin(), plan.copies.end());
    if (!stage3 &&
        (plan.copies.empty() || fs::path(plan.model0).filename().string().rfind("mp_rank_", 0) != 0))
        throw Error("no mp_rank_*_model_states.pt file (DeepSpeedCheckpoint needs one for ZeRO stage " +
                        std::to_string(tag.zeroStage) + ")",
                    tag.dir);
    return plan;
}

// universal_checkpoint_info: stage <= 2 requires it (ds_to_universal asserts); stage 3 reads
// it (when present) only to merge tensor-parallel slices. Without it, a checkpoint of one
// tensor-parallel rank has no slices to merge: it converts as ds_to_universal's
// --inject_missing_state converts it, saying so in `notes`; with several, how they merge is
// unknown and the conversion is refused.
Rules universalRules(const torch::TorchFile& m0, const std::string& model0, bool stage3, bool tpMerge,
                     int tpDegree, const UniversalOptions& options, std::vector<std::string>& notes)
{
    const Value* info = dictGet(m0.root(), "universal_checkpoint_info");
    if (info && info->kind == Kind::None) info = nullptr;
    if (!stage3 && !info && !options.injectMissingState) {
        if (tpDegree > 1)
            throw Error(
                "no universal_checkpoint_info, and the checkpoint is tensor-parallel (" +
                    std::to_string(tpDegree) +
                    " mp ranks): how its slices merge is what that information says, and the training "
                    "script did not save it (ds_to_universal refuses it too: \"Required "
                    "universal_checkpoint_info state is missing in checkpoint\")",
                model0);
        notes.push_back(
            "no universal_checkpoint_info in the checkpoint: converted as data parallelism only, as "
            "ds_to_universal's --inject_missing_state does (one tensor-parallel rank: nothing to merge)");
    }
    return tpMerge ? readRules(info, model0) : Rules{};
}

// Every output of a conversion, planned (with its size) before anything is written.
class Conversion
{
public:
    struct Item
    {
        std::string rel;
        uint64_t bytes = 0;
        std::function<void(Writer&)> write;
    };

    Conversion(const TpRanks& ranks, RankFiles& files, const Plan& plan, Rules& rules, bool tpMerge)
        : m_ranks(ranks), m_tag(*ranks.tags.front()), m_files(files), m_plan(plan), m_rules(rules),
          m_stage3(m_tag.zeroStage == 3), m_tpMerge(tpMerge)
    {
        for (const layout::Tag* t : ranks.tags) {
            m_byName.emplace_back();
            for (const layout::Parameter& p : t->params)
                if (p.kind == layout::Parameter::Kind::Trainable && p.tiedTo.empty())
                    m_byName.back()[p.name] = &p;
        }
        for (size_t t = 1; t < m_byName.size(); ++t)
            for (const auto& [name, p] : m_byName[t])
                if (!m_byName[0].count(name))
                    throw Error(
                        "parameter '" + name + "' is in the param_shapes of mp rank " + std::to_string(t) +
                            " but not of mp rank 0: the tensor-parallel ranks do not hold the same model",
                        ranks.tags[t]->files.front().path);
    }

    // zero/<name>/{fp32,exp_avg,exp_avg_sq}.pt (and step.pt) of every trainable parameter.
    void addParameters()
    {
        for (const layout::Parameter& p : m_tag.params)
            if (p.kind == layout::Parameter::Kind::Trainable && p.tiedTo.empty()) addParameter(p);
    }

    // Stage <= 2: every tensor of the model file's `module` without an fp32.pt (buffers, frozen
    // and tied parameters) gets one with {'param': tensor.float()}, as ds_to_universal does.
    void addModuleTensors()
    {
        if (m_stage3) return;
        for (const std::string& path : m_plan.copies) {
            const torch::TorchFile& mf = m_files.get(path);
            const Value* module = dictGet(mf.root(), "module");
            if (!module) continue;
            for (const auto& [k, v] : module->entries) {
                const auto name = asString(k);
                const torch::Tensor* t = name ? mf.tensor("module/" + *name) : nullptr;
                if (!t || m_dirs.count(*name)) continue;
                m_dirs.insert(*name);
                const std::string rel = "zero/" + *name + "/fp32.pt";
                torch::OutTensor data = asFloat32("0", mf, *t);
                m_items.push_back(
                    {rel, data.nbytes, [rel, data = std::move(data), shape = t->shape](Writer& w) {
                         writeState(w, rel, {}, true, data, shape);
                     }});
            }
        }
    }

    // zero/optimizer_state.pt: rank 0's optimizer_state_dict with param_groups beside it; at
    // stage <= 2 without the partitioned tensors and with paddings cleared, as DeepSpeedCheckpoint
    // hands it over.
    void addOptimizerState()
    {
        const torch::TorchFile& o0 = m_files.get(m_plan.optim0);
        const Value* osd = dictGet(o0.root(), "optimizer_state_dict");
        if (!osd || osd->kind != Kind::Dict)
            throw Error("optimizer states file has no optimizer_state_dict", m_plan.optim0);
        Value* out = m_osdTree.node(Kind::Dict);
        const Value* paramGroups = nullptr;
        if (m_stage3) {
            out->entries = osd->entries;
            paramGroups = dictGet(dictGet(osd, "optimizer_state_dict"), "param_groups");
        } else {
            keepUnsharded(osd, out);
            paramGroups = dictGet(dictGet(osd, "base_optimizer_state"), "param_groups");
        }
        if (!paramGroups) throw Error("optimizer states have no param_groups", m_plan.optim0);
        out->entries.push_back({m_osdTree.str("param_groups"), const_cast<Value*>(paramGroups)});
        uint64_t bytes = 0;
        if (m_stage3)
            for (const auto& s : o0.storages())
                bytes += s.nbytes;
        m_items.push_back({"zero/optimizer_state.pt", bytes,
                           [out, &o0](Writer& w) { writeTree(w, "zero/optimizer_state.pt", out, o0); }});
    }

    // The model-states files, copied byte for byte (shutil.copy2 in ds_to_universal).
    uint64_t addCopies()
    {
        uint64_t copied = 0;
        for (const std::string& path : m_plan.copies) {
            const std::string rel = fs::path(path).filename().string();
            const uint64_t size = io::fileSize(path); // a URL's too (std::filesystem said -1)
            m_items.push_back({rel, size, [path, rel](Writer& w) { w.copy(path, rel); }});
            copied += size;
        }
        return copied;
    }

    std::vector<Item>& items() { return m_items; }
    size_t parameters() const { return m_dirs.size(); }

private:
    // The parameter as each TP rank holds it.
    std::vector<const layout::Parameter*> partsOf(const layout::Parameter& p) const
    {
        std::vector<const layout::Parameter*> parts;
        for (size_t t = 0; t < m_byName.size(); ++t) {
            const auto it = m_byName[t].find(p.name);
            if (it == m_byName[t].end())
                throw Error("parameter '" + p.name +
                                "' is in the param_shapes of mp rank 0 but not of mp rank " +
                                std::to_string(t) + ": the tensor-parallel ranks do not hold the same model",
                            m_ranks.tags[t]->files.front().path);
            parts.push_back(it->second);
        }
        return parts;
    }

    // ds_to_universal extracts groups 0..len(state)-1 of base_optimizer_state['state'] of each
    // rank: a group the optimizer has not stepped yet has no fragments.
    bool hasGroupState(const std::string& file, int group)
    {
        const Value* st = m_files.get(file).value("optimizer_state_dict/base_optimizer_state/state");
        return st && group >= 0 && size_t(group) < st->entries.size() && dictGet(st, std::to_string(group));
    }

    // The slices of each TP rank that hold optimizer state.
    using Held = std::vector<std::vector<const layout::RankSlice*>>;
    Held heldSlices(const std::vector<const layout::Parameter*>& parts)
    {
        Held held(parts.size());
        for (size_t t = 0; t < parts.size(); ++t)
            for (const auto& s : parts[t]->slices)
                if (s.length && (m_stage3 || hasGroupState(s.master.front().file, parts[t]->group)))
                    held[t].push_back(&s);
        return held;
    }

    // With several TP ranks, each rank's slices cover its whole slice of the parameter.
    void checkCovered(const std::string& name, const std::vector<const layout::Parameter*>& parts,
                      const Held& held) const
    {
        if (parts.size() < 2) return;
        for (size_t t = 0; t < parts.size(); ++t) {
            uint64_t covered = 0;
            for (const auto* s : held[t])
                covered += s->length;
            if (covered != parts[t]->numel())
                throw Error("parameter '" + name + "' has optimizer state for " + std::to_string(covered) +
                                " of its " + std::to_string(parts[t]->numel()) + " elements on mp rank " +
                                std::to_string(t) + ": its tensor-parallel slices cannot be merged",
                            m_ranks.tags[t]->files.front().path);
        }
    }

    MergePlan mergeOf(const layout::Parameter& p, const std::vector<const layout::Parameter*>& parts)
    {
        if (!m_tpMerge) { // stage 3, one TP rank: the flat concatenation, a raw tensor
            MergePlan merge;
            merge.shape = {int64_t(p.numel())};
            merge.views = {merge.shape};
            merge.blocks = {{0, 0, merge.shape[0]}};
            return merge;
        }
        std::vector<std::vector<int64_t>> shapes;
        for (const auto* q : parts)
            shapes.push_back(q->shape);
        return planMerge(m_rules, m_keysTree, p.name, shapes, m_plan.model0);
    }

    void addParameter(const layout::Parameter& p)
    {
        const std::vector<const layout::Parameter*> parts = partsOf(p);
        const Held held = heldSlices(parts);
        // No fragment anywhere (or no optimizer state yet: fp16 steps that all overflowed):
        // ds_to_universal merges nothing for it; at stage <= 2 `module` supplies fp32.pt.
        if (std::all_of(held.begin(), held.end(), [](const auto& h) { return h.empty(); })) return;
        checkCovered(p.name, parts, held);
        const MergePlan merge = mergeOf(p, parts);
        const std::string dir = "zero/" + p.name;
        for (const char* state : {"fp32", "exp_avg", "exp_avg_sq"}) {
            torch::OutTensor data = stateData(p, state, parts, held, merge);
            const std::string rel = dir + "/" + state + ".pt";
            m_items.push_back(
                {rel, data.nbytes,
                 [rel, keys = merge.keys, tpMerge = m_tpMerge, data = std::move(data),
                  shape = merge.shape](Writer& w) { writeState(w, rel, keys, tpMerge, data, shape); }});
        }
        m_dirs.insert(p.name);
        if (!m_stage3) addStep(dir, parts, held);
    }

    // The sources of one state of a slice: its master (fp32) or that moment.
    const std::vector<layout::Source>& sourcesOf(const layout::RankSlice& s, const char* state,
                                                 const std::string& param) const
    {
        if (std::strcmp(state, "fp32") == 0) return s.master;
        for (const auto& [name, v] : s.states)
            if (name == state) return v;
        throw Error(std::string("no '") + state + "' optimizer state for parameter '" + param +
                        "': DeepSpeed's Universal format holds Adam-style moments (exp_avg, exp_avg_sq) only",
                    s.master.empty() ? m_tag.dir : s.master.front().file.str());
    }

    // One state of a parameter as the merged tensor ds_to_universal writes.
    torch::OutTensor stateData(const layout::Parameter& p, const char* state,
                               const std::vector<const layout::Parameter*>& parts, const Held& held,
                               const MergePlan& merge)
    {
        auto slices = std::make_shared<std::vector<FlatSlice>>(parts.size());
        torch::DType dtype = torch::DType::Float32;
        bool typed = false;
        for (size_t t = 0; t < parts.size(); ++t)
            for (const layout::RankSlice* s : held[t])
                for (const layout::Source& src : sourcesOf(*s, state, p.name)) {
                    torch::DType d = dtype;
                    (*slices)[t].add(pieceOf(m_files, src, d));
                    if (typed && d != dtype)
                        throw Error("parameter '" + p.name + "': its '" + state +
                                        "' fragments are of different dtypes",
                                    src.file);
                    dtype = d, typed = true;
                }
        const uint64_t es = torch::elementSize(dtype);
        if (parts.size() > 1)
            for (size_t t = 0; t < parts.size(); ++t)
                if ((*slices)[t].bytes != uint64_t(product(merge.views[t], 0, merge.views[t].size())) * es)
                    throw Error("parameter '" + p.name + "': the '" + state + "' fragments of mp rank " +
                                    std::to_string(t) + " do not hold its param_shapes shape",
                                m_ranks.tags[t]->files.front().path);
        const uint64_t nbytes = gpu::numelOf(merge.shape) * es; // the vocabulary cut keeps the leading rows
        torch::OutTensor data;
        if (parts.size() == 1) {
            // One TP rank: the fragments in order (averaging one slice only turns -0.0 into +0.0).
            data = concatenation("0", dtype, (*slices)[0].pieces, merge.mode == MergePlan::Mode::Average);
        } else {
            if (merge.mode == MergePlan::Mode::Average && dtype != torch::DType::Float32)
                throw Error("parameter '" + p.name + "': averaging tensor-parallel slices of " +
                                std::string(torch::name(dtype)) + " is not converted to Universal yet",
                            m_plan.model0);
            data = merged(p.name, state, dtype, slices, merge, nbytes, m_plan.model0);
        }
        data.nbytes = nbytes;
        return data;
    }

    // The step as the optimizer saved it (int or tensor), from the first TP rank holding it.
    void addStep(const std::string& dir, const std::vector<const layout::Parameter*>& parts, const Held& held)
    {
        size_t t = 0;
        while (held[t].empty())
            ++t;
        const torch::TorchFile& f = m_files.get(held[t].front()->master.front().file);
        const Value* step = f.value("optimizer_state_dict/base_optimizer_state/state/" +
                                    std::to_string(parts[t]->group) + "/step");
        if (!step) return;
        const std::string rel = dir + "/step.pt";
        m_items.push_back({rel, 8, [rel, step, &f](Writer& w) { writeTree(w, rel, step, f); }});
    }

    // Stage <= 2's optimizer_state_dict without its partitioned tensors, paddings cleared.
    void keepUnsharded(const Value* osd, Value* out)
    {
        static const std::set<std::string> sharded = {"base_optimizer_state", "param_slice_mappings",
                                                      "single_partition_of_fp32_groups"};
        for (const auto& [k, v] : osd->entries) {
            const std::string key = asString(k).value_or("");
            if (sharded.count(key)) continue;
            Value* value = v;
            if ((key == "group_paddings" || key == "partition_count") && v && v->kind == Kind::List &&
                !v->items.empty()) {
                value = m_osdTree.node(Kind::List);
                for (size_t i = 0; i < v->items.size(); ++i)
                    value->items.push_back(m_osdTree.integer(key == "group_paddings" ? 0 : m_tag.worldSize));
            }
            out->entries.push_back({k, value});
        }
    }

    const TpRanks& m_ranks;
    const layout::Tag& m_tag;
    RankFiles& m_files;
    const Plan& m_plan;
    Rules& m_rules;
    const bool m_stage3, m_tpMerge;
    std::vector<std::map<std::string, const layout::Parameter*>> m_byName; // per TP rank
    std::vector<Item> m_items;
    std::set<std::string> m_dirs; // zero/<name> folders with an fp32.pt
    Tree m_keysTree;              // nodes of the extra dict keys, shared by all state files
    Tree m_osdTree;
};

// ds_to_universal's --strict (its default): every pattern matched some parameter.
void checkPatternsUsed(const Rules& rules, const std::string& model0)
{
    if (rules.unused.empty()) return;
    std::string list;
    for (const auto& u : rules.unused)
        list += (list.empty() ? "'" : ", '") + u + "'";
    throw Error("universal_checkpoint_info patterns match no parameter: " + list +
                    " (ds_to_universal stops here too: 'Unused patterns')",
                model0);
}

// The conversion's files are written and checked: latest_universal names the folder, and both
// are committed, the folder first.
void commitWithLatest(io::OutputTransaction& tx, io::OutputTransaction& latestTx,
                      const std::string& folderName, const CancelToken& cancel)
{
    cancel.throwIfCancelled();
    io::AtomicFile& latest = latestTx.create();
    latest.write(folderName.data(), folderName.size());
    latest.finish();
    tx.commit();
    latestTx.commit();
}

// Writes every planned item, checks all of them, then names the folder in latest_universal
// and commits both: the conversion appears whole or not at all.
Writer::Totals writeConversion(std::vector<Conversion::Item>& items, io::OutputTransaction& tx,
                               io::OutputTransaction& latestTx, const std::string& folderName,
                               const ProgressSink& progress, const CancelToken& cancel)
{
    uint64_t total = 0;
    for (const auto& it : items)
        total += it.bytes;
    Writer writer(tx, progress, cancel, total);
    for (auto& it : items) {
        it.write(writer);
        it.write = nullptr; // its pieces and pickle nodes are no longer needed
    }
    writer.verified();
    commitWithLatest(tx, latestTx, folderName, cancel);
    if (progress) progress({1000, "done", total, total});
    return {writer.files() + 1, writer.written() + folderName.size(), total};
}

// The units of a split conversion (ops/sharded.h): one per parameter folder, zero/<name>/ with
// its state files; the optimizer state and the copied model files bind them (finalize's).
struct SplitPlan
{
    std::vector<WorkUnit> units;
    std::vector<std::vector<size_t>> itemsOf; // per unit, its items
    std::vector<size_t> binding;              // items finalize writes
};

SplitPlan splitConversion(const std::vector<Conversion::Item>& items)
{
    SplitPlan split;
    std::map<std::string, size_t> unitOf;
    for (size_t i = 0; i < items.size(); ++i) {
        const fs::path rel(items[i].rel);
        const auto parts = std::distance(rel.begin(), rel.end());
        if (parts != 3 || *rel.begin() != "zero") {
            split.binding.push_back(i);
            continue;
        }
        const std::string dir = rel.parent_path().string();
        auto [it, added] = unitOf.emplace(dir, split.units.size());
        if (added) {
            split.units.emplace_back();
            split.itemsOf.emplace_back();
        }
        split.units[it->second].files.push_back(items[i].rel);
        split.units[it->second].bytes += items[i].bytes;
        split.itemsOf[it->second].push_back(i);
    }
    return split;
}

std::vector<size_t> allUnits(const SplitPlan& split)
{
    std::vector<size_t> all(split.units.size());
    std::iota(all.begin(), all.end(), 0);
    return all;
}

uint64_t conversionFingerprint(const layout::OpenedTag& in, const std::vector<Conversion::Item>& items)
{
    std::string text = "ckpt universal 1 " + in->name + "\n";
    for (const auto& it : items)
        text += it.rel + " " + std::to_string(it.bytes) + "\n";
    std::vector<std::string> files;
    for (const auto& f : in->files)
        files.push_back(f.path);
    return fingerprintOf(text + describeInputs(files));
}

// One process's part of a conversion split across processes, or its finalize: the parameter
// folders it owns (each renamed in with its marker), then, for finalize, the binding files and
// latest_universal last.
Writer::Totals writeConversionPart(const layout::OpenedTag& in, const UniversalOptions& options,
                                   std::vector<Conversion::Item>& items, io::OutputTransaction& tx,
                                   io::OutputTransaction& latestTx, const std::string& folderName,
                                   const ProgressSink& progress, const CancelToken& cancel)
{
    const ShardSpec& spec = options.shard;
    if (options.overwrite)
        throw Error(
            "--overwrite does not combine with --shard or --finalize: the shards of one job share the "
            "folder; remove an earlier output first",
            tx.folder());
    const SplitPlan split = splitConversion(items);
    std::vector<std::string> binding;
    for (size_t i : split.binding)
        binding.push_back(items[i].rel);
    const ShardedOutput out(in.inputs(), tx.folder(), spec, conversionFingerprint(in, items), split.units,
                            binding);
    Writer::Totals totals;
    if (!spec.finalize) {
        Writer writer(tx, progress, cancel, out.bytesOf(out.mine()));
        try {
            for (size_t u : out.mine()) {
                if (out.done(u)) continue;
                for (size_t i : split.itemsOf[u]) {
                    items[i].write(writer);
                    items[i].write = nullptr;
                }
                writer.verified();
                out.commitUnit(u, tx);
            }
            out.markShard();
        } catch (const std::exception& e) {
            out.markShard(e.what());
            throw;
        }
        totals = {writer.files(), writer.written(), out.bytesOf(out.mine())};
        if (!spec.finalizeWhenAllDone) {
            if (progress) progress({1000, "done", totals.planned, totals.planned});
            return totals;
        }
        out.waitForOtherShards(progress, cancel);
    }
    const ShardedOutput::Written shardFiles = out.checkComplete(progress, cancel);
    uint64_t bytes = 0;
    for (size_t i : split.binding)
        bytes += items[i].bytes;
    Writer writer(tx, progress, cancel, bytes);
    for (size_t i : split.binding)
        items[i].write(writer);
    writer.verified();
    commitWithLatest(tx, latestTx, folderName, cancel);
    out.removeMarkers();
    if (progress) progress({1000, "done", bytes, bytes});
    // The whole output: every shard's files, the binding ones and latest_universal.
    return {shardFiles.files.size() + writer.files() + 1,
            shardFiles.bytes + writer.written() + folderName.size(), out.bytesOf(allUnits(split)) + bytes};
}

} // namespace

UniversalResult universal(const layout::OpenedTag& in, const std::string& output,
                          const UniversalOptions& options, const ProgressSink& progress,
                          const CancelToken& cancel)
{
    if (!in->unreadable.empty()) throw Error(in->unreadable, in->dir);
    if (!in->convertsToUniversal && !hasRankFilesOnDisk(in->files))
        throw Error("not a DeepSpeed checkpoint folder (this is a " + in.checkpoint->model.familyName +
                        "): only DeepSpeed ZeRO 1-3 tags convert to Universal",
                    in->dir);
    const Destination dest = destinationOf(output);
    // What is converted is the tag folder (ds_to_universal's --input_folder): OUT may lie beside
    // it in the checkpoint root, where load_checkpoint(root) with load_universal looks. (Given the
    // root on the command line, the path overload keeps OUT out of it.) A folder that holds files
    // is refused unless replacing was asked for: an earlier conversion's zero/ folders would mix
    // with this one's.
    const std::vector<std::string> inputs{in->dir};
    io::OutputTransaction tx(inputs, output, io::OutputTransaction::Shape::Folder, existingRule(options),
                             earlierUniversalOutput);
    reportNotes(progress, tx.notes());
    io::OutputTransaction latestTx(inputs, dest.latest.string(), io::OutputTransaction::Shape::File);
    reportNotes(progress, latestTx.notes());

    RankFiles files(in.files());
    const int tpDegree = preflight(in->files, in->dir, files);
    if (progress) progress({0, "reading " + in->dir, 0, 0});
    const TpRanks ranks = tensorParallelRanks(in, tpDegree);
    checkConvertible(ranks);
    const layout::Tag& tag = *ranks.tags.front();
    const bool stage3 = tag.zeroStage == 3;
    const Plan plan = planFiles(*in, stage3);     // the opened tag: every mp rank's files
    const bool tpMerge = !stage3 || tpDegree > 1; // merge_tp_slices, dict files
    std::vector<std::string> notes;
    Rules rules =
        universalRules(files.get(plan.model0), plan.model0, stage3, tpMerge, tpDegree, options, notes);

    Conversion conversion(ranks, files, plan, rules, tpMerge);
    conversion.addParameters();
    conversion.addModuleTensors();
    conversion.addOptimizerState();
    UniversalResult result;
    result.copiedBytes = conversion.addCopies();
    checkPatternsUsed(rules, plan.model0);
    const Writer::Totals written = options.shard.sharded()
                                       ? writeConversionPart(in, options, conversion.items(), tx, latestTx,
                                                             dest.out.filename().string(), progress, cancel)
                                       : writeConversion(conversion.items(), tx, latestTx,
                                                         dest.out.filename().string(), progress, cancel);

    result.warnings = notes;
    result.tag = tag.name;
    result.tagDir = tag.dir;
    result.output = dest.out.string();
    result.latestFile = dest.latest.string();
    result.zeroStage = tag.zeroStage;
    result.worldSize = tag.worldSize;
    result.tensorParallel = tpDegree;
    result.optimizer = tag.optimizer;
    result.parameters = conversion.parameters();
    result.files = written.files;
    result.bytesWritten = written.bytes;
    // A shard that does not finalize copies no model file: all it moved is tensors.
    const ShardSpec& shard = options.shard;
    if (shard.sharded() && !shard.finalize && !shard.finalizeWhenAllDone) result.copiedBytes = 0;
    result.tensorBytes = written.planned - std::min(written.planned, result.copiedBytes);
    // The layout's warnings speak of consolidation (what zero_to_fp32 leaves out); what would
    // make this conversion inexact is an error above instead.
    return result;
}

UniversalResult universal(const std::string& input, const std::string& output,
                          const UniversalOptions& options, const ProgressSink& progress,
                          const CancelToken& cancel)
{
    std::error_code ec;
    const bool remote = io::isRemotePath(input);
    if (remote ? io::pathKind(input) == io::PathKind::Missing : !fs::exists(input, ec))
        throw Error("cannot open: No such file or directory", input);
    // Refused before anything is parsed: the outputs, then missing rank files by name.
    const std::string tagDir = layout::tagLocation(input, options.tag);
    const Destination dest = destinationOf(output);
    io::OutputTransaction::precheck({input, tagDir}, output, io::OutputTransaction::Shape::Folder,
                                    existingRule(options));
    io::OutputTransaction::precheck({input, tagDir}, dest.latest.string(),
                                    io::OutputTransaction::Shape::File);
    auto parsed = std::make_shared<layout::FileSet>();
    std::vector<layout::RankFile> listed;
    if (remote) {
        // What a store lists; over plain HTTP nothing is listed, and the tag's own reader finds
        // its files by name.
        if (io::canList(tagDir))
            for (const auto& e : io::listFolder(tagDir))
                if (!e.folder) listed.push_back(layout::classifyTagFile(io::childPath(tagDir, e.name)));
    } else {
        for (const auto& e : fs::directory_iterator(tagDir, ec))
            if (e.is_regular_file(ec)) listed.push_back(layout::classifyTagFile(e.path().string()));
        if (ec) throw Error("cannot list the tag folder: " + ec.message(), tagDir);
    }
    if (hasRankFilesOnDisk(listed)) {
        RankFiles files(*parsed);
        preflight(listed, tagDir, files);
    }
    const layout::OpenedTag in =
        layout::openTag(input, options.tag, openingObserver(progress, cancel, "the checkpoint"), parsed);
    return universal(in, output, options, progress, cancel);
}

} // namespace ckpt::ops
