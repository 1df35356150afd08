#include "pickle/machine.h"

#include "pickle/opcodes.h"

#include <charconv>
#include <cstring>
#include <limits>
#include <unordered_map>

namespace ckpt::pickle {

namespace {

using io::ByteSpan;
using io::Cursor;

void appendUtf8(std::string& out, uint32_t cp)
{
    if (cp < 0x80) {
        out += char(cp);
    } else if (cp < 0x800) {
        out += char(0xC0 | (cp >> 6));
        out += char(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += char(0xE0 | (cp >> 12));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    } else {
        out += char(0xF0 | (cp >> 18));
        out += char(0x80 | ((cp >> 12) & 0x3F));
        out += char(0x80 | ((cp >> 6) & 0x3F));
        out += char(0x80 | (cp & 0x3F));
    }
}

bool validUtf8(std::string_view s)
{
    size_t i = 0;
    while (i < s.size()) {
        const auto c = uint8_t(s[i]);
        size_t n;
        if (c < 0x80)
            n = 0;
        else if ((c >> 5) == 6)
            n = 1;
        else if ((c >> 4) == 14)
            n = 2;
        else if ((c >> 3) == 30)
            n = 3;
        else
            return false;
        if (i + n >= s.size() && n > 0) return false;
        for (size_t k = 1; k <= n; ++k)
            if ((uint8_t(s[i + k]) >> 6) != 2) return false;
        i += n + 1;
    }
    return true;
}

int hexDigit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

// Converts a decimal string (optional sign) into little-endian two's-complement bytes.
std::string decimalToTwosComplement(std::string_view digits, bool& ok)
{
    ok = false;
    bool neg = false;
    if (!digits.empty() && (digits[0] == '-' || digits[0] == '+')) {
        neg = digits[0] == '-';
        digits.remove_prefix(1);
    }
    if (digits.empty() || digits.size() > 4300) return {}; // CPython's own int/str limit
    std::vector<uint32_t> limbs{0};
    for (char ch : digits) {
        if (ch < '0' || ch > '9') return {};
        uint64_t carry = uint64_t(ch - '0');
        for (auto& l : limbs) {
            const uint64_t v = uint64_t(l) * 10 + carry;
            l = uint32_t(v);
            carry = v >> 32;
        }
        if (carry) limbs.push_back(uint32_t(carry));
    }
    std::string out;
    for (uint32_t l : limbs)
        for (int k = 0; k < 4; ++k)
            out += char((l >> (8 * k)) & 0xFF);
    out += '\0'; // room for the sign bit
    if (neg) {   // two's complement: invert and add one
        bool carry = true;
        for (auto& c : out) {
            uint8_t b = uint8_t(~uint8_t(c));
            if (carry) {
                carry = (b == 0xFF);
                b = uint8_t(b + 1);
            }
            c = char(b);
        }
    }
    // The shortest form, as CPython's encode_long writes it: the LONG text form and LONG1 give
    // the same bytes for the same number (torch's legacy magic number is compared byte for byte).
    while (out.size() > 1 && ((out.back() == '\0' && !(uint8_t(out[out.size() - 2]) & 0x80)) ||
                              (uint8_t(out.back()) == 0xFF && (uint8_t(out[out.size() - 2]) & 0x80))))
        out.pop_back();
    ok = true;
    return out;
}

class Machine
{
public:
    Machine(ByteSpan data, Arena& arena, const PersistentLoad& pl, const Limits& limits,
            std::vector<GlobalRef>* globalsSeen)
        : m_in(data, "pickle"), m_arena(arena), m_persistentLoad(pl), m_limits(limits),
          m_globalsSeen(globalsSeen)
    {
    }

    Result run();

private:
    [[noreturn]] void fail(const std::string& why) { throw Error("pickle: " + why, {}, m_opOffset); }

    Value* make(Kind k)
    {
        if (m_arena.size() >= m_limits.maxNodes)
            fail("more than " + std::to_string(m_limits.maxNodes) + " objects (limit)");
        return m_arena.make(k);
    }
    void push(Value* v)
    {
        if (m_stack.size() >= m_limits.maxStack) fail("stack deeper than the limit");
        m_stack.push_back(v);
    }
    Value* pop()
    {
        if (m_stack.size() <= base()) fail("stack underflow");
        Value* v = m_stack.back();
        m_stack.pop_back();
        return v;
    }
    Value* top()
    {
        if (m_stack.size() <= base()) fail("stack underflow");
        return m_stack.back();
    }
    size_t base() const { return m_marks.empty() ? 0 : m_marks.back(); }
    std::vector<Value*> popMark()
    {
        if (m_marks.empty()) fail("no MARK on the stack");
        const size_t b = m_marks.back();
        m_marks.pop_back();
        std::vector<Value*> items(m_stack.begin() + std::ptrdiff_t(b), m_stack.end());
        m_stack.resize(b);
        return items;
    }

    Value* makeInt(int64_t i)
    {
        Value* v = make(Kind::Int);
        v->integer = i;
        return v;
    }
    Value* makeText(Kind k, std::string s)
    {
        Value* v = make(k);
        v->text = std::move(s);
        return v;
    }
    // Python-2 byte strings are decoded as UTF-8 (torch.load's encoding) when they are valid UTF-8.
    Value* makePy2String(std::string s)
    {
        const bool utf8 = validUtf8(s);
        return makeText(utf8 ? Kind::Str : Kind::Bytes, std::move(s));
    }
    Value* makeLong(ByteSpan b)
    {
        if (b.size() <= 8) {
            int64_t v = 0;
            if (!b.empty()) {
                uint64_t u = 0;
                for (size_t i = 0; i < b.size(); ++i)
                    u |= uint64_t(b[i]) << (8 * i);
                if (b.size() < 8 && (b.back() & 0x80)) u |= ~uint64_t(0) << (8 * b.size());
                v = int64_t(u);
            }
            return makeInt(v);
        }
        return makeText(Kind::BigInt, std::string(io::asStringView(b)));
    }
    Value* makeDecimal(std::string_view t)
    {
        int64_t v = 0;
        const char* first = t.data();
        if (!t.empty() && t[0] == '+') ++first;
        auto [p, ec] = std::from_chars(first, t.data() + t.size(), v);
        if (ec == std::errc() && p == t.data() + t.size()) return makeInt(v);
        bool ok = false;
        std::string bytes = decimalToTwosComplement(t, ok);
        if (!ok) fail("bad integer literal '" + std::string(t.substr(0, 40)) + "'");
        return makeLong({reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()});
    }
    uint64_t decimalIndex(std::string_view t)
    {
        uint64_t v = 0;
        auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
        if (ec != std::errc() || p != t.data() + t.size()) fail("bad memo index");
        return v;
    }
    Value* makeGlobal(std::string module, std::string name)
    {
        normaliseGlobal(module, name);
        m_result.globals.push_back({module, name, m_opOffset});
        if (m_globalsSeen) m_globalsSeen->push_back(m_result.globals.back());
        Value* g = make(Kind::Global);
        g->text = std::move(module);
        g->name = std::move(name);
        return g;
    }
    Value* makeSequence(Kind k, std::vector<Value*> items)
    {
        Value* v = make(k);
        v->items = std::move(items);
        return v;
    }
    // Picklers number memo slots 0, 1, 2, ... (MEMOIZE always does), so a vector indexed by the
    // key serves them without hashing; a key far beyond what is stored (a hand-made pickle) goes
    // to the map, so a huge key cannot make the vector huge.
    void memoPut(uint64_t idx, Value* v)
    {
        // A key already stored (in either place) is overwritten and not counted again.
        bool known = false;
        if (idx < m_memoDense.size() && m_memoDense[idx]) known = true;
        auto it = m_memo.empty() ? m_memo.end() : m_memo.find(idx);
        if (it != m_memo.end()) known = true;
        if (!known && m_memoCount >= m_limits.maxMemo) fail("memo larger than the limit");
        if (!known) ++m_memoCount;
        // Dense only while the vector stays within twice the entries (+1024): sparse keys stepping
        // 1024 past the end each time cannot grow it toward the limit with few entries.
        if (idx <= m_memoDense.size() + 1024 && idx < 2 * m_memoCount + 1024 && idx < m_limits.maxMemo) {
            if (it != m_memo.end()) m_memo.erase(it);
            if (idx >= m_memoDense.size()) m_memoDense.resize(idx + 1, nullptr);
            m_memoDense[idx] = v;
        } else {
            m_memo[idx] = v;
        }
    }
    Value* memoGet(uint64_t idx)
    {
        if (idx < m_memoDense.size() && m_memoDense[idx]) return m_memoDense[idx];
        auto it = m_memo.find(idx);
        if (it == m_memo.end()) fail("memo key " + std::to_string(idx) + " was never stored");
        return it->second;
    }
    void appendTo(Value* target, const std::vector<Value*>& items)
    {
        // Lists, and opaque objects whose own append Python would call: record the items.
        if (target->kind != Kind::List && target->kind != Kind::Call)
            fail("APPEND to a value that is not a list");
        target->items.insert(target->items.end(), items.begin(), items.end());
    }
    void setItems(Value* target, const std::vector<Value*>& kv)
    {
        if (kv.size() % 2) fail("odd number of items for SETITEMS");
        if (target->kind != Kind::Dict && target->kind != Kind::Call)
            fail("SETITEM on a value that is not a dict");
        for (size_t i = 0; i < kv.size(); i += 2)
            target->entries.emplace_back(kv[i], kv[i + 1]);
    }
    Value* makeCall(Value* callable, Value* args, bool isNew)
    {
        Value* c = make(Kind::Call);
        c->callable = callable;
        c->args = args;
        c->isNew = isNew;
        return c;
    }
    std::string unquote(std::string_view t);
    std::string rawUnicodeEscape(std::string_view t);

    Cursor m_in;
    Arena& m_arena;
    const PersistentLoad& m_persistentLoad;
    Limits m_limits;
    std::vector<GlobalRef>* m_globalsSeen;
    std::vector<Value*> m_stack;
    std::vector<size_t> m_marks;
    std::vector<Value*> m_memoDense;
    std::unordered_map<uint64_t, Value*> m_memo; // keys past the dense run
    size_t m_memoCount = 0;
    Result m_result;
    uint64_t m_opOffset = 0;
};

std::string Machine::unquote(std::string_view t)
{
    if (t.size() < 2 || (t[0] != '\'' && t[0] != '"') || t.back() != t[0])
        fail("STRING argument is not a quoted literal");
    t = t.substr(1, t.size() - 2);
    std::string out;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] != '\\' || i + 1 == t.size()) {
            out += t[i];
            continue;
        }
        const char e = t[++i];
        switch (e) {
        case 'n':
            out += '\n';
            break;
        case 't':
            out += '\t';
            break;
        case 'r':
            out += '\r';
            break;
        case 'a':
            out += '\a';
            break;
        case 'b':
            out += '\b';
            break;
        case 'f':
            out += '\f';
            break;
        case 'v':
            out += '\v';
            break;
        case 'x':
            if (i + 2 < t.size() + 0 && hexDigit(t[i + 1]) >= 0 && hexDigit(t[i + 2]) >= 0) {
                out += char(hexDigit(t[i + 1]) * 16 + hexDigit(t[i + 2]));
                i += 2;
            } else {
                fail("bad \\x escape in STRING");
            }
            break;
        default:
            if (e >= '0' && e <= '7') {
                int v = e - '0';
                for (int k = 0; k < 2 && i + 1 < t.size() && t[i + 1] >= '0' && t[i + 1] <= '7'; ++k)
                    v = v * 8 + (t[++i] - '0');
                out += char(v & 0xFF);
            } else {
                out += e; // \\ \' \" and unknown escapes keep the character
            }
        }
    }
    return out;
}

