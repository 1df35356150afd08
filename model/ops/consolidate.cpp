#include "ops/consolidate.h"

#include "cast.h"
#include "compute_backend.h"
#include "io/output.h"
#include "ops/export_files.h"
#include "ops/sharded.h"
#include "ops/tensor_source.h"
#include "ops/writers.h"
#include "torch/torch_file.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

namespace ckpt::ops {

namespace fs = std::filesystem;

uint64_t parseShardSize(const std::string& text)
{
    std::string s = text;
    while (!s.empty() && std::isspace(uint8_t(s.back())))
        s.pop_back();
    while (!s.empty() && std::isspace(uint8_t(s.front())))
        s.erase(s.begin());
    double mult = 1;
    if (s.size() > 2) {
        std::string unit = s.substr(s.size() - 2);
        for (auto& c : unit)
            c = char(std::toupper(uint8_t(c)));
        const std::map<std::string, double> units{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}};
        if (auto it = units.find(unit); it != units.end()) {
            mult = it->second;
            s.resize(s.size() - 2);
        }
    }
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (s.empty() || end != s.c_str() + s.size() || !(v > 0) || !std::isfinite(v * mult))
        throw Error("--max-shard-size '" + text + "' is not a size like 5GB, 500MB or 2000000");
    return uint64_t(v * mult);
}

namespace {

std::string shardName(bool safetensors, size_t i, size_t n)
{
    const std::string stem = safetensors ? "model" : "pytorch_model";
    const std::string ext = safetensors ? ".safetensors" : ".bin";
    if (n == 1) return stem + ext;
    char buf[64];
    std::snprintf(buf, sizeof buf, "-%05zu-of-%05zu", i + 1, n);
    return stem + buf + ext;
}

// The weight files an earlier export (ours, zero_to_fp32's, save_pretrained's) left in `dir`: the
// usual names and whatever its indexes name. An index that cannot be read names nothing more.
std::set<std::string> earlierExportFiles(const std::string& dir)
{
    std::set<std::string> names{"model.safetensors", "pytorch_model.bin", "model.safetensors.index.json",
                                "pytorch_model.bin.index.json"};
    for (const std::string index : {"model.safetensors.index.json", "pytorch_model.bin.index.json"}) {
        const fs::path p = fs::path(dir) / index;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) > (64u << 20)) continue;
        std::ifstream in(p);
        const nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
        if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object()) continue;
        for (const auto& [tensor, file] : j["weight_map"].items())
            if (file.is_string() && file.get<std::string>().find('/') == std::string::npos)
                names.insert(file.get<std::string>());
    }
    return names;
}

bool isShardName(const std::string& name)
{
    // model-00001-of-00003.safetensors, pytorch_model-00001-of-00003.bin
    static const std::regex shard(R"((model|pytorch_model)-\d{5}-of-\d{5}\.(safetensors|bin))");
    return std::regex_match(name, shard);
}

// An output named *.safetensors, or asked for as one file, is that one file (every tensor in it,
// no index); any other name is a folder as save_pretrained writes it.
bool oneFileOutput(const std::string& outDir, const ConsolidateOptions& options)
{
    return options.oneFile ||
           (options.format == ConsolidateOptions::Format::Safetensors && outDir.size() > 12 &&
            outDir.compare(outDir.size() - 12, 12, ".safetensors") == 0);
}

io::OutputTransaction::Existing existingRule(const ConsolidateOptions& options)
{
    if (options.shard.sharded()) return io::OutputTransaction::Existing::Shared; // the other shards' files
    return options.overwrite ? io::OutputTransaction::Existing::Replace
                             : io::OutputTransaction::Existing::Refuse;
}

io::OutputTransaction::Shape shapeOf(bool oneFile)
{
    return oneFile ? io::OutputTransaction::Shape::File : io::OutputTransaction::Shape::Folder;
}

SourceOptions sourceOptions(const ConsolidateOptions& options)
{
    SourceOptions so;
    so.tag = options.tag;
    so.dtype = options.dtype;
    so.excludeFrozen = options.excludeFrozen;
    so.all = options.all;
    so.raw = options.raw;
    so.ignore = options.ignore;
    so.backend = options.backend;
    return so;
}

