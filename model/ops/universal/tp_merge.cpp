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

// The keys merge_tp_slices writes before 'param', in its order; vocab_tensor last.
std::vector<std::pair<std::string, Value*>> mergeKeys(const layout::UniversalMergeKeys& keys, Tree& tree,
                                                      const torch::TorchFile& m0)
{
    std::vector<std::pair<std::string, Value*>> out;
    if (keys.catDim >= 0) out.push_back({"cat_dim", tree.integer(keys.catDim)});
    if (keys.subParams) out.push_back({"param_n_sub_params", tree.integer(keys.subParams)});
    if (keys.subParamEntry >= 0) {
        const Value* list = m0.value("universal_checkpoint_info/parameter_with_sub_params");
        const Value* entry = list && size_t(keys.subParamEntry) < list->items.size()
                                 ? list->items[size_t(keys.subParamEntry)]
                                 : nullptr;
        const Value* shape = dictGet(entry, "shape");
        const Value* dim = dictGet(entry, "partition_dim");
        if (!shape || !dim) throw Error("universal_checkpoint_info changed while it was read", m0.path());
        Value* shapeOut = const_cast<Value*>(shape);
        if (!keys.subParamSizes.empty()) { // tuple(shape) with the sizes in place of the count
            shapeOut = tree.node(Kind::Tuple);
            shapeOut->items = shape->items;
            shapeOut->items.at(size_t(asInt(dim).value_or(0))) = tree.ints(keys.subParamSizes);
        }
        Value* obj = tree.node(Kind::Call); // SubparamShape(patterns, shape, partition_dim)
        obj->isNew = true;
        obj->callable = tree.global("deepspeed.checkpoint.universal_checkpoint", "SubparamShape");
        obj->args = tree.tuple({});
        obj->state = tree.node(Kind::Dict);
        obj->state->entries = {{tree.str("patterns"), const_cast<Value*>(dictGet(entry, "patterns"))},
                               {tree.str("shape"), shapeOut},
                               {tree.str("partition_dim"), const_cast<Value*>(dim)}};
        out.push_back({"sub_param_shape", obj});
    }
    if (keys.vocab) out.push_back({"vocab_tensor", tree.boolean(true)});
    return out;
}

// The merged tensor of one state: `nbytes` bytes (a prefix, after a vocabulary cut) of the
// gather the plan describes, read from the slices as the writer asks for them.
torch::OutTensor merged(const std::string& name, const std::string& state, torch::DType dtype,
                        std::shared_ptr<const std::vector<FlatSlice>> slices, const layout::TensorParallel& m,
                        uint64_t nbytes, const std::string& file)
{
    const uint32_t es = torch::elementSize(dtype);
    torch::OutTensor o;
    o.name = "0";
    o.dtype = dtype;
    o.nbytes = nbytes;
    o.shape = {int64_t(nbytes / es)};
    const auto& v0 = m.views[m.blocks.front().rank];
    const uint64_t inner = uint64_t(layout::product(v0, m.dim + 1, v0.size())) * es;
    std::vector<uint64_t> dimOf; // each slice's size along dim
    for (const auto& v : m.views)
        dimOf.push_back(uint64_t(v[m.dim]));
    uint64_t row = 0; // bytes of the merged tensor per outer index
    for (const layout::TensorParallel::Block& b : m.blocks)
        row += uint64_t(b.width) * inner;
    o.fill = [slices, blocks = m.blocks, dimOf, inner, row, es, mode = m.mode, name, state, file, dtype,
              scalar = scalarOf(dtype)](uint64_t offset, uint64_t count, uint8_t* dst) {
        if (mode == layout::TensorParallel::Mode::Gather) {
            while (count) {
                const uint64_t outer = offset / row;
                uint64_t in = offset % row;
                size_t b = 0;
                while (in >= uint64_t(blocks[b].width) * inner)
                    in -= uint64_t(blocks[b++].width) * inner;
                const layout::TensorParallel::Block& blk = blocks[b];
                const uint64_t n = std::min(count, uint64_t(blk.width) * inner - in);
                (*slices)[blk.rank].read((outer * dimOf[blk.rank] + uint64_t(blk.start)) * inner + in, n,
                                         dst);
                dst += n, offset += n, count -= n;
            }
            return;
        }
        (*slices)[0].read(offset, count, dst);
        if (slices->size() == 1) return;
        std::vector<uint8_t> other(count);
        if (mode == layout::TensorParallel::Mode::Replicated) { // torch.equal: values compare, NaN differs
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