std::string Machine::rawUnicodeEscape(std::string_view t)
{
    std::string out;
    for (size_t i = 0; i < t.size(); ++i) {
        if (t[i] == '\\' && i + 1 < t.size() && (t[i + 1] == 'u' || t[i + 1] == 'U')) {
            const size_t n = t[i + 1] == 'u' ? 4 : 8;
            if (i + 2 + n > t.size()) fail("truncated \\u escape in UNICODE");
            uint32_t cp = 0;
            for (size_t k = 0; k < n; ++k) {
                const int d = hexDigit(t[i + 2 + k]);
                if (d < 0) fail("bad \\u escape in UNICODE");
                cp = cp * 16 + uint32_t(d);
            }
            if (cp > 0x10FFFF) fail("code point out of range in UNICODE");
            appendUtf8(out, cp);
            i += 1 + n;
        } else {
            appendUtf8(out, uint8_t(t[i])); // latin-1
        }
    }
    return out;
}

Result Machine::run()
{
    for (;;) {
        m_opOffset = m_in.pos();
        const uint8_t op = m_in.u8();
        switch (op) {
        case opcode::MARK:
            if (m_marks.size() >= m_limits.maxStack) fail("too many nested MARKs");
            m_marks.push_back(m_stack.size());
            break;
        case opcode::STOP: {
            m_result.root = pop();
            m_result.end = m_in.pos();
            return std::move(m_result);
        }
        case opcode::POP:
            if (m_stack.size() > base())
                m_stack.pop_back();
            else
                popMark();
            break;
        case opcode::POP_MARK:
            popMark();
            break;
        case opcode::DUP:
            push(top());
            break;
        case opcode::FLOAT: {
            const std::string_view t = m_in.line();
            Value* v = make(Kind::Float);
            auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v->real);
            if (ec != std::errc() || p != t.data() + t.size()) {
                if (t == "nan")
                    v->real = std::numeric_limits<double>::quiet_NaN();
                else if (t == "inf")
                    v->real = std::numeric_limits<double>::infinity();
                else if (t == "-inf")
                    v->real = -std::numeric_limits<double>::infinity();
                else
                    fail("bad FLOAT literal");
            }
            push(v);
            break;
        }
        case opcode::INT: {
            const std::string_view t = m_in.line();
            if (t == "00" || t == "01") {
                Value* v = make(Kind::Bool);
                v->boolean = t == "01";
                push(v);
            } else {
                push(makeDecimal(t));
            }
            break;
        }
        case opcode::LONG: {
            std::string_view t = m_in.line();
            if (!t.empty() && t.back() == 'L') t.remove_suffix(1);
            push(makeDecimal(t));
            break;
        }
        case opcode::NONE:
            push(make(Kind::None));
            break;
        case opcode::PERSID: {
            Value* pid = makeText(Kind::Str, std::string(m_in.line()));
            Value* r = make(Kind::PersistentRef);
            r->args = pid;
            if (m_persistentLoad) r->integer = m_persistentLoad(pid);
            push(r);
            break;
        }
        case opcode::BINPERSID: {
            Value* pid = pop();
            Value* r = make(Kind::PersistentRef);
            r->args = pid;
            if (m_persistentLoad) r->integer = m_persistentLoad(pid);
            push(r);
            break;
        }
        case opcode::REDUCE: {
            Value* args = pop();
            Value* f = pop();
            push(makeCall(f, args, false));
            break;
        }
        case opcode::STRING:
            push(makePy2String(unquote(m_in.line())));
            break;
        case opcode::UNICODE:
            push(makeText(Kind::Str, rawUnicodeEscape(m_in.line())));
            break;
        case opcode::APPEND: {
            Value* v = pop();
            appendTo(top(), {v});
            break;
        }
        case opcode::BUILD: {
            Value* st = pop();
            top()->state = st;
            break;
        }
        case opcode::GLOBAL: {
            std::string module(m_in.line());
            std::string name(m_in.line());
            push(makeGlobal(std::move(module), std::move(name)));
            break;
        }
        case opcode::DICT: {
            auto kv = popMark();
            Value* d = make(Kind::Dict);
            setItems(d, kv);
            push(d);
            break;
        }
        case opcode::GET:
            push(memoGet(decimalIndex(m_in.line())));
            break;
        case opcode::INST: {
            std::string module(m_in.line());
            std::string name(m_in.line());
            auto args = popMark();
            Value* cls = makeGlobal(std::move(module), std::move(name));
            push(makeCall(cls, makeSequence(Kind::Tuple, std::move(args)), true));
            break;
        }
        case opcode::LIST:
            push(makeSequence(Kind::List, popMark()));
            break;
        case opcode::PUT:
            memoPut(decimalIndex(m_in.line()), top());
            break;
        case opcode::SETITEM: {
            Value* v = pop();
            Value* k = pop();
            setItems(top(), {k, v});
            break;
        }
        case opcode::TUPLE:
            push(makeSequence(Kind::Tuple, popMark()));
            break;
        case opcode::BINFLOAT: { // big-endian
            const uint64_t bits = __builtin_bswap64(m_in.le<uint64_t>());
            Value* v = make(Kind::Float);
            std::memcpy(&v->real, &bits, 8);
            push(v);
            break;
        }
        case opcode::BININT:
            push(makeInt(m_in.le<int32_t>()));
            break;
        case opcode::BININT1:
            push(makeInt(m_in.u8()));
            break;
        case opcode::BININT2:
            push(makeInt(m_in.le<uint16_t>()));
            break;
        case opcode::BINSTRING: {
            const int32_t n = m_in.le<int32_t>();
            if (n < 0) fail("negative BINSTRING length");
            push(makePy2String(std::string(io::asStringView(m_in.take(uint64_t(n))))));
            break;
        }
        case opcode::SHORT_BINSTRING:
            push(makePy2String(std::string(io::asStringView(m_in.take(m_in.u8())))));
            break;
        case opcode::BINUNICODE:
            push(makeText(Kind::Str, std::string(io::asStringView(m_in.take(m_in.le<uint32_t>())))));
            break;
        case opcode::EMPTY_LIST:
            push(make(Kind::List));
            break;
        case opcode::EMPTY_DICT:
            push(make(Kind::Dict));
            break;
        case opcode::EMPTY_TUPLE:
            push(make(Kind::Tuple));
            break;
        case opcode::APPENDS: {
            auto items = popMark();
            appendTo(top(), items);
            break;
        }
        case opcode::BINGET:
            push(memoGet(m_in.u8()));
            break;
        case opcode::LONG_BINGET:
            push(memoGet(m_in.le<uint32_t>()));
            break;
        case opcode::OBJ: {
            auto items = popMark();
            if (items.empty()) fail("OBJ without a class");
            Value* cls = items.front();
            items.erase(items.begin());
            push(makeCall(cls, makeSequence(Kind::Tuple, std::move(items)), true));
            break;
        }
        case opcode::BINPUT:
            memoPut(m_in.u8(), top());
            break;
        case opcode::LONG_BINPUT:
            memoPut(m_in.le<uint32_t>(), top());
            break;
        case opcode::SETITEMS: {
            auto kv = popMark();
            setItems(top(), kv);
            break;
        }
        case opcode::PROTO: {
            const uint8_t p = m_in.u8();
            if (p > 5) fail("unsupported pickle protocol " + std::to_string(p));
            m_result.protocol = p;
            break;
        }
        case opcode::NEWOBJ: {
            Value* args = pop();
            Value* cls = pop();
            push(makeCall(cls, args, true));
            break;
        }
        case opcode::EXT1:
        case opcode::EXT2:
        case opcode::EXT4: { // the copyreg registry is empty in any real checkpoint
            const int64_t code = op == opcode::EXT1   ? m_in.u8()
                                 : op == opcode::EXT2 ? m_in.le<uint16_t>()
                                                      : m_in.le<int32_t>();
            if (code <= 0) fail("EXT code must be positive");
            Value* v = make(Kind::Ext);
            v->integer = code;
            push(v);
            break;
        }
        case opcode::TUPLE1:
            push(makeSequence(Kind::Tuple, {pop()}));
            break;
        case opcode::TUPLE2: {
            Value* b = pop();
            Value* a = pop();
            push(makeSequence(Kind::Tuple, {a, b}));
            break;
        }
        case opcode::TUPLE3: {
            Value* c = pop();
            Value* b = pop();
            Value* a = pop();
            push(makeSequence(Kind::Tuple, {a, b, c}));
            break;
        }
        case opcode::NEWTRUE:
        case opcode::NEWFALSE: {
            Value* v = make(Kind::Bool);
            v->boolean = op == opcode::NEWTRUE;
            push(v);
            break;
        }
        case opcode::LONG1:
            push(makeLong(m_in.take(m_in.u8())));
            break;
        case opcode::LONG4: {
            const int32_t n = m_in.le<int32_t>();
            if (n < 0) fail("negative LONG4 length");
            push(makeLong(m_in.take(uint64_t(n))));
            break;
        }
        case opcode::BINBYTES:
            push(makeText(Kind::Bytes, std::string(io::asStringView(m_in.take(m_in.le<uint32_t>())))));
            break;
        case opcode::SHORT_BINBYTES:
            push(makeText(Kind::Bytes, std::string(io::asStringView(m_in.take(m_in.u8())))));
            break;
        case opcode::SHORT_BINUNICODE:
            push(makeText(Kind::Str, std::string(io::asStringView(m_in.take(m_in.u8())))));
            break;
        case opcode::BINUNICODE8:
            push(makeText(Kind::Str, std::string(io::asStringView(m_in.take(m_in.le<uint64_t>())))));
            break;
        case opcode::BINBYTES8:
            push(makeText(Kind::Bytes, std::string(io::asStringView(m_in.take(m_in.le<uint64_t>())))));
            break;
        case opcode::BYTEARRAY8:
            push(makeText(Kind::ByteArray, std::string(io::asStringView(m_in.take(m_in.le<uint64_t>())))));
            break;
        case opcode::EMPTY_SET:
            push(make(Kind::Set));
            break;
        case opcode::ADDITEMS: {
            auto items = popMark();
            Value* s = top();
            if (s->kind != Kind::Set) fail("ADDITEMS on a value that is not a set");
            s->items.insert(s->items.end(), items.begin(), items.end());
            break;
        }
        case opcode::FROZENSET:
            push(makeSequence(Kind::FrozenSet, popMark()));
            break;
        case opcode::NEWOBJ_EX: {
            Value* kwargs = pop();
            Value* args = pop();
            Value* cls = pop();
            Value* c = makeCall(cls, args, true);
            c->kwargs = kwargs;
            push(c);
            break;
        }
        case opcode::STACK_GLOBAL: {
            Value* name = pop();
            Value* module = pop();
            if (module->kind != Kind::Str || name->kind != Kind::Str)
                fail("STACK_GLOBAL operands are not strings");
            push(makeGlobal(module->text, name->text));
            break;
        }
        case opcode::MEMOIZE: {
            Value* v = top();
            memoPut(m_memoCount, v);
            break;
        }
        case opcode::FRAME: { // a framing hint; the length only has to be plausible
            const uint64_t n = m_in.le<uint64_t>();
            if (n > m_in.remaining()) fail("FRAME longer than the rest of the stream");
            break;
        }
        case opcode::NEXT_BUFFER:
            fail("NEXT_BUFFER: out-of-band buffers are not part of a checkpoint file");
        case opcode::READONLY_BUFFER:
            fail("READONLY_BUFFER: out-of-band buffers are not part of a checkpoint file");
        default: {
            char hex[8];
            std::snprintf(hex, sizeof hex, "0x%02x", op);
            fail(std::string("unknown opcode ") + hex);
        }
        }
    }
}

} // namespace

