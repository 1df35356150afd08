#include "torch/py_repr.h"

#include "torch/torch_file.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace ckpt::torch {

using pickle::Kind;
using pickle::Value;

std::string bigIntToDecimal(std::string_view le)
{
    if (le.size() > 512) return "<int of " + std::to_string(le.size() * 8) + " bits>";
    std::vector<uint8_t> mag(le.begin(), le.end());
    const bool neg = !mag.empty() && (mag.back() & 0x80);
    if (neg) { // magnitude of a two's-complement number: invert, add one
        bool carry = true;
        for (auto& b : mag) {
            b = uint8_t(~b);
            if (carry) {
                carry = b == 0xFF;
                b = uint8_t(b + 1);
            }
        }
    }
    std::string digits;
    while (true) {
        bool zero = true;
        uint32_t rem = 0;
        for (size_t i = mag.size(); i-- > 0;) {
            const uint32_t cur = (rem << 8) | mag[i];
            mag[i] = uint8_t(cur / 10);
            rem = cur % 10;
            if (mag[i]) zero = false;
        }
        digits += char('0' + rem);
        if (zero) break;
    }
    if (neg) digits += '-';
    return {digits.rbegin(), digits.rend()};
}

namespace {

std::string floatRepr(double d)
{
    if (std::isnan(d)) return "nan";
    if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
    char buf[64];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, d);
    std::string s(buf, p);
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
}

std::string quote(std::string_view s, char q)
{
    std::string out(1, q);
    for (unsigned char c : s) {
        if (c == '\\' || c == uint8_t(q))
            out += '\\', out += char(c);
        else if (c == '\n')
            out += "\\n";
        else if (c < 0x20) {
            char b[8];
            std::snprintf(b, sizeof b, "\\x%02x", c);
            out += b;
        } else
            out += char(c);
    }
    return out + q;
}

// numpy writes arrays as _reconstruct(ndarray, (0,), b'b') + BUILD (version, shape, dtype,
// fortran, raw bytes), scalars as scalar(dtype, raw bytes) and dtypes as dtype('f4', ...): data,
// shown as numpy prints it (numpy 2 spells the module numpy._core, numpy 1 numpy.core).
bool isNumpy(const Value* fn, std::string_view name)
{
    return fn && fn->kind == Kind::Global && fn->name == name &&
           (fn->text == "numpy._core.multiarray" || fn->text == "numpy.core.multiarray" ||
            (name == "dtype" && fn->text == "numpy"));
}

// The raw bytes of a BUILD state's data: bytes, or (protocol 2) _codecs.encode(text, 'latin1'),
// whose text the pickle holds as UTF-8: each code point below 256 is one byte.
std::optional<std::string> rawBytes(const Value* v)
{
    if (!v) return std::nullopt;
    if (v->kind == Kind::Bytes) return v->text;
    if (!v->calls("_codecs", "encode") || !seqAt(v->args, 0)) return std::nullopt;
    const std::string& u = seqAt(v->args, 0)->text;
    std::string out;
    out.reserve(u.size());
    for (size_t i = 0; i < u.size(); ++i) {
        const auto c = uint8_t(u[i]);
        if (c < 0x80) {
            out += char(c);
        } else if ((c & 0xE0) == 0xC0 && i + 1 < u.size() && c <= 0xC3) {
            out += char(((c & 0x1F) << 6) | (uint8_t(u[++i]) & 0x3F));
        } else {
            return std::nullopt; // not latin-1 text
        }
    }
    return out;
}

// A numpy dtype code ('f4', '<i8', 'b1', ...) as numpy names it, with its element size.
struct NpType
{
    std::string name;
    char kind = 0; // 'f', 'i', 'u', 'b'
    int size = 0;
};
std::optional<NpType> npType(const Value* dtype)
{
    if (!dtype || !dtype->callable || !isNumpy(dtype->callable, "dtype")) return std::nullopt;
    const Value* code = seqAt(dtype->args, 0);
    if (!code || code->kind != Kind::Str || code->text.size() < 2) return std::nullopt;
    std::string c = code->text;
    if (c[0] == '<' || c[0] == '|' || c[0] == '=') c = c.substr(1);
    NpType t;
    t.kind = c[0];
    t.size = std::atoi(c.c_str() + 1);
    if (t.kind == 'f')
        t.name = "float" + std::to_string(t.size * 8);
    else if (t.kind == 'i')
        t.name = "int" + std::to_string(t.size * 8);
    else if (t.kind == 'u')
        t.name = "uint" + std::to_string(t.size * 8);
    else if (t.kind == 'b' && t.size == 1)
        t.name = "bool";
    else
        return NpType{c, 0, 0};
    return t;
}

