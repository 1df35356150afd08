#include "ops/universal.h"
#include "ops/universal/internal.h"

namespace ckpt::ops {

namespace uni {

// ---------------------------------------------------------------------------------------------

struct Plan
{
    std::string optim0, model0;      // rank 0's optimizer file; the model file ds_to_universal reads
    std::vector<std::string> copies; // model-states files copied into the output
};

// The files an earlier conversion wrote into the folder: its zero/ tree and the model-states
// files copied beside it. Replaced as a set by a conversion that overwrites (--overwrite).
bool earlierUniversalOutput(const std::string& name)
{
    const auto ends = [&](const std::string& x) {
        return name.size() >= x.size() && name.compare(name.size() - x.size(), x.size(), x) == 0;
    };
    return name == "zero" || ends("_model_states.pt") || ends("_optim_states.pt");
}

// OUT as ds_to_universal takes --output_folder; latest_universal names it from its parent.
struct Destination
{
    fs::path out, latest;
};

Destination destinationOf(const std::string& output)
{
    fs::path out = fs::path(output).lexically_normal();
    if (!out.has_filename()) out = out.parent_path();
    if (out.empty() || out.filename() == "." || out.filename() == "..")
        throw Error("give the Universal checkpoint a folder name of its own (latest_universal names it)",
                    output);
    return {out, (out.has_parent_path() ? out.parent_path() : fs::path(".")) / "latest_universal"};
}

io::OutputTransaction::Existing existingRule(const UniversalOptions& options)
{
    if (options.shard.sharded()) return io::OutputTransaction::Existing::Shared; // the other shards' files
    return options.overwrite ? io::OutputTransaction::Existing::Replace
                             : io::OutputTransaction::Existing::Refuse;
}

// DeepSpeed model files in a tag folder: what preflight can tell about (a ZeRO-0 save, a missing
// optimizer file). Anything else (another family, archive members) is no conversion's input.
bool hasRankFilesOnDisk(const std::vector<layout::RankFile>& files)
{
    std::error_code ec;
    return std::any_of(files.begin(), files.end(), [&](const layout::RankFile& f) {
        return f.role == layout::FileRole::ModelStates &&
               (io::isRemotePath(f.path) || fs::is_regular_file(f.path, ec));
    });
}

// A ZeRO 1-3 save whose other tensor-parallel ranks (as the family read them) can be merged.
void checkConvertible(const layout::Tag& tag)
{
    if (!tag.deepspeed ||
        (tag.deepspeed->optimizer != "zero" && tag.deepspeed->optimizer != "bf16_optimizer"))
        throw Error("no ZeRO optimizer partitions: nothing to convert to Universal", tag.dir);
    if (tag.deepspeed->zeroStage < 1 || tag.deepspeed->zeroStage > 3)
        throw Error("ZeRO stage " + std::to_string(tag.deepspeed->zeroStage) + " cannot be converted",
                    tag.dir);
    if (!tag.deepspeed->tensorParallel)
        throw Error("the tensor-parallel ranks of this save were not read (a pipeline or MoE save?)",
                    tag.dir);
    if (tag.deepspeed->tensorParallel->error) throw *tag.deepspeed->tensorParallel->error;
}

// Which files ds_to_universal reads and copies: rank 0's optimizer file, the model file, and
// mp_rank_* files (stage <= 2) or every *model_states.pt (3), of every tensor-parallel rank.
Plan planFiles(const layout::Tag& tag, bool stage3)
{
    Plan plan;
    for (const auto& f : tag.files) {
        if (f.role == layout::FileRole::OptimStates && f.dpRank == 0 && f.mpRank == 0) plan.optim0 = f.path;
        if (f.role == layout::FileRole::ModelStates && f.mpRank == 0 && plan.model0.empty())
            plan.model0 = f.path;
        if (f.role == layout::FileRole::ModelStates && (stage3 || f.name.rfind("mp_rank_", 0) == 0))
            plan.copies.push_back(f.path);
    }
    std::sort(plan.copies.begin(), plan.copies.end());
    if (!stage3 &&
        (plan.copies.empty() || fs::path(plan.model0).filename().string().rfind("mp_rank_", 0) != 0))
        throw Error("no mp_rank_*_model_states.pt file (DeepSpeedCheckpoint needs one for ZeRO stage " +
                        std::to_string(tag.deepspeed->zeroStage) + ")",
                    tag.dir);
    return plan;
}

// universal_checkpoint_info (the merge rules the family read): stage <= 2 requires it
// (ds_to_universal asserts); stage 3 reads it (when present) only to merge tensor-parallel
// slices. Without it, a checkpoint of one tensor-parallel rank has no slices to merge: it
// converts as ds_to_universal's --inject_missing_state converts it, saying so in `notes`; with
// several, how they merge is unknown and the conversion is refused.
void checkRules(const layout::TensorParallelSave& save, const std::string& model0, bool stage3, int tpDegree,
                const UniversalOptions& options, std::vector<std::string>& notes)
{
    if (!stage3 && !save.rulesSaved && !options.injectMissingState) {
        if (tpDegree > 1)
            throw Error(
                "no universal_checkpoint_info, and the checkpoint is tensor-parallel (" +
                    std::to_string(tpDegree) +
                    " mp ranks): how its slices merge is what that information says, and the training "
                    "script did not save it (ds_to_universal refuses it too: \"Required "
                    "universal_checkpoint_info state is missing in checkpoint\")",
                model0);
        notes.push_back(
            "no universal_checkpoint_info in the checkpoint: converted as data parallelism only, as "
            "ds_to_universal's --inject_missing_state does (one tensor-parallel rank: nothing to merge)");
    }
}

// Every output of a conversion, planned (with its size) before anything is written.
class Conversion
{
public:
    struct Item
    {
        std::string rel;
        uint64_t bytes = 0;
        std::function<void(Writer&)> write;
    };