// What an export of `in` writes, refused when that is nothing: an "export" of zero tensors wrote
// a 40-byte model.safetensors that from_pretrained filled with random weights (issue 36). An
// unreadable tag is refused by tagTensors already, with its reason.
TensorSet modelToWrite(const layout::OpenedTag& in, const ConsolidateOptions& options)
{
    // Stored names nothing loads as a model are written when asked for, never as if they were one.
    if (!options.raw && !in->unmappedModel.empty())
        throw Error("tag '" + in->name + "': " + in->unmappedModel +
                        "; --raw exports it under the checkpoint's own names",
                    in->dir.empty() ? in.checkpoint->model.root : in->dir);
    TensorSet set = withFilesBeside(tagTensors(in.checkpoint, *in, sourceOptions(options)), *in);
    if (!set.tensors.empty()) return set;
    const layout::Tag& tag = *in;
    std::string why = "tag '" + tag.name + "' has no tensor to export";
    if (!tag.params.empty())
        why += ": the filters (--exclude-frozen, --ignore) leave none of its " +
               std::to_string(tag.params.size()) + " model tensors";
    else if (!options.all && !tag.otherTensors.empty())
        why += " as a model (no model tensors; --all writes the " + std::to_string(tag.otherTensors.size()) +
               " other tensors it holds)";
    else
        why += ": it holds no tensors";
    throw Error(why, tag.dir.empty() ? in.checkpoint->model.root : tag.dir);
}

// huggingface_hub's splitter, in state-dict order: the tensors of each shard (aliases left out:
// an alias goes where its target went).
std::vector<std::vector<size_t>> planShards(const std::vector<SourceTensor>& plan, uint64_t maxShardSize,
                                            bool oneFile)
{
    std::vector<std::vector<size_t>> shards;
    std::vector<size_t> current;
    uint64_t currentSize = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        if (!plan[i].aliasOf.empty()) continue;
        const uint64_t size = plan[i].tensor.nbytes;
        if (size > maxShardSize && !oneFile) { // its own shard, listed before the one being filled
            shards.push_back({i});
            continue;
        }
        if (currentSize + size > maxShardSize && !current.empty() && !oneFile) {
            shards.push_back(current);
            current.clear();
            currentSize = 0;
        }
        current.push_back(i);
        currentSize += size;
    }
    if (!current.empty() || shards.empty()) shards.push_back(current);
    return shards;
}

// Writes planned shards into a transaction, each verified as it is finished. The index's weight
// map and total size are the whole plan's, whichever shards this process writes.
class ShardWriter
{
public:
    ShardWriter(const std::vector<SourceTensor>& plan, const std::vector<std::vector<size_t>>& shards,
                const ConsolidateOptions& options, bool oneFile, const ProgressSink& progress,
                const CancelToken& cancel)
        : m_plan(plan), m_shards(shards), m_st(options.format == ConsolidateOptions::Format::Safetensors),
          m_oneFile(oneFile), m_progress(progress), m_cancel(cancel)
    {
        for (size_t s = 0; s < shards.size(); ++s)
            for (size_t i : shards[s]) {
                m_shardOf[plan[i].tensor.name] = s;
                m_weightMap[plan[i].tensor.name] = fileName(s);
                m_planTotal += plan[i].tensor.nbytes;
            }
        // torch.save's format keeps an alias under its own name (safetensors records it in the
        // metadata): the index names the file of its target.
        if (!m_st)
            for (const SourceTensor& p : plan)
                if (const auto t = m_shardOf.find(p.aliasOf); !p.aliasOf.empty() && t != m_shardOf.end())
                    m_weightMap[p.tensor.name] = fileName(t->second);
    }

    std::string fileName(size_t s) const
    {
        return m_oneFile ? std::string() : shardName(m_st, s, m_shards.size());
    }
    uint64_t bytesOf(size_t s) const
    {
        uint64_t b = 0;
        for (size_t i : m_shards[s])
            b += m_plan[i].tensor.nbytes;
        return b;
    }
    // The bytes progress counts to: the shards this process writes.
    void expect(uint64_t bytes) { m_total += bytes; }

