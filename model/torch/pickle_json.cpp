#include "torch/pickle_json.h"

#include "torch/torch_file.h"

namespace ckpt::torch {

using pickle::Kind;
using pickle::Value;

std::string keyText(const Value* k)
{
    if (k && (k->kind == Kind::Str || k->kind == Kind::Bytes)) return k->text;
    if (k && k->kind == Kind::Int) return std::to_string(k->integer);
    return pyRepr(k, 200);
}

namespace {

nlohmann::ordered_json toJson(const Value* v, int depth)
{
    using J = nlohmann::ordered_json;
    // The pickle VM bounds nesting already; this only keeps a pathological tree from the stack.
    if (!v || depth > 100) return nullptr;
    auto object = [&](const Value* dict) {
        J o = J::object();
        for (const auto& [k, x] : dict->entries)
            o[keyText(k)] = toJson(x, depth + 1);
        return o;
    };
    switch (v->kind) {
    case Kind::None:
        return nullptr;
    case Kind::Bool:
        return v->boolean;
    case Kind::Int:
        return v->integer;
    case Kind::BigInt:
        return std::stod(bigIntToDecimal(v->text));
    case Kind::Float:
        return v->real;
    case Kind::Str:
        return v->text;
    case Kind::List:
    case Kind::Tuple: {
        J a = J::array();
        for (const Value* x : v->items)
            a.push_back(toJson(x, depth + 1));
        return a;
    }
    case Kind::Dict:
        return object(v);
    case Kind::Call:
        if (!v->entries.empty() || v->calls("collections", "OrderedDict")) return object(v);
        if (v->state && v->state->kind == Kind::Dict) {
            J o = object(v->state);
            o["__class__"] = v->callable ? pyRepr(v->callable, 200) : "?";
            return o;
        }
        return pyRepr(v, 200);
    default:
        return pyRepr(v, 200);
    }
}

} // namespace

nlohmann::ordered_json pickleToJson(const Value* v)
{
    return toJson(v, 0);
}

} // namespace ckpt::torch
