#include "pickle/writer.h"

#include "io/bytes.h"
#include "io/error.h"
#include "pickle/opcodes.h"

#include <bit>
#include <cstring>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace ckpt::pickle {

namespace {

// The opcodes by their names in CPython's pickletools.
using namespace opcode;

class Writer
{
public:
    explicit Writer(const WriteOptions& o) : m_opt(o) {}

    std::string run(const Value* root)
    {
        root = sub(root);
        countReferences(root);
        ++m_refs[root]; // the caller holds one reference too: a cycle back to the root is shared
        op(PROTO);
        op(uint8_t(m_opt.protocol));
        save(root, 0);
        op(STOP);
        return std::move(m_out);
    }

private:
    // In-degree of every node: those reached more than once are memoised when written.
    void countReferences(const Value* root)
    {
        std::vector<const Value*> todo{root};
        std::unordered_set<const Value*> seen;
        while (!todo.empty()) {
            const Value* v = todo.back();
            todo.pop_back();
            if (!v || !seen.insert(v).second) continue;
            forEachChild(v, [&](const Value* c) {
                c = sub(c);
                if (!c) return;
                ++m_refs[c];
                todo.push_back(c);
            });
        }
    }

    template <typename T> void le(T v) // pickle's binary integers are little-endian, whatever this machine is
    {
        using U = std::make_unsigned_t<T>;
        for (size_t k = 0; k < sizeof v; ++k)
            m_out += char(uint8_t(U(v) >> (8 * k)));
    }
    void op(uint8_t c) { m_out += char(c); }

    // Containers and objects are always memoised, as CPython does: one of them may lie on a
    // cycle that is only closed further down (a tuple reached again through a list inside it).
    // Scalars only when reached twice, so that sharing is kept without a memo entry per string.
    bool shared(const Value* v) const
    {
        if (v->isContainer() || v->kind == Kind::Call || v->kind == Kind::PersistentRef) return true;
        const auto it = m_refs.find(v);
        return it != m_refs.end() && it->second > 1;
    }
    void memoise(const Value* v)
    {
        if (!shared(v)) return;
        const uint32_t id = uint32_t(m_memo.size());
        m_memo[v] = id;
        if (id < 256) {
            op(BINPUT);
            op(uint8_t(id));
        } else {
            op(LONG_BINPUT);
            le<uint32_t>(id);
        }
    }
    bool fromMemo(const Value* v)
    {
        const auto it = m_memo.find(v);
        if (it == m_memo.end()) return false;
        if (it->second < 256) {
            op(BINGET);
            op(uint8_t(it->second));
        } else {
            op(LONG_BINGET);
            le<uint32_t>(it->second);
        }
        return true;
    }

    void saveInt(int64_t i)
    {
        if (i >= 0 && i < 256) {
            op(BININT1);
            op(uint8_t(i));
        } else if (i >= 0 && i < 65536) {
            op(BININT2);
            le<uint16_t>(uint16_t(i));
        } else if (i >= INT32_MIN && i <= INT32_MAX) {
            op(BININT);
            le<int32_t>(int32_t(i));
        } else { // LONG1 with the shortest two's-complement bytes, as CPython's encode_long
            std::string b;
            for (int k = 0; k < 8; ++k)
                b += char(uint8_t(uint64_t(i) >> (8 * k)));
            while (b.size() > 1 && ((b.back() == 0 && !(b[b.size() - 2] & 0x80)) ||
                                    (uint8_t(b.back()) == 0xff && (b[b.size() - 2] & 0x80))))
                b.pop_back();
            op(LONG1);
            op(uint8_t(b.size()));
            m_out += b;
        }
    }
    void saveStr(const std::string& s)
    {
        op(BINUNICODE);
        le<uint32_t>(uint32_t(s.size()));
        m_out += s;
    }
    void saveGlobal(const std::string& module, const std::string& name)
    {
        // GLOBAL spells the names as two text lines, so a name holding a newline (STACK_GLOBAL
        // takes any string) or longer than the reader's line limit would be read back as other
        // names and opcodes. Protocol 4 has STACK_GLOBAL for those; older ones cannot say them.
        const auto unsayable = [](const std::string& s) {
            return s.find('\n') != std::string::npos || s.size() >= io::kMaxTextLine;
        };
        if (unsayable(module) || unsayable(name)) {
            if (m_opt.protocol < 4)
                throw Error("pickle writer: the global '" + module.substr(0, 60) + "." + name.substr(0, 60) +
                            "' has a newline or an over-long name, which protocol " +
                            std::to_string(m_opt.protocol) + " cannot express");
            saveStr(module);
            saveStr(name);
            op(STACK_GLOBAL);
            return;
        }
        op(GLOBAL);
        m_out += module + "\n" + name + "\n";
    }
    void saveBytes(const std::string& b)
    {
        if (m_opt.protocol >= 3) {
            if (b.size() < 256) {
                op(SHORT_BINBYTES);
                op(uint8_t(b.size()));
            } else {
                op(BINBYTES);
                le<uint32_t>(uint32_t(b.size()));
            }
            m_out += b;
            return;
        }
        // Protocol 2 has no bytes: CPython writes _codecs.encode(latin-1 text, 'latin1').
        saveGlobal("_codecs", "encode");
        std::string latin1;
        for (unsigned char c : b) {
            if (c < 0x80)
                latin1 += char(c);
            else {
                latin1 += char(0xc0 | (c >> 6));
                latin1 += char(0x80 | (c & 0x3f));
            }
        }
        saveStr(latin1);
        saveStr("latin1");
        op(TUPLE2);
        op(REDUCE);
    }

