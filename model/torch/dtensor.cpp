#include "torch/dtensor.h"

#include "io/error.h"
#include "torch/torch_file.h"

namespace ckpt::torch {

namespace {

using pickle::Kind;
using pickle::Value;

const Value* at(const Value* tuple, size_t i)
{
    return seqAt(tuple, i);
}

// The attributes of a pickled object: its BUILD state's dict, or the slots dict of a
// (dict, slots) state, as object.__reduce_ex__ writes them.
const Value* attributes(const Value* obj)
{
    if (!obj) return nullptr;
    const Value* s = obj->kind == Kind::Call ? obj->state : obj;
    if (s && s->kind == Kind::Tuple && s->items.size() == 2)
        s = s->items[1] && s->items[1]->kind == Kind::Dict ? s->items[1] : s->items[0];
    return s && s->kind == Kind::Dict ? s : nullptr;
}

bool isClass(const Value* obj, std::string_view name)
{
    return obj && obj->kind == Kind::Call && obj->callable && obj->callable->kind == Kind::Global &&
           obj->callable->name == name && obj->callable->text.starts_with("torch.distributed");
}

DTensorSpec::Placement placementOf(const Value* p)
{
    DTensorSpec::Placement out;
    if (!p || p->kind != Kind::Call || !p->callable || p->callable->kind != Kind::Global) return out;
    out.name = p->callable->name;
    if (out.name == "Replicate") {
        out.kind = DTensorSpec::Placement::Kind::Replicate;
    } else if (out.name == "Partial" || out.name == "_Partial") {
        out.kind = DTensorSpec::Placement::Kind::Partial;
    } else if (out.name == "Shard") {
        // Shard(dim): the dim in its BUILD state (dataclass), or its constructor's argument.
        std::optional<int64_t> dim = asInt(dictGet(attributes(p), "dim"));
        if (!dim) dim = asInt(at(p->args, 0));
        if (dim) out.kind = DTensorSpec::Placement::Kind::Shard, out.dim = *dim;
    }
    return out;
}

// The device mesh's shape: torch >= 2.9 keeps a _MeshLayout whose axes are flat layouts (one per
// mesh dimension); older ones keep the rank tensor `mesh` itself.
std::optional<std::vector<int64_t>> meshShapeOf(const Value* mesh)
{
    const Value* attrs = attributes(mesh);
    if (const Value* layout = attributes(dictGet(attrs, "_layout"))) {
        const Value* axes = dictGet(layout, "axes");
        if (!axes || (axes->kind != Kind::Tuple && axes->kind != Kind::List)) return std::nullopt;
        std::vector<int64_t> shape;
        for (const Value* axis : axes->items) {
            const auto s = asInts(dictGet(attributes(axis), "shape"));
            if (!s || s->empty()) return std::nullopt;
            int64_t n = 1;
            for (int64_t x : *s) {
                if (x <= 0 || x > (1 << 24)) return std::nullopt;
                n *= x;
            }
            shape.push_back(n);
        }
        return shape;
    }
    // The rank tensor: _rebuild_tensor_v2(storage, offset, size, stride, ...)
    const Value* t = dictGet(attrs, "mesh");
    if (t && t->kind == Kind::Call) return asInts(at(t->args, 2));
    return std::nullopt;
}

} // namespace

std::string shapeText(const std::vector<int64_t>& shape)
{
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
        s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
}

std::string DTensorSpec::placementsText() const
{
    std::string s = "(";
    for (size_t i = 0; i < placements.size(); ++i) {
        const Placement& p = placements[i];
        s += i ? ", " : "";
        s += p.kind == Placement::Kind::Shard       ? "Shard(dim=" + std::to_string(p.dim) + ")"
             : p.kind == Placement::Kind::Replicate ? std::string("Replicate()")
             : p.kind == Placement::Kind::Partial   ? std::string("Partial()")
                                                    : (p.name.empty() ? std::string("?") : p.name) + "()";
    }
    return s + ")";
}

std::optional<PickledDTensor> readDTensor(const Value* fromTypeArgs)
{
    // _rebuild_from_type_v2(_rebuild_wrapper_subclass, DTensor, (cls, dtype, size, stride, ...), state)
    const Value* func = at(fromTypeArgs, 0);
    const Value* cls = at(fromTypeArgs, 1);
    if (!func || !func->isGlobal("torch._utils", "_rebuild_wrapper_subclass") || !cls ||
        cls->kind != Kind::Global || cls->name != "DTensor" || !cls->text.starts_with("torch.distributed"))
        return std::nullopt;
    const Value* slots = attributes(at(fromTypeArgs, 3));
    PickledDTensor d;
    d.local = dictGet(slots, "_local_tensor");
    const Value* spec = dictGet(slots, "_spec");
    if (!d.local || !isClass(spec, "DTensorSpec")) throw Error("a DTensor without its local tensor and spec");
    const auto shape = asInts(at(at(fromTypeArgs, 2), 2));
    if (!shape) throw Error("a DTensor without its global size");
    d.spec.globalShape = *shape;

    const Value* attrs = attributes(spec);
    const Value* placements = dictGet(attrs, "placements");
    if (!placements || (placements->kind != Kind::Tuple && placements->kind != Kind::List))
        throw Error("a DTensor spec without placements");
    for (const Value* p : placements->items)
        d.spec.placements.push_back(placementOf(p));

    const Value* mesh = dictGet(attrs, "mesh");
    const Value* meshAttrs = attributes(mesh);
    const auto meshShape = meshShapeOf(mesh);
    const auto coordinate = asInts(dictGet(meshAttrs, "_coordinate_on_dim"));
    if (!meshShape || !coordinate)
        throw Error("a DTensor's device mesh without its shape or this rank's coordinate");
    d.spec.meshShape = *meshShape;
    d.spec.coordinate = *coordinate;
    if (const Value* names = dictGet(meshAttrs, "_mesh_dim_names"); names && names->kind == Kind::Tuple)
        for (const Value* n : names->items)
            if (const auto s = asString(n)) d.spec.meshDimNames.push_back(*s);

    const size_t dims = d.spec.meshShape.size();
    if (d.spec.placements.size() != dims || d.spec.coordinate.size() != dims)
        throw Error("a DTensor with " + std::to_string(d.spec.placements.size()) + " placements on a " +
                    std::to_string(dims) + "-dimensional mesh");
    for (size_t i = 0; i < dims; ++i) {
        if (d.spec.coordinate[i] < 0 || d.spec.coordinate[i] >= d.spec.meshShape[i])
            throw Error("a DTensor whose rank lies off its mesh (coordinate " +
                        std::to_string(d.spec.coordinate[i]) + " of " + std::to_string(d.spec.meshShape[i]) +
                        ")");
        const auto& p = d.spec.placements[i];
        if (p.kind == DTensorSpec::Placement::Kind::Shard &&
            (p.dim < 0 || size_t(p.dim) >= d.spec.globalShape.size()))
            throw Error("a DTensor sharded on dimension " + std::to_string(p.dim) + " of a " +
                        std::to_string(d.spec.globalShape.size()) + "-dimensional tensor");
    }
    return d;
}

} // namespace ckpt::torch
