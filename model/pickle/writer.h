// The inverse of the pickle VM: writes a Value graph back as a pickle stream that CPython's
// and torch's unpicklers rebuild into the same objects. Nodes reached more than once are
// memoised, so shared objects stay shared and cycles through mutable containers survive;
// Global / Call / Build / PersistentRef become GLOBAL, REDUCE or NEWOBJ, BUILD and BINPERSID, as
// CPython's pickler emits them. Slimming and Universal conversion edit a parsed tree and write
// it with this; nothing is executed on either side.
#pragma once

#include "pickle/value.h"

#include <functional>
#include <string>

namespace ckpt::pickle {

struct WriteOptions
{
    // 2 is what torch.save writes; 3+ adds bytes opcodes, 4+ sets and frames are not needed.
    int protocol = 2;
    // Nesting beyond this is refused rather than overflowing the stack. Twice what the torch reader
    // walks (1000, Python's own recursion limit); 10000 overflowed an 8 MiB stack under ASan.
    size_t maxDepth = 2000;
    // Writes another node in place of a node of the tree (nullptr: keep it), so an edited copy
    // is written without copying the whole graph: slimming swaps tensor rebuild calls and
    // storage ids. Called for every node met, replacements and their children included.
    std::function<const Value*(const Value*)> substitute = {};
};

// Throws Error for what no pickle can express (a cycle through constructor arguments, an
// unknown node kind) or nesting deeper than maxDepth.
std::string write(const Value* root, const WriteOptions& options = {});

} // namespace ckpt::pickle
