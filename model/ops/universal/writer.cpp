// The trees the conversion writes: copied pickles with their storages, and the state files.
#include "ops/universal/internal.h"

namespace ckpt::ops::uni {

// `root` (a node of `src`'s pickle, or a new node over some of them) as torch.save writes a
// loaded object: the same pickle, every storage it reaches copied whole.
void writeTree(Writer& w, const std::string& rel, const Value* root, const torch::TorchFile& src)
{
    Tree tree;
    std::unordered_map<const Value*, const Value*> subst;
    std::vector<torch::OutTensor> records;
    std::set<int> taken;
    std::vector<const Value*> todo{root};
    std::unordered_set<const Value*> seen;
    const auto& storages = src.storages();
    while (!todo.empty()) {
        const Value* v = todo.back();
        todo.pop_back();
        if (!v || !seen.insert(v).second) continue;
        if (v->kind != Kind::PersistentRef) {
            pickle::forEachChild(v, [&](const Value* c) { todo.push_back(c); });
            continue;
        }
        const Value* a = v->args;
        if (v->integer < 0 || size_t(v->integer) >= storages.size() || !a || a->kind != Kind::Tuple ||
            a->items.size() < 5)
            throw Error("a persistent id that is not a storage", src.path());
        const torch::Storage& s = storages[size_t(v->integer)];
        if (s.viewOf >= 0)
            throw Error("legacy storage views cannot be copied into a Universal checkpoint", src.path());
        // Zip ids have five items; a legacy file's sixth (view metadata) has no place in a zip.
        Value* pid = tree.node(Kind::PersistentRef);
        pid->args = tree.tuple({a->items[0], a->items[1], tree.str(s.key), a->items[3], a->items[4]});
        subst[v] = pid;
        if (!taken.insert(int(v->integer)).second) continue;
        torch::OutTensor o;
        o.name = s.key;
        o.dtype = torch::DType::UInt8;
        o.shape = {int64_t(s.nbytes)};
        o.nbytes = s.nbytes;
        const torch::TorchFile* f = &src;
        const int index = int(v->integer);
        o.fill = [f, index](uint64_t offset, uint64_t count, uint8_t* dst) {
            const io::Blob blob = f->storageBytes(index);
            std::memcpy(dst, blob.bytes.data() + offset, count);
            f->release(blob.bytes.data() + offset, count);
        };
        records.push_back(std::move(o));
    }
    pickle::WriteOptions o;
    o.protocol = 2;
    o.substitute = [&subst](const Value* v) -> const Value* {
        const auto it = subst.find(v);
        return it == subst.end() ? nullptr : it->second;
    };
    w.torchFile(rel, pickle::write(root, o), records);
}

// A file whose content is one new tensor (stage 3) or {keys..., 'param': tensor} (stage <= 2).
void writeState(Writer& w, const std::string& rel, const std::vector<std::pair<std::string, Value*>>& keys,
                bool asDict, torch::OutTensor data, const std::vector<int64_t>& shape)
{
    Tree tree;
    data.name = "0";
    Value* t = tree.tensor(data.dtype, shape, data.name);
    Value* root = t;
    if (asDict) {
        root = tree.node(Kind::Dict);
        for (const auto& [k, v] : keys)
            root->entries.push_back({tree.str(k), v});
        root->entries.push_back({tree.str("param"), t});
    }
    pickle::WriteOptions o;
    o.protocol = 2;
    w.torchFile(rel, pickle::write(root, o), {std::move(data)});
}

} // namespace ckpt::ops::uni