    Conversion(const layout::Tag& tag, RankFiles& files, const Plan& plan, bool tpMerge)
        : m_tag(tag), m_files(files), m_plan(plan), m_stage3(tag.deepspeed->zeroStage == 3),
          m_tpMerge(tpMerge)
    {
        const auto& patterns = tag.deepspeed->tensorParallel->patterns;
        m_unused.insert(patterns.begin(), patterns.end());
    }

    // zero/<name>/{fp32,exp_avg,exp_avg_sq}.pt (and step.pt) of every trainable parameter.
    void addParameters()
    {
        for (const layout::Parameter& p : m_tag.params)
            if (p.kind == layout::Parameter::Kind::Trainable && p.tiedTo.empty()) addParameter(p);
    }

    // Stage <= 2: every tensor of the model file's `module` without an fp32.pt (buffers, frozen
    // and tied parameters) gets one with {'param': tensor.float()}, as ds_to_universal does.
    void addModuleTensors()
    {
        if (m_stage3) return;
        for (const std::string& path : m_plan.copies) {
            const torch::TorchFile& mf = m_files.get(path);
            const Value* module = dictGet(mf.root(), "module");
            if (!module) continue;
            for (const auto& [k, v] : module->entries) {
                const auto name = asString(k);
                const torch::Tensor* t = name ? mf.tensor("module/" + *name) : nullptr;
                if (!t || m_dirs.count(*name)) continue;
                m_dirs.insert(*name);
                const std::string rel = "zero/" + *name + "/fp32.pt";
                torch::OutTensor data = asFloat32("0", mf, *t);
                m_items.push_back(
                    {rel, data.nbytes, [rel, data = std::move(data), shape = t->shape](Writer& w) {
                         writeState(w, rel, {}, true, data, shape);
                     }});
            }
        }
    }

