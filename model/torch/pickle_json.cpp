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

// What one conversion may produce. A memo reference costs the pickle two bytes but repeats all it
// refers to: [a, a] nested 60 deep is 2^60 values from a few hundred bytes. Past the budget a value
// is shown as a note, so a hostile client state costs bounded time and memory, never a hang.
struct Budget
{
    uint64_t values = 1'000'000;
    uint64_t textBytes = 32ull << 20;
};

constexpr const char* kNotShown = "<not shown: the value expands past 1,000,000 items or 32 MiB of text>";

nlohmann::ordered_json toJson(const Value* v, int depth, Budget& b)
{
    using J = nlohmann::ordered_json;
    // The pickle VM bounds nesting already; this only keeps a pathological tree from the stack.
    if (!v || depth > 100) return nullptr;
    if (b.values == 0) return kNotShown;
    --b.values;
    auto text = [&](std::string t) -> J {
        if (t.size() > b.textBytes) {
            b.textBytes = 0;
            return kNotShown;
        }
        b.textBytes -= t.size();
        return t;
    };
    auto object = [&](const Value* dict) {
        J o = J::object();
        for (const auto& [k, x] : dict->entries) {
            if (b.values == 0 || b.textBytes == 0) {
                o["..."] = kNotShown;
                break;
            }
            const J key = text(keyText(k));
            o[key.get<std::string>()] = toJson(x, depth + 1, b);
        }
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
        return text(v->text);
    case Kind::List:
    case Kind::Tuple: {
        J a = J::array();
        for (const Value* x : v->items) {
            if (b.values == 0 || b.textBytes == 0) {
                a.push_back(kNotShown);
                break;
            }
            a.push_back(toJson(x, depth + 1, b));
        }
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
        return text(pyRepr(v, 200));
    default:
        return text(pyRepr(v, 200));
    }
}

// A JSON string or number as nlohmann writes it (UTF-8 as is, like ensure_ascii=False).
template <typename T> std::string scalarText(const T& x)
{
    return nlohmann::ordered_json(x).dump(-1, ' ', false);
}

bool isObject(const Value* v)
{
    return v->kind == Kind::Dict ||
           (v->kind == Kind::Call && (!v->entries.empty() || v->calls("collections", "OrderedDict")));
}

// `open`, then the n members on lines of their own one level deeper, then `close` ("[]" or "{}"
// when empty), as json.dumps(indent=2) lays them out. member(i) writes one after its indent and
// returns false when the budget ran out (it wrote the note that says so instead): the last line.
template <typename Member>
void writeMembers(char open, char close, size_t n, int depth, std::string& out, Member member)
{
    out += open;
    if (n == 0) {
        out += close;
        return;
    }
    out += '\n';
    const std::string pad(size_t(2 * (depth + 1)), ' ');
    for (size_t i = 0; i < n; ++i) {
        out += pad;
        if (!member(i)) {
            out += '\n';
            break;
        }
        out += i + 1 < n ? ",\n" : "\n";
    }
    out += std::string(size_t(2 * depth), ' ') + close;
}

void writeJsonText(const Value* v, int depth, Budget& b, std::string& out)
{
    if (!v || depth > 100 || b.values == 0) {
        out += toJson(v, depth, b).dump(-1, ' ', false);
        return;
    }
    switch (v->kind) {
    case Kind::Int:
        --b.values;
        out += std::to_string(v->integer);
        return;
    case Kind::BigInt:
        --b.values;
        out += bigIntToDecimal(v->text);
        return;
    case Kind::List:
    case Kind::Tuple:
        --b.values;
        writeMembers('[', ']', v->items.size(), depth, out, [&](size_t i) {
            if (b.values == 0 || b.textBytes == 0) {
                out += scalarText(kNotShown);
                return false;
            }
            writeJsonText(v->items[i], depth + 1, b, out);
            return true;
        });
        return;
    default:
        if (!isObject(v)) {
            out += toJson(v, depth, b).dump(-1, ' ', false); // scalars, strings, and what is no JSON
            return;
        }
        --b.values;
        writeMembers('{', '}', v->entries.size(), depth, out, [&](size_t i) {
            const std::string key = keyText(v->entries[i].first);
            if (b.values == 0 || key.size() >= b.textBytes) {
                b.textBytes = 0;
                out += "\"...\": " + scalarText(kNotShown);
                return false;
            }
            b.textBytes -= key.size();
            out += scalarText(key) + ": ";
            writeJsonText(v->entries[i].second, depth + 1, b, out);
            return true;
        });
        return;
    }
}

} // namespace

nlohmann::ordered_json pickleToJson(const Value* v)
{
    Budget b;
    return toJson(v, 0, b);
}

std::string pickleToJsonText(const Value* v)
{
    Budget b;
    std::string out;
    writeJsonText(v, 0, b, out);
    return out;
}

} // namespace ckpt::torch
