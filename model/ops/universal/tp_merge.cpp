// Element ranges of the rank files' flat tensors, concatenated or merged over tensor-parallel
// ranks as merge_tp_slices does, read only when the writer asks for them.
#include "ops/universal/internal.h"

namespace ckpt::ops::uni {

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

} // namespace ckpt::ops::uni
