// A pickle virtual machine for protocols 0-5 that builds a Value tree and never imports or
// calls anything: GLOBAL becomes a Global node, REDUCE/NEWOBJ/BUILD become inspectable nodes.
// Bounded: node count, memo and nesting are limited so hostile streams fail fast.
#pragma once

#include "io/bytes.h"
#include "pickle/value.h"

#include <functional>
#include <string>
#include <vector>

namespace ckpt::pickle {

struct Limits
{
    size_t maxNodes = 16u << 20; // ~3 GiB worst case; real checkpoints use well under 1M
    size_t maxMemo = 16u << 20;
    size_t maxStack = 16u << 20;
};

struct GlobalRef
{
    std::string module;
    std::string name;
    uint64_t offset = 0; // of the opcode, within the pickle
};

struct Result
{
    Value* root = nullptr;
    int protocol = 0;
    uint64_t end = 0; // offset just after STOP: a legacy torch file has several pickles back to back
    std::vector<GlobalRef> globals;
};

// Called for PERSID/BINPERSID with the pid value; returns an index the caller understands.
// It must only interpret data (it may throw Error); it is how torch storages are recognised.
using PersistentLoad = std::function<int64_t(const Value* pid)>;

// Parses one pickle starting at the beginning of `data`. Throws Error (without a file name;
// callers add it) on malformed or over-limit input.
// `globalsSeen`, if given, receives every global as it is met, so a scanner still learns them
// from a stream that turns out to be malformed further on.
Result parse(io::ByteSpan data, Arena& arena, const PersistentLoad& persistentLoad = {},
             const Limits& limits = {}, std::vector<GlobalRef>* globalsSeen = nullptr);

// Python-2 spellings mapped to Python 3, as CPython's _compat_pickle and torch.load do.
void normaliseGlobal(std::string& module, std::string& name);

} // namespace ckpt::pickle
