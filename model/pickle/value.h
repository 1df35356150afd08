// The value tree a pickle stream describes, built without importing or calling anything.
// Nodes live in an Arena and point at each other with raw pointers: the memo makes the graph a
// DAG with possible cycles, so ownership cannot follow the edges.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace ckpt::pickle {

enum class Kind : uint8_t {
    None,
    Bool,
    Int,    // fits in int64
    BigInt, // text holds the little-endian two's-complement bytes
    Float,
    Str,   // text holds UTF-8
    Bytes, // text holds the raw bytes (also Python-2 STRING opcodes)
    ByteArray,
    List,
    Tuple,
    Dict,
    Set,
    FrozenSet,
    Global,        // module + name, after Python-2 name normalisation
    Call,          // REDUCE: callable(*args); NEWOBJ/NEWOBJ_EX/INST/OBJ: isNew = true
    PersistentRef, // BINPERSID/PERSID: args = the persistent id; index = what the loader made of it
    Ext,           // EXT1/2/4 code (copyreg registry; never resolved)
};

struct Value
{
    Kind kind = Kind::None;
    bool isNew = false; // Call made by NEWOBJ/INST/OBJ (class instantiation) rather than REDUCE
    bool boolean = false;
    int64_t integer = 0; // Int, Ext code, PersistentRef loader index
    double real = 0;
    std::string text;                               // Str, Bytes, BigInt bytes, Global module
    std::string name;                               // Global name
    std::vector<Value*> items;                      // List, Tuple, Set; appended items on opaque Calls
    std::vector<std::pair<Value*, Value*>> entries; // Dict; SETITEM(S) applied to opaque Calls
    Value* callable = nullptr;                      // Call: the Global (or whatever was on the stack)
    Value* args = nullptr;                          // Call: argument tuple; PersistentRef: the pid
    Value* kwargs = nullptr;                        // NEWOBJ_EX keyword arguments
    Value* state = nullptr;                         // BUILD state (last one wins, as in Python)

    bool isContainer() const
    {
        return kind == Kind::List || kind == Kind::Tuple || kind == Kind::Dict || kind == Kind::Set ||
               kind == Kind::FrozenSet;
    }
    bool isGlobal(std::string_view module, std::string_view nm) const
    {
        return kind == Kind::Global && text == module && name == nm;
    }
    // For a Call: is the callable the given global?
    bool calls(std::string_view module, std::string_view nm) const
    {
        return kind == Kind::Call && callable && callable->isGlobal(module, nm);
    }
};

// Calls f(child) for every node `v` points at: items, dict entries (key, then value), callable,
// args, kwargs, state; null pointers included, so callers decide what a missing one means.
template <typename F> void forEachChild(const Value* v, F&& f)
{
    for (const Value* c : v->items)
        f(c);
    for (const auto& [k, x] : v->entries) {
        f(k);
        f(x);
    }
    f(v->callable);
    f(v->args);
    f(v->kwargs);
    f(v->state);
}

// Owns every node of one or more pickles, in blocks that never move (node addresses stay
// stable). Blocks grow from 64 to 4096 nodes: one allocation per block, where a deque of nodes
// this size allocated every three nodes (a parse was mostly malloc).
class Arena
{
public:
    Value* make(Kind k)
    {
        if (m_used == m_capacity) {
            m_capacity = m_blocks.empty() ? 64 : std::min<size_t>(m_capacity * 2, 4096);
            m_blocks.push_back(std::make_unique<Value[]>(m_capacity));
            m_used = 0;
        }
        Value& v = m_blocks.back()[m_used++];
        v.kind = k;
        ++m_size;
        return &v;
    }
    size_t size() const { return m_size; }

private:
    std::vector<std::unique_ptr<Value[]>> m_blocks;
    size_t m_capacity = 0, m_used = 0, m_size = 0;
};

} // namespace ckpt::pickle