    // zero/optimizer_state.pt: rank 0's optimizer_state_dict with param_groups beside it; at
    // stage <= 2 without the partitioned tensors and with paddings cleared, as DeepSpeedCheckpoint
    // hands it over.
    void addOptimizerState()
    {
        const torch::TorchFile& o0 = m_files.get(m_plan.optim0);
        const Value* osd = dictGet(o0.root(), "optimizer_state_dict");
        if (!osd || osd->kind != Kind::Dict)
            throw Error("optimizer states file has no optimizer_state_dict", m_plan.optim0);
        Value* out = m_osdTree.node(Kind::Dict);
        const Value* paramGroups = nullptr;
        if (m_stage3) {
            out->entries = osd->entries;
            paramGroups = dictGet(dictGet(osd, "optimizer_state_dict"), "param_groups");
        } else {
            keepUnsharded(osd, out);
            paramGroups = dictGet(dictGet(osd, "base_optimizer_state"), "param_groups");
        }
        if (!paramGroups) throw Error("optimizer states have no param_groups", m_plan.optim0);
        out->entries.push_back({m_osdTree.str("param_groups"), const_cast<Value*>(paramGroups)});
        uint64_t bytes = 0;
        if (m_stage3)
            for (const auto& s : o0.storages())
                bytes += s.nbytes;
        m_items.push_back({"zero/optimizer_state.pt", bytes,
                           [out, &o0](Writer& w) { writeTree(w, "zero/optimizer_state.pt", out, o0); }});
    }

    // The model-states files, copied byte for byte (shutil.copy2 in ds_to_universal).
    uint64_t addCopies()
    {
        uint64_t copied = 0;
        for (const std::string& path : m_plan.copies) {
            const std::string rel = fs::path(path).filename().string();
            const uint64_t size = io::fileSize(path); // a URL's too (std::filesystem said -1)
            m_items.push_back({rel, size, [path, rel](Writer& w) { w.copy(path, rel); }});
            copied += size;
        }
        return copied;
    }

    std::vector<Item>& items() { return m_items; }
    size_t parameters() const { return m_dirs.size(); }
    // The save's patterns no converted parameter matched (ds_to_universal's --strict refuses them).
    const std::set<std::string>& unusedPatterns() const { return m_unused; }

private:
    // The parameter as each TP rank holds it (the family read the other ranks' parts).
    std::vector<const layout::Parameter*> partsOf(const layout::Parameter& p) const
    {
        std::vector<const layout::Parameter*> parts{&p};
        if (p.tensorParallel)
            for (const layout::Parameter& part : p.tensorParallel->parts)
                parts.push_back(&part);
        return parts;
    }

    // The first file of TP rank `t` (the tag's first file for rank 0): what a refusal names.
    const std::string& rankFile(size_t t) const
    {
        if (t > 0)
            for (const auto& f : m_tag.files)
                if ((f.role == layout::FileRole::ModelStates || f.role == layout::FileRole::OptimStates) &&
                    f.mpRank == int(t))
                    return f.path;
        return m_tag.files.empty() ? m_tag.dir : m_tag.files.front().path;
    }

    // ds_to_universal extracts groups 0..len(state)-1 of base_optimizer_state['state'] of each
    // rank: a group the optimizer has not stepped yet has no fragments.
    bool hasGroupState(const std::string& file, int group)
    {
        const Value* st = m_files.get(file).value("optimizer_state_dict/base_optimizer_state/state");
        return st && group >= 0 && size_t(group) < st->entries.size() && dictGet(st, std::to_string(group));
    }

    // The slices of each TP rank that hold optimizer state.
    using Held = std::vector<std::vector<const layout::RankSlice*>>;
    Held heldSlices(const std::vector<const layout::Parameter*>& parts)
    {
        Held held(parts.size());
        for (size_t t = 0; t < parts.size(); ++t)
            for (const auto& s : parts[t]->slices)
                if (s.length && (m_stage3 || hasGroupState(s.master.front().file, parts[t]->group)))
                    held[t].push_back(&s);
        return held;
    }