Result parse(io::ByteSpan data, Arena& arena, const PersistentLoad& persistentLoad, const Limits& limits,
             std::vector<GlobalRef>* globalsSeen)
{
    Machine m(data, arena, persistentLoad, limits, globalsSeen);
    return m.run();
}

void normaliseGlobal(std::string& module, std::string& name)
{
    struct Rename
    {
        const char* fromModule;
        const char* fromName; // nullptr: any name
        const char* toModule;
        const char* toName; // nullptr: keep the name
    };
    static constexpr Rename kRenames[] = {
        {"__builtin__", "xrange", "builtins", "range"},
        {"__builtin__", "reduce", "functools", "reduce"},
        {"__builtin__", "intern", "sys", "intern"},
        {"__builtin__", "unichr", "builtins", "chr"},
        {"__builtin__", "unicode", "builtins", "str"},
        {"__builtin__", "basestring", "builtins", "str"},
        {"__builtin__", "long", "builtins", "int"},
        {"itertools", "izip", "builtins", "zip"},
        {"itertools", "imap", "builtins", "map"},
        {"itertools", "ifilter", "builtins", "filter"},
        {"itertools", "ifilterfalse", "itertools", "filterfalse"},
        {"itertools", "izip_longest", "itertools", "zip_longest"},
        {"exceptions", "StandardError", "builtins", "Exception"},
        {"UserDict", "UserDict", "collections", "UserDict"},
        {"UserList", "UserList", "collections", "UserList"},
        {"UserString", "UserString", "collections", "UserString"},
        {"__builtin__", nullptr, "builtins", nullptr},
        {"exceptions", nullptr, "builtins", nullptr},
        {"copy_reg", nullptr, "copyreg", nullptr},
        {"Queue", nullptr, "queue", nullptr},
        {"repr", nullptr, "reprlib", nullptr},
        {"_abcoll", nullptr, "collections.abc", nullptr},
        {"whichdb", nullptr, "dbm", nullptr},
        {"StringIO", nullptr, "io", nullptr},
        {"cStringIO", nullptr, "io", nullptr},
        {"cPickle", nullptr, "pickle", nullptr},
        {"commands", nullptr, "subprocess", nullptr},
        {"urllib2", nullptr, "urllib.request", nullptr},
        {"torch.tensor", nullptr, "torch._tensor", nullptr},
    };
    for (const Rename& r : kRenames) {
        if (module != r.fromModule) continue;
        if (r.fromName && name != r.fromName) continue;
        module = r.toModule;
        if (r.toName) name = r.toName;
        return;
    }
}

} // namespace ckpt::pickle