    void writeShard(io::OutputTransaction& tx, size_t s, ConsolidateResult& result)
    {
        const std::string name = fileName(s);
        std::vector<torch::OutTensor> tensors;
        for (size_t i : m_shards[s])
            tensors.push_back(m_plan[i].tensor);
        std::vector<torch::Alias> aliases;
        std::map<std::string, std::string> metadata{{"format", "pt"}};
        for (const SourceTensor& p : m_plan) {
            const auto target = m_shardOf.find(p.aliasOf);
            if (p.aliasOf.empty() || target == m_shardOf.end() || target->second != s) continue;
            if (m_st)
                metadata[p.tensor.name] = p.aliasOf; // one copy; the alias recorded as save_model does
            else
                aliases.push_back({p.tensor.name, p.aliasOf});
        }
        VerifiedWriter writer(tx, m_cancel, [this](const std::string&, uint64_t n) {
            m_done += n;
            if (m_progress)
                m_progress({int(m_total ? m_done * 950 / m_total : 950), "writing", m_done, m_total});
        });
        const io::AtomicFile& file =
            m_st ? writer.safetensors(name, tensors, metadata) : writer.torchZip(name, tensors, aliases);
        writer.verified();
        result.tensors += tensors.size() + aliases.size();
        result.bytes += file.written();
        for (const auto& [rel, digests] : writer.digests())
            result.digests.push_back(
                {rel.empty() ? std::filesystem::path(file.finalPath()).filename().string() : rel,
                 file.written(), "", digests});
    }

    uint64_t planTotal() const { return m_planTotal; }
    uint64_t total() const { return m_total; }
    uint64_t done() const { return m_done; }
    const nlohmann::json& weightMap() const { return m_weightMap; }

private:
    const std::vector<SourceTensor>& m_plan;
    const std::vector<std::vector<size_t>>& m_shards;
    const bool m_st, m_oneFile;
    const ProgressSink& m_progress;
    const CancelToken& m_cancel;
    std::map<std::string, size_t> m_shardOf;
    nlohmann::json m_weightMap = nlohmann::json::object();
    uint64_t m_planTotal = 0, m_total = 0, m_done = 0;
};

std::string indexName(bool safetensors)
{
    return safetensors ? "model.safetensors.index.json" : "pytorch_model.bin.index.json";
}

// What the family says belongs beside the weights (config.json, tokenizer files), and the index
// of a sharded export, last.
void writeBesideWeights(io::OutputTransaction& tx, const TensorSet& set, const ShardWriter& shards,
                        size_t shardCount, bool safetensors, const std::string& checkpoint)
{
    for (const auto& [name, content] : set.exportFiles) {
        if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos)
            throw Error("refusing to write '" + name + "' named by the checkpoint: not a plain file name",
                        checkpoint);
        io::AtomicFile& file = tx.create(name);
        file.write(content.data(), content.size());
        file.finish();
    }
    if (shardCount < 2) return;
    // transformers' format: indent 2, sorted keys, trailing newline; ASCII as Python's json.dumps.
    nlohmann::json idx;
    idx["metadata"]["total_size"] = shards.planTotal();
    idx["weight_map"] = shards.weightMap();
    const std::string text = idx.dump(2, ' ', true) + "\n";
    io::AtomicFile& file = tx.create(indexName(safetensors));
    file.write(text.data(), text.size());
    file.finish();
}

// Everything a split export's plan depends on: the options that shape the output, every
// tensor's name, type and place, and the input files (a shard of another plan is no part).
uint64_t planFingerprint(const layout::OpenedTag& in, const ConsolidateOptions& options, const TensorSet& set,
                         const std::vector<std::vector<size_t>>& shards)
{
    std::ostringstream text;
    text << "ckpt export 1 " << set.tag << '\n'
         << int(options.format) << ' ' << options.maxShardSize << ' '
         << (options.dtype ? int(*options.dtype) : -1) << ' ' << options.excludeFrozen << ' ' << options.all
         << (options.raw ? " raw" : "") << '\n';
    for (const auto& g : options.ignore)
        text << "ignore " << g << '\n';
    for (size_t s = 0; s < shards.size(); ++s)
        for (size_t i : shards[s]) {
            const torch::OutTensor& t = set.tensors[i].tensor;
            text << s << ' ' << t.name << ' ' << int(t.dtype) << ' ' << t.nbytes;
            for (int64_t d : t.shape)
                text << ',' << d;
            text << '\n';
        }
    for (const SourceTensor& t : set.tensors)
        if (!t.aliasOf.empty()) text << "alias " << t.tensor.name << ' ' << t.aliasOf << '\n';
    for (const auto& [name, content] : set.exportFiles)
        text << "file " << name << ' ' << content.size() << '\n';
    std::vector<std::string> files;
    for (const auto& f : in->files)
        files.push_back(f.path);
    text << describeInputs(files);
    return fingerprintOf(text.str());
}