    // With several TP ranks, each rank's slices cover its whole slice of the parameter.
    void checkCovered(const std::string& name, const std::vector<const layout::Parameter*>& parts,
                      const Held& held) const
    {
        if (parts.size() < 2) return;
        for (size_t t = 0; t < parts.size(); ++t) {
            uint64_t covered = 0;
            for (const auto* s : held[t])
                covered += s->length;
            if (covered != parts[t]->numel())
                throw Error("parameter '" + name + "' has optimizer state for " + std::to_string(covered) +
                                " of its " + std::to_string(parts[t]->numel()) + " elements on mp rank " +
                                std::to_string(t) + ": its tensor-parallel slices cannot be merged",
                            rankFile(t));
        }
    }

    // How the parts merge, as the family stated it (shared, not copied: it holds the parts).
    std::shared_ptr<const layout::TensorParallel> mergeOf(const layout::Parameter& p)
    {
        if (!m_tpMerge) { // stage 3, one TP rank: the flat concatenation, a raw tensor
            auto merge = std::make_shared<layout::TensorParallel>();
            merge->shape = {int64_t(p.numel())};
            merge->views = {merge->shape};
            merge->blocks = {{0, 0, merge->shape[0]}};
            return merge;
        }
        if (!p.tensorParallel)
            throw Error("parameter '" + p.name + "': no tensor-parallel merge was read for it",
                        m_plan.model0);
        if (p.tensorParallel->unmergeable) throw *p.tensorParallel->unmergeable;
        for (const std::string& pattern : p.tensorParallel->keys.patterns)
            m_unused.erase(pattern);
        return p.tensorParallel;
    }

    void addParameter(const layout::Parameter& p)
    {
        const std::vector<const layout::Parameter*> parts = partsOf(p);
        const Held held = heldSlices(parts);
        // No fragment anywhere (or no optimizer state yet: fp16 steps that all overflowed):
        // ds_to_universal merges nothing for it; at stage <= 2 `module` supplies fp32.pt.
        if (std::all_of(held.begin(), held.end(), [](const auto& h) { return h.empty(); })) return;
        checkCovered(p.name, parts, held);
        const auto plan = mergeOf(p);
        const layout::TensorParallel& merge = *plan;
        std::vector<std::pair<std::string, Value*>> keys; // stage 3 on one rank: a raw tensor
        if (m_tpMerge) keys = mergeKeys(merge.keys, m_keysTree, m_files.get(m_plan.model0));
        const std::string dir = "zero/" + p.name;
        for (const char* state : {"fp32", "exp_avg", "exp_avg_sq"}) {
            torch::OutTensor data = stateData(p, state, parts, held, merge);
            const std::string rel = dir + "/" + state + ".pt";
            m_items.push_back({rel, data.nbytes,
                               [rel, keys, tpMerge = m_tpMerge, data = std::move(data), shape = merge.shape](
                                   Writer& w) { writeState(w, rel, keys, tpMerge, data, shape); }});
        }
        m_dirs.insert(p.name);
        if (!m_stage3) addStep(dir, parts, held);
    }

    // The sources of one state of a slice: its master (fp32) or that moment.
    const std::vector<layout::Source>& sourcesOf(const layout::Parameter& part, const layout::RankSlice& s,
                                                 const char* state) const
    {
        if (std::strcmp(state, "fp32") == 0) return s.master;
        if (const layout::OptimizerState* st = part.stateNamed(state); st && st->perSlice) {
            const size_t i = size_t(&s - part.slices.data());
            if (i < st->slices.size() && !st->slices[i].master.empty()) return st->slices[i].master;
        }
        throw Error(std::string("no '") + state + "' optimizer state for parameter '" + part.name +
                        "': DeepSpeed's Universal format holds Adam-style moments (exp_avg, exp_avg_sq) only",
                    s.master.empty() ? m_tag.dir : s.master.front().file.str());
    }