// One element of a little-endian numpy buffer, as numpy prints it.
std::string npElement(const NpType& t, const uint8_t* p)
{
    auto rd = [&](auto x) {
        std::memcpy(&x, p, sizeof x);
        return x;
    };
    switch (t.kind) {
    case 'f':
        return t.size == 8 ? floatRepr(rd(double())) : t.size == 4 ? floatRepr(rd(float())) : "?";
    case 'i':
        return std::to_string(t.size == 8   ? rd(int64_t())
                              : t.size == 4 ? rd(int32_t())
                              : t.size == 2 ? rd(int16_t())
                                            : rd(int8_t()));
    case 'u':
        return std::to_string(t.size == 8   ? rd(uint64_t())
                              : t.size == 4 ? rd(uint32_t())
                              : t.size == 2 ? rd(uint16_t())
                                            : rd(uint8_t()));
    case 'b':
        return *p ? "True" : "False";
    }
    return "?";
}

// array([1, 2, 3], dtype=uint32), the first values of a long one; scalar(dtype, bytes) as
// np.float64(0.5); dtype('float32').
bool numpyRepr(const Value* v, std::string& out)
{
    const Value* fn = v->callable;
    if (isNumpy(fn, "dtype")) {
        const auto t = npType(v);
        out += "dtype('" + (t ? t->name : std::string("?")) + "')";
        return true;
    }
    if (isNumpy(fn, "scalar")) {
        const auto t = npType(seqAt(v->args, 0));
        const auto raw = rawBytes(seqAt(v->args, 1));
        if (!t || !raw || !t->kind || int(raw->size()) != t->size) return false;
        out += "np." + t->name + "(" + npElement(*t, reinterpret_cast<const uint8_t*>(raw->data())) + ")";
        return true;
    }
    if (!isNumpy(fn, "_reconstruct")) return false;
    const Value* st = v->state;
    if (!st || st->kind != Kind::Tuple || st->items.size() < 5) return false;
    const auto shape = asInts(st->items[1]);
    const auto t = npType(st->items[2]);
    if (!shape || !t) return false;
    uint64_t n = 1;
    for (int64_t d : *shape)
        n *= uint64_t(std::max<int64_t>(d, 0));
    const auto raw = rawBytes(st->items[4]);
    std::string shapeText;
    for (size_t i = 0; i < shape->size(); ++i)
        shapeText += (i ? ", " : "") + std::to_string((*shape)[i]);
    if (shape->size() == 1) shapeText += ",";
    if (!raw || !t->kind || raw->size() != n * uint64_t(t->size)) {
        out += "array(shape=(" + shapeText + "), dtype=" + t->name + ")";
        return true;
    }
    // All of a short array; the head of a long one, so the shape and dtype still fit a line.
    const uint64_t kShown = n <= 8 ? n : 4;
    out += "array([";
    for (uint64_t i = 0; i < kShown; ++i)
        out += (i ? ", " : "") +
               npElement(*t, reinterpret_cast<const uint8_t*>(raw->data()) + i * uint64_t(t->size));
    if (n > kShown) out += ", ...";
    out += "], shape=(" + shapeText + "), dtype=" + t->name + ")";
    return true;
}

// datetime.timedelta(days=1, seconds=5) as Python prints it (zero parts left out).
bool timedeltaRepr(const Value* v, std::string& out)
{
    if (!v->calls("datetime", "timedelta")) return false;
    static const char* names[] = {"days", "seconds", "microseconds"};
    std::string parts;
    for (size_t i = 0; i < 3; ++i) {
        const auto x = asInt(seqAt(v->args, i));
        if (seqAt(v->args, i) && !x) return false;
        if (x && *x) parts += (parts.empty() ? "" : ", ") + std::string(names[i]) + "=" + std::to_string(*x);
    }
    out += "datetime.timedelta(" + (parts.empty() ? std::string("0") : parts) + ")";
    return true;
}

// Renders one value tree into `out`, stopping once the text is past maxLen (pyRepr then cuts
// it) and past depth 6, so a huge or deeply nested value costs a line, not the whole tree.
class ReprWriter
{
public:
    ReprWriter(std::string& out, size_t maxLen) : m_out(out), m_maxLen(maxLen) {}