    // `callable(*args)` for the containers protocol 2 has no opcode for, as CPython writes them.
    void saveBuiltinCall(const char* name, const Value* v, int depth)
    {
        saveGlobal(m_opt.protocol >= 3 ? "builtins" : "__builtin__", name);
        op(EMPTY_LIST);
        saveMarked(v->items, depth, APPENDS);
        op(TUPLE1);
        op(REDUCE);
    }

    void saveTuple(const Value* v, int depth)
    {
        const size_t n = v->items.size();
        if (n == 0) {
            op(EMPTY_TUPLE);
            memoise(v);
            return;
        }
        if (n > 3) op(MARK);
        m_inProgress.insert(v);
        for (const Value* c : v->items)
            save(c, depth + 1);
        m_inProgress.erase(v);
        // A tuple reached again through its own items (via a list or dict) was written there
        // already: drop what was pushed and take that one, as CPython's save_tuple does.
        if (m_memo.count(v)) {
            if (n > 3)
                op(POP_MARK);
            else
                for (size_t i = 0; i < n; ++i)
                    op(POP);
            fromMemo(v);
            return;
        }
        op(n == 1 ? TUPLE1 : n == 2 ? TUPLE2 : n == 3 ? TUPLE3 : TUPLE);
        memoise(v);
    }

    // MARK, the items, then the opcode that adds them all at once; nothing for no items.
    void saveMarked(const std::vector<Value*>& items, int depth, uint8_t adder)
    {
        if (items.empty()) return;
        op(MARK);
        for (const Value* c : items)
            save(c, depth + 1);
        op(adder);
    }

    // The items and entries of a list, a dict, or an object that was appended to or set items on.
    void saveItems(const Value* v, int depth)
    {
        saveMarked(v->items, depth, APPENDS);
        if (!v->entries.empty()) {
            op(MARK);
            for (const auto& [k, x] : v->entries) {
                save(k, depth + 1);
                save(x, depth + 1);
            }
            op(SETITEMS);
        }
    }

    const Value* sub(const Value* v) const
    {
        if (!v || !m_opt.substitute) return v;
        const Value* r = m_opt.substitute(v);
        return r ? r : v;
    }

    void save(const Value* v, int depth)
    {
        v = sub(v);
        if (!v) {
            op(NONE);
            return;
        }
        if (size_t(depth) > m_opt.maxDepth) throw Error("object tree nested too deeply to write");
        if (fromMemo(v)) return;
        if (m_inProgress.count(v) && v->kind != Kind::Tuple)
            throw Error("an object refers to itself through its own constructor arguments; no pickle can "
                        "express that");
        switch (v->kind) {
        case Kind::None:
            op(NONE);
            return;
        case Kind::Bool:
            op(v->boolean ? NEWTRUE : NEWFALSE);
            return;
        case Kind::Int:
            saveInt(v->integer);
            return;
        case Kind::BigInt:
            saveBigInt(v->text);
            return;
        case Kind::Float:
            saveFloat(v->real);
            return;
        case Kind::Str:
            saveStr(v->text);
            memoise(v);
            return;
        case Kind::Bytes:
            saveBytes(v->text);
            memoise(v);
            return;
        case Kind::ByteArray:
            saveByteArray(v->text);
            memoise(v);
            return;
        case Kind::List:
            op(EMPTY_LIST);
            memoise(v); // before the items: they may refer back to the list
            saveItems(v, depth);
            return;
        case Kind::Dict:
            op(EMPTY_DICT);
            memoise(v);
            saveItems(v, depth);
            return;
        case Kind::Tuple:
            saveTuple(v, depth);
            return;
        case Kind::Set:
            saveSet(v, depth);
            return;
        case Kind::FrozenSet:
            saveFrozenSet(v, depth);
            memoise(v);
            return;
        case Kind::Global:
            saveGlobal(v->text, v->name);
            memoise(v);
            return;
        case Kind::Ext:
            saveExt(v->integer);
            memoise(v);
            return;
        case Kind::PersistentRef:
            save(v->args, depth + 1);
            op(BINPERSID);
            memoise(v);
            return;
        case Kind::Call:
            saveCall(v, depth);
            return;
        }
        throw Error("unknown node kind in the object tree");
    }