    // One state of a parameter as the merged tensor ds_to_universal writes.
    torch::OutTensor stateData(const layout::Parameter& p, const char* state,
                               const std::vector<const layout::Parameter*>& parts, const Held& held,
                               const layout::TensorParallel& merge)
    {
        auto slices = std::make_shared<std::vector<FlatSlice>>(parts.size());
        torch::DType dtype = torch::DType::Float32;
        bool typed = false;
        for (size_t t = 0; t < parts.size(); ++t)
            for (const layout::RankSlice* s : held[t])
                for (const layout::Source& src : sourcesOf(*parts[t], *s, state)) {
                    torch::DType d = dtype;
                    (*slices)[t].add(pieceOf(m_files, src, d));
                    if (typed && d != dtype)
                        throw Error("parameter '" + p.name + "': its '" + state +
                                        "' fragments are of different dtypes",
                                    src.file);
                    dtype = d, typed = true;
                }
        const uint64_t es = torch::elementSize(dtype);
        if (parts.size() > 1)
            for (size_t t = 0; t < parts.size(); ++t)
                if ((*slices)[t].bytes !=
                    uint64_t(layout::product(merge.views[t], 0, merge.views[t].size())) * es)
                    throw Error("parameter '" + p.name + "': the '" + state + "' fragments of mp rank " +
                                    std::to_string(t) + " do not hold its param_shapes shape",
                                rankFile(t));
        const uint64_t nbytes = gpu::numelOf(merge.shape) * es; // the vocabulary cut keeps the leading rows
        torch::OutTensor data;
        if (parts.size() == 1) {
            // One TP rank: the fragments in order (averaging one slice only turns -0.0 into +0.0).
            data = concatenation("0", dtype, (*slices)[0].pieces,
                                 merge.mode == layout::TensorParallel::Mode::Average);
        } else {
            if (merge.mode == layout::TensorParallel::Mode::Average && dtype != torch::DType::Float32)
                throw Error("parameter '" + p.name + "': averaging tensor-parallel slices of " +
                                std::string(torch::name(dtype)) + " is not converted to Universal yet",
                            m_plan.model0);
            data = merged(p.name, state, dtype, slices, merge, nbytes, m_plan.model0);
        }
        data.nbytes = nbytes;
        return data;
    }

    // The step as the optimizer saved it (int or tensor), from the first TP rank holding it.
    void addStep(const std::string& dir, const std::vector<const layout::Parameter*>& parts, const Held& held)
    {
        size_t t = 0;
        while (held[t].empty())
            ++t;
        const torch::TorchFile& f = m_files.get(held[t].front()->master.front().file);
        const Value* step = f.value("optimizer_state_dict/base_optimizer_state/state/" +
                                    std::to_string(parts[t]->group) + "/step");
        if (!step) return;
        const std::string rel = dir + "/step.pt";
        m_items.push_back({rel, 8, [rel, step, &f](Writer& w) { writeTree(w, rel, step, f); }});
    }

    // Stage <= 2's optimizer_state_dict without its partitioned tensors, paddings cleared.
    void keepUnsharded(const Value* osd, Value* out)
    {
        static const std::set<std::string> sharded = {"base_optimizer_state", "param_slice_mappings",
                                                      "single_partition_of_fp32_groups"};
        for (const auto& [k, v] : osd->entries) {
            const std::string key = asString(k).value_or("");
            if (sharded.count(key)) continue;
            Value* value = v;
            if ((key == "group_paddings" || key == "partition_count") && v && v->kind == Kind::List &&
                !v->items.empty()) {
                value = m_osdTree.node(Kind::List);
                for (size_t i = 0; i < v->items.size(); ++i)
                    value->items.push_back(m_osdTree.integer(key == "group_paddings" ? 0 : m_tag.worldSize));
            }
            out->entries.push_back({k, value});
        }
    }