// One process's part of an export split across processes (ops/sharded.h), or its finalize.
ConsolidateResult consolidateSharded(const layout::OpenedTag& in, const std::string& outDir,
                                     const ConsolidateOptions& options, const ProgressSink& progress,
                                     const CancelToken& cancel)
{
    const ShardSpec& spec = options.shard;
    if (oneFileOutput(outDir, options))
        throw Error(
            "a split export writes a folder (its shards and index): give the output a folder name, not a "
            ".safetensors file",
            outDir);
    if (!options.manifestOut.empty())
        throw Error("--manifest-out does not combine with --shard or --finalize: each process streams only "
                    "its own shards; `ckpt verify OUT --write-manifest FILE` records the finished output",
                    outDir);
    if (options.overwrite)
        throw Error(
            "--overwrite does not combine with --shard or --finalize: the shards of one job share the "
            "folder; remove an earlier output first",
            outDir);
    const TensorSet set = modelToWrite(in, options);
    const bool st = options.format == ConsolidateOptions::Format::Safetensors;
    const auto shards = planShards(set.tensors, options.maxShardSize, false);
    ShardWriter writer(set.tensors, shards, options, false, progress, cancel);
    std::vector<WorkUnit> units;
    for (size_t s = 0; s < shards.size(); ++s)
        units.push_back({{writer.fileName(s)}, writer.bytesOf(s)});
    std::vector<std::string> binding;
    for (const auto& [name, content] : set.exportFiles)
        binding.push_back(name);
    binding.push_back(indexName(st));
    const ShardedOutput out(in.inputs(), outDir, spec, planFingerprint(in, options, set, shards), units,
                            binding);

    ConsolidateResult result;
    result.tag = set.tag;
    result.warnings = set.warnings;
    if (!spec.finalize) {
        const std::vector<size_t>& mine = out.mine();
        writer.expect(out.bytesOf(mine));
        if (mine.empty())
            result.warnings.push_back("this split leaves " + spec.label() +
                                      " nothing to write: the export has " + std::to_string(units.size()) +
                                      " shard file(s); a smaller --max-shard-size makes more");
        std::unique_ptr<io::OutputTransaction> tx;
        out.writeMine(
            [&]() -> io::OutputTransaction& {
                tx = out.transaction();
                reportNotes(progress, tx->notes());
                return *tx;
            },
            [&](size_t s, io::OutputTransaction& t) {
                writer.writeShard(t, s, result);
                result.files.push_back((fs::path(outDir) / units[s].files.front()).string());
            },
            [&](size_t s) {
                result.warnings.push_back(units[s].files.front() + " was written by an earlier run: kept");
            });
        if (!spec.finalizeWhenAllDone) {
            if (progress) progress({1000, "done", writer.done(), writer.total()});
            return result;
        }
        out.waitForOtherShards(progress, cancel);
    }
    // The result describes the whole output now: every shard's files, then the binding ones.
    const ShardedOutput::Written shardFiles = out.checkComplete(progress, cancel);
    auto tx = out.transaction();
    writeBesideWeights(*tx, set, writer, shards.size(), st, in.root());
    cancel.throwIfCancelled();
    tx->commit();
    out.removeMarkers();
    result.files = shardFiles.files;
    result.bytes = shardFiles.bytes;
    result.tensors = set.tensors.size();
    for (const auto& f : tx->files()) {
        result.files.push_back(f);
        std::error_code ec;
        result.bytes += fs::file_size(f, ec);
    }
    if (progress) progress({1000, "done", writer.done(), writer.total()});
    return result;
}