    void value(const Value* v, int depth)
    {
        if (m_out.size() > m_maxLen) return;
        if (!v) {
            m_out += "None";
            return;
        }
        if (depth > 6) {
            m_out += "...";
            return;
        }
        switch (v->kind) {
        case Kind::None:
            m_out += "None";
            break;
        case Kind::Bool:
            m_out += v->boolean ? "True" : "False";
            break;
        case Kind::Int:
            m_out += std::to_string(v->integer);
            break;
        case Kind::BigInt:
            m_out += bigIntToDecimal(v->text);
            break;
        case Kind::Float:
            m_out += floatRepr(v->real);
            break;
        case Kind::Str:
            m_out += quote(v->text.substr(0, m_maxLen), '\'');
            break;
        case Kind::Bytes:
            m_out += "b" + quote(v->text.substr(0, m_maxLen), '\'');
            break;
        case Kind::ByteArray:
            m_out += "bytearray(b" + quote(v->text.substr(0, m_maxLen), '\'') + ")";
            break;
        case Kind::List:
            sequence(v->items, depth, "[", "]");
            break;
        case Kind::Tuple:
            // (x,): a one-item tuple needs its comma
            sequence(v->items, depth, "(", v->items.size() == 1 ? ",)" : ")");
            break;
        case Kind::Set:
            setLike(v->items, depth, false);
            break;
        case Kind::FrozenSet:
            setLike(v->items, depth, true);
            break;
        case Kind::Dict:
            dict(v, depth);
            break;
        case Kind::Global:
            m_out += v->text + "." + v->name;
            break;
        case Kind::PersistentRef:
            m_out += "<storage>";
            break;
        case Kind::Ext:
            m_out += "<ext " + std::to_string(v->integer) + ">";
            break;
        case Kind::Call:
            call(v, depth);
            break;
        }
    }

private:
    // The one loop behind lists, tuples, sets, torch.Size and call arguments: the items of a
    // container at `depth`, comma-separated, as long as the text is still short enough.
    void sequence(const std::vector<Value*>& items, int depth, const char* open, const char* close)
    {
        m_out += open;
        for (size_t i = 0; i < items.size() && m_out.size() <= m_maxLen; ++i) {
            if (i) m_out += ", ";
            value(items[i], depth + 1);
        }
        m_out += close;
    }

    // {1, 2} and frozenset({1, 2}); an empty one has no literal, so it reads set() or frozenset().
    void setLike(const std::vector<Value*>& items, int depth, bool frozen)
    {
        if (items.empty())
            m_out += frozen ? "frozenset()" : "set()";
        else
            sequence(items, depth, frozen ? "frozenset({" : "{", frozen ? "})" : "}");
    }

    void dict(const Value* v, int depth)
    {
        m_out += "{";
        for (size_t i = 0; i < v->entries.size() && m_out.size() <= m_maxLen; ++i) {
            if (i) m_out += ", ";
            value(v->entries[i].first, depth + 1);
            m_out += ": ";
            value(v->entries[i].second, depth + 1);
        }
        m_out += "}";
    }

    // A REDUCE or NEWOBJ: the builtins whose value is plain data as Python prints them, anything
    // else as the call itself, module.Class(args).
    void call(const Value* v, int depth)
    {
        const Value* fn = v->callable;
        if (timedeltaRepr(v, m_out) || numpyRepr(v, m_out)) return;
        const Value* first = seqAt(v->args, 0);
        if (fn && fn->isGlobal("torch.torch_version", "TorchVersion") && first) {
            value(first, depth + 1); // a str subclass: its text
            return;
        }
        if (fn && fn->isGlobal("_codecs", "encode") && first) {
            m_out += "b" + quote(first->text, '\'');
            return;
        }
        if (fn && fn->isGlobal("torch", "Size") && first) {
            sequence(first->items, depth, "torch.Size([", "])");
            return;
        }
        // set([1]) and frozenset([2]) as Python prints them.
        const bool set = fn && fn->isGlobal("builtins", "set"),
                   frozen = fn && fn->isGlobal("builtins", "frozenset");
        if ((set || frozen) && first && first->kind == Kind::List) {
            setLike(first->items, depth, frozen);
            return;
        }
        if (fn && fn->kind == Kind::Global)
            m_out += (fn->text == "builtins" ? "" : fn->text + ".") + fn->name;
        else
            m_out += "<call>";
        if (v->args) {
            static const std::vector<Value*> kNone;
            sequence(v->args->kind == Kind::Tuple ? v->args->items : kNone, depth, "(", ")");
        }
    }

    std::string& m_out;
    size_t m_maxLen;
};

} // namespace

bool isNumpyValue(const Value* v)
{
    return v && v->kind == Kind::Call &&
           (isNumpy(v->callable, "_reconstruct") || isNumpy(v->callable, "scalar") ||
            isNumpy(v->callable, "dtype"));
}

std::string pyRepr(const Value* v, size_t maxLen)
{
    std::string out;
    ReprWriter(out, maxLen).value(v, 0);
    if (out.size() > maxLen) out = out.substr(0, maxLen) + "...";
    return out;
}

} // namespace ckpt::torch