    const layout::Tag& m_tag;
    RankFiles& m_files;
    const Plan& m_plan;
    std::set<std::string> m_unused;
    const bool m_stage3, m_tpMerge;
    std::vector<std::map<std::string, const layout::Parameter*>> m_byName; // per TP rank
    std::vector<Item> m_items;
    std::set<std::string> m_dirs; // zero/<name> folders with an fp32.pt
    Tree m_keysTree;              // nodes of the extra dict keys, shared by all state files
    Tree m_osdTree;
};

// ds_to_universal's --strict (its default): every pattern matched some parameter.
void checkPatternsUsed(const std::set<std::string>& unused, const std::string& model0)
{
    if (unused.empty()) return;
    std::string list;
    for (const auto& u : unused)
        list += (list.empty() ? "'" : ", '") + u + "'";
    throw Error("universal_checkpoint_info patterns match no parameter: " + list +
                    " (ds_to_universal stops here too: 'Unused patterns')",
                model0);
}

// The conversion's files are written and checked: latest_universal names the folder, and both
// are committed, the folder first.
void commitWithLatest(io::OutputTransaction& tx, io::OutputTransaction& latestTx,
                      const std::string& folderName, const CancelToken& cancel)
{
    cancel.throwIfCancelled();
    io::AtomicFile& latest = latestTx.create();
    latest.write(folderName.data(), folderName.size());
    latest.finish();
    tx.commit();
    latestTx.commit();
}

// Writes every planned item, checks all of them, then names the folder in latest_universal
// and commits both: the conversion appears whole or not at all.
Writer::Totals writeConversion(std::vector<Conversion::Item>& items, io::OutputTransaction& tx,
                               io::OutputTransaction& latestTx, const std::string& folderName,
                               const ProgressSink& progress, const CancelToken& cancel)
{
    uint64_t total = 0;
    for (const auto& it : items)
        total += it.bytes;
    Writer writer(tx, progress, cancel, total);
    for (auto& it : items) {
        it.write(writer);
        it.write = nullptr; // its pieces and pickle nodes are no longer needed
    }
    writer.verified();
    commitWithLatest(tx, latestTx, folderName, cancel);
    if (progress) progress({1000, "done", total, total});
    return {writer.files() + 1, writer.written() + folderName.size(), total};
}

// The units of a split conversion (ops/sharded.h): one per parameter folder, zero/<name>/ with
// its state files; the optimizer state and the copied model files bind them (finalize's).
struct SplitPlan
{
    std::vector<WorkUnit> units;
    std::vector<std::vector<size_t>> itemsOf; // per unit, its items
    std::vector<size_t> binding;              // items finalize writes
};

SplitPlan splitConversion(const std::vector<Conversion::Item>& items)
{
    SplitPlan split;
    std::map<std::string, size_t> unitOf;
    for (size_t i = 0; i < items.size(); ++i) {
        const fs::path rel(items[i].rel);
        const auto parts = std::distance(rel.begin(), rel.end());
        if (parts != 3 || *rel.begin() != "zero") {
            split.binding.push_back(i);
            continue;
        }
        const std::string dir = rel.parent_path().string();
        auto [it, added] = unitOf.emplace(dir, split.units.size());
        if (added) {
            split.units.emplace_back();
            split.itemsOf.emplace_back();
        }
        split.units[it->second].files.push_back(items[i].rel);
        split.units[it->second].bytes += items[i].bytes;
        split.itemsOf[it->second].push_back(i);
    }
    return split;
}

std::vector<size_t> allUnits(const SplitPlan& split)
{
    std::vector<size_t> all(split.units.size());
    std::iota(all.begin(), all.end(), 0);
    return all;
}

uint64_t conversionFingerprint(const layout::OpenedTag& in, const std::vector<Conversion::Item>& items)
{
    std::string text = "ckpt universal 1 " + in->name + "\n";
    for (const auto& it : items)
        text += it.rel + " " + std::to_string(it.bytes) + "\n";
    std::vector<std::string> files;
    for (const auto& f : in->files)
        files.push_back(f.path);
    return fingerprintOf(text + describeInputs(files));
}

// One process's part of a conversion split across processes, or its finalize: the parameter
// folders it owns (each renamed in with its marker), then, for finalize, the binding files and
// latest_universal last.
Writer::Totals writeConversionPart(const layout::OpenedTag& in, const UniversalOptions& options,
                                   std::vector<Conversion::Item>& items, io::OutputTransaction& tx,
                                   io::OutputTransaction& latestTx, const std::string& folderName,
                                   const ProgressSink& progress, const CancelToken& cancel)
{
    const ShardSpec& spec = options.shard;
    if (options.overwrite)
        throw Error(
            "--overwrite does not combine with --shard or --finalize: the shards of one job share the "
            "folder; remove an earlier output first",
            tx.folder());
    const SplitPlan split = splitConversion(items);
    std::vector<std::string> binding;
    for (size_t i : split.binding)
        binding.push_back(items[i].rel);
    const ShardedOutput out(in.inputs(), tx.folder(), spec, conversionFingerprint(in, items), split.units,
                            binding);
    Writer::Totals totals;
    if (!spec.finalize) {
        Writer writer(tx, progress, cancel, out.bytesOf(out.mine()));
        out.writeMine([&]() -> io::OutputTransaction& { return tx; },
                      [&](size_t u, io::OutputTransaction&) {
                          for (size_t i : split.itemsOf[u]) {
                              items[i].write(writer);
                              items[i].write = nullptr;
                          }
                          writer.verified();
                      });
        totals = {writer.files(), writer.written(), out.bytesOf(out.mine())};
        if (!spec.finalizeWhenAllDone) {
            if (progress) progress({1000, "done", totals.planned, totals.planned});
            return totals;
        }
        out.waitForOtherShards(progress, cancel);
    }
    const ShardedOutput::Written shardFiles = out.checkComplete(progress, cancel);
    uint64_t bytes = 0;
    for (size_t i : split.binding)
        bytes += items[i].bytes;
    Writer writer(tx, progress, cancel, bytes);
    for (size_t i : split.binding)
        items[i].write(writer);
    writer.verified();
    commitWithLatest(tx, latestTx, folderName, cancel);
    out.removeMarkers();
    if (progress) progress({1000, "done", bytes, bytes});
    // The whole output: every shard's files, the binding ones and latest_universal.
    return {shardFiles.files.size() + writer.files() + 1,
            shardFiles.bytes + writer.written() + folderName.size(), out.bytesOf(allUnits(split)) + bytes};
}

} // namespace uni

using namespace uni;

UniversalResult universal(const layout::OpenedTag& in, const std::string& output,
                          const UniversalOptions& options, const ProgressSink& progress,
                          const CancelToken& cancel)
{
    if (!in->unreadable.empty()) throw Error(in->unreadable, in->dir);
    if (!in->convertsToUniversal && !hasRankFilesOnDisk(in->files))
        throw Error("not a DeepSpeed checkpoint folder (this is a " + in.checkpoint->model.familyName +
                        "): only DeepSpeed ZeRO 1-3 tags convert to Universal",
                    in->dir);
    const Destination dest = destinationOf(output);
    // What is converted is the tag folder (ds_to_universal's --input_folder): OUT may lie beside
    // it in the checkpoint root, where load_checkpoint(root) with load_universal looks. (Given the
    // root on the command line, the path overload keeps OUT out of it.) A folder that holds files
    // is refused unless replacing was asked for: an earlier conversion's zero/ folders would mix
    // with this one's.
    const std::vector<std::string> inputs{in->dir};
    io::OutputTransaction tx(inputs, output, io::OutputTransaction::Shape::Folder, existingRule(options),
                             earlierUniversalOutput);
    reportNotes(progress, tx.notes());
    io::OutputTransaction latestTx(inputs, dest.latest.string(), io::OutputTransaction::Shape::File);
    reportNotes(progress, latestTx.notes());

    RankFiles files(in.files());
    const int tpDegree = preflight(in->files, in->dir, files);
    if (progress) progress({0, "reading " + in->dir, 0, 0});
    const layout::Tag& tag = *in;
    checkConvertible(tag);
    const bool stage3 = tag.deepspeed->zeroStage == 3;
    const Plan plan = planFiles(*in, stage3);     // the opened tag: every mp rank's files
    const bool tpMerge = !stage3 || tpDegree > 1; // merge_tp_slices, dict files
    std::vector<std::string> notes;
    checkRules(*tag.deepspeed->tensorParallel, plan.model0, stage3, tpDegree, options, notes);

    Conversion conversion(tag, files, plan, tpMerge);
    conversion.addParameters();
    conversion.addModuleTensors();
    conversion.addOptimizerState();
    UniversalResult result;
    result.copiedBytes = conversion.addCopies();
    checkPatternsUsed(conversion.unusedPatterns(), plan.model0);
    const Writer::Totals written = options.shard.sharded()
                                       ? writeConversionPart(in, options, conversion.items(), tx, latestTx,
                                                             dest.out.filename().string(), progress, cancel)
                                       : writeConversion(conversion.items(), tx, latestTx,
                                                         dest.out.filename().string(), progress, cancel);

    result.warnings = notes;
    result.tag = tag.name;
    result.tagDir = tag.dir;
    result.output = dest.out.string();
    result.latestFile = dest.latest.string();
    result.zeroStage = tag.deepspeed->zeroStage;
    result.worldSize = tag.worldSize;
    result.tensorParallel = tpDegree;
    result.optimizer = tag.deepspeed->optimizer;
    result.parameters = conversion.parameters();
    result.files = written.files;
    result.bytesWritten = written.bytes;
    // A shard that does not finalize copies no model file: all it moved is tensors.
    const ShardSpec& shard = options.shard;
    if (shard.sharded() && !shard.finalize && !shard.finalizeWhenAllDone) result.copiedBytes = 0;
    result.tensorBytes = written.planned - std::min(written.planned, result.copiedBytes);
    // The layout's warnings speak of consolidation (what zero_to_fp32 leaves out); what would
    // make this conversion inexact is an error above instead.
    return result;
}

UniversalResult universal(const std::string& input, const std::string& output,
                          const UniversalOptions& options, const ProgressSink& progress,
                          const CancelToken& cancel)
{
    std::error_code ec;
    const bool remote = io::isRemotePath(input);
    if (remote ? io::pathKind(input) == io::PathKind::Missing : !fs::exists(input, ec))
        throw Error("cannot open: No such file or directory", input);
    // Refused before anything is parsed: the outputs, then missing rank files by name.
    const std::string tagDir = layout::tagLocation(input, options.tag);
    const Destination dest = destinationOf(output);
    io::OutputTransaction::precheck({input, tagDir}, output, io::OutputTransaction::Shape::Folder,
                                    existingRule(options));
    io::OutputTransaction::precheck({input, tagDir}, dest.latest.string(),
                                    io::OutputTransaction::Shape::File);
    auto parsed = std::make_shared<layout::FileSet>();
    std::vector<layout::RankFile> listed;
    if (remote) {
        // What a store lists; over plain HTTP nothing is listed, and the tag's own reader finds
        // its files by name.
        if (io::canList(tagDir))
            for (const auto& e : io::listFolder(tagDir))
                if (!e.folder) listed.push_back(layout::classifyTagFile(io::childPath(tagDir, e.name)));
    } else {
        for (const auto& e : fs::directory_iterator(tagDir, ec))
            if (e.is_regular_file(ec)) listed.push_back(layout::classifyTagFile(e.path().string()));
        if (ec) throw Error("cannot list the tag folder: " + ec.message(), tagDir);
    }
    if (hasRankFilesOnDisk(listed)) {
        RankFiles files(*parsed);
        preflight(listed, tagDir, files);
    }
    const layout::OpenedTag in =
        layout::openTag(input, options.tag, openingObserver(progress, cancel, "the checkpoint"), parsed);
    return universal(in, output, options, progress, cancel);
}

} // namespace ckpt::ops