ConsolidateResult consolidateOnce(const layout::OpenedTag& in, const std::string& outDir,
                                  const ConsolidateOptions& options, const ProgressSink& progress,
                                  const CancelToken& cancel)
{
    if (options.shard.sharded()) return consolidateSharded(in, outDir, options, progress, cancel);
    const bool oneFile = oneFileOutput(outDir, options);
    // Before any work: the output may not be, contain, or lie inside the checkpoint.
    // Read only when it may be replaced: an earlier export's index names its shards.
    const std::set<std::string> earlier =
        oneFile || !options.overwrite ? std::set<std::string>{} : earlierExportFiles(outDir);
    io::OutputTransaction tx(
        in.inputs(), outDir, shapeOf(oneFile), existingRule(options),
        [&earlier](const std::string& name) { return earlier.count(name) || isShardName(name); });
    reportNotes(progress, tx.notes());
    const TensorSet set = modelToWrite(in, options);
    ConsolidateResult result;
    result.tag = set.tag;
    result.warnings = set.warnings;

    const auto shards = planShards(set.tensors, options.maxShardSize, oneFile);
    ShardWriter writer(set.tensors, shards, options, oneFile, progress, cancel);
    writer.expect(writer.planTotal());
    for (size_t s = 0; s < shards.size(); ++s)
        writer.writeShard(tx, s, result);
    if (oneFile && !set.exportFiles.empty())
        result.warnings.push_back(
            "a single .safetensors output holds the weights only; export to a folder to "
            "get the configuration files too");
    if (!oneFile)
        writeBesideWeights(tx, set, writer, shards.size(),
                           options.format == ConsolidateOptions::Format::Safetensors, in.root());
    cancel.throwIfCancelled();
    // Everything written and verified: only now do the files take their final names.
    tx.commit();
    if (!options.manifestOut.empty()) {
        writeManifest(in.inputs(), options.manifestOut, result.digests,
                      {{"checkpoint", in.root()}, {"tag", set.tag}});
        result.manifest = options.manifestOut;
    }
    for (const auto& f : tx.files())
        result.files.push_back(f);
    // A device that failed mid-job says so here (the output is the CPU's, identical).
    if (options.backend)
        for (auto& w : options.backend->takeWarnings())
            result.warnings.push_back(std::move(w));
    if (progress) progress({1000, "done", writer.done(), writer.total()});
    return result;
}

} // namespace

ConsolidateResult consolidate(const layout::OpenedTag& in, const std::string& outDir,
                              const ConsolidateOptions& options, const ProgressSink& progress,
                              const CancelToken& cancel)
{
    // A split job casts on the CPU: a device's wrong result could not be taken back by a redo,
    // since the units this process committed before it may already count for the job.
    if (options.shard.sharded() && options.backend && options.backend->name() != "cpu") {
        ConsolidateOptions cpu = options;
        cpu.backend = nullptr;
        ConsolidateResult r = consolidateOnce(in, outDir, cpu, progress, cancel);
        r.warnings.insert(r.warnings.begin(), "a job split across processes casts on the CPU, not on " +
                                                  options.backend->device());
        return r;
    }
    // A device whose result the self-check caught wrong: the whole export again on the CPU (the
    // first attempt's transaction removed what it had written).
    return gpu::runOnCpuIfWrong([&](bool cpuOnly) {
        if (!cpuOnly) return consolidateOnce(in, outDir, options, progress, cancel);
        ConsolidateOptions cpu = options;
        cpu.backend = nullptr;
        return consolidateOnce(in, outDir, cpu, progress, cancel);
    });
}

ConsolidateResult consolidate(const std::string& checkpoint, const std::string& outDir,
                              const ConsolidateOptions& options, const ProgressSink& progress,
                              const CancelToken& cancel)
{
    // Refused before anything is parsed.
    io::OutputTransaction::precheck({checkpoint}, outDir, shapeOf(oneFileOutput(outDir, options)),
                                    existingRule(options));
    if (!options.manifestOut.empty())
        io::OutputTransaction::precheck({checkpoint}, options.manifestOut,
                                        io::OutputTransaction::Shape::File);
    if (progress) progress({0, "reading the checkpoint layout", 0, 0});
    const layout::OpenedTag in =
        layout::openTag(checkpoint, options.tag, openingObserver(progress, cancel, "the checkpoint"));
    return consolidate(in, outDir, options, progress, cancel);
}

} // namespace ckpt::ops