    // The two's-complement little-endian bytes, as the VM keeps an int too big for 64 bits.
    void saveBigInt(const std::string& bytes)
    {
        if (bytes.size() < 256) {
            op(LONG1);
            op(uint8_t(bytes.size()));
        } else {
            op(LONG4);
            le<uint32_t>(uint32_t(bytes.size()));
        }
        m_out += bytes;
    }

    void saveFloat(double d)
    {
        op(BINFLOAT); // big-endian, the one exception in pickle
        const uint64_t bits = std::bit_cast<uint64_t>(d);
        for (int k = 7; k >= 0; --k)
            m_out += char(uint8_t(bits >> (8 * k)));
    }

    void saveByteArray(const std::string& b)
    {
        if (m_opt.protocol >= 5) {
            op(BYTEARRAY8);
            le<uint64_t>(b.size());
            m_out += b;
        } else {
            saveGlobal(m_opt.protocol >= 3 ? "builtins" : "__builtin__", "bytearray");
            saveBytes(b);
            op(TUPLE1);
            op(REDUCE);
        }
    }

    // Protocol 4 has set opcodes; before it a set is the call set([items]).
    void saveSet(const Value* v, int depth)
    {
        if (m_opt.protocol >= 4) {
            op(EMPTY_SET);
            memoise(v); // before the items, like a list
            saveMarked(v->items, depth, ADDITEMS);
        } else {
            saveBuiltinCall("set", v, depth);
            memoise(v);
        }
    }

    void saveFrozenSet(const Value* v, int depth)
    {
        if (m_opt.protocol >= 4) {
            op(MARK); // even with no items: FROZENSET takes what is above the mark
            for (const Value* c : v->items)
                save(c, depth + 1);
            op(FROZENSET);
        } else {
            saveBuiltinCall("frozenset", v, depth);
        }
    }

    void saveExt(int64_t code)
    {
        if (code >= 0 && code < 256) {
            op(EXT1);
            op(uint8_t(code));
        } else if (code >= 0 && code < 65536) {
            op(EXT2);
            le<uint16_t>(uint16_t(code));
        } else {
            op(EXT4);
            le<int32_t>(int32_t(code));
        }
    }

    // callable(*args) as REDUCE, or cls.__new__(cls, *args[, **kwargs]) as NEWOBJ(_EX); then
    // the items appended or set on the object and the state BUILD gives it.
    void saveCall(const Value* v, int depth)
    {
        m_inProgress.insert(v);
        save(v->callable, depth + 1);
        static const Value emptyTuple = [] {
            Value t;
            t.kind = Kind::Tuple;
            return t;
        }();
        save(v->args ? v->args : &emptyTuple, depth + 1);
        if (v->isNew && v->kwargs) {
            save(v->kwargs, depth + 1);
            op(NEWOBJ_EX);
        } else {
            op(v->isNew ? NEWOBJ : REDUCE);
        }
        m_inProgress.erase(v);
        memoise(v); // before items and state, which may refer back to the object
        saveItems(v, depth);
        if (v->state) {
            save(v->state, depth + 1);
            op(BUILD);
        }
    }

    WriteOptions m_opt;
    std::string m_out;
    std::unordered_map<const Value*, uint32_t> m_refs;
    std::unordered_map<const Value*, uint32_t> m_memo;
    std::unordered_set<const Value*> m_inProgress;
};

} // namespace

std::string write(const Value* root, const WriteOptions& options)
{
    if (options.protocol < 2 || options.protocol > 5) throw Error("pickle protocol must be 2 to 5");
    return Writer(options).run(root);
}

} // namespace ckpt::pickle
