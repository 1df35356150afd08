#include "ops/consolidate.h"

#include "cast.h"
#include "compute_backend.h"
#include "io/output.h"
#include "layout/deepspeed.h"
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

} // namespace

ConsolidateResult consolidate(const std::string& checkpoint, const std::string& outDir,
                              const ConsolidateOptions& options, const ProgressSink& progress,
                              const CancelToken& cancel)
{
    // An output named *.safetensors is that one file (every tensor in it, no index); any other
    // name is a folder as save_pretrained writes it.
    const bool oneFile = options.format == ConsolidateOptions::Format::Safetensors && outDir.size() > 12 &&
                         outDir.compare(outDir.size() - 12, 12, ".safetensors") == 0;
    // Before any work: the output may not be, contain, or lie inside the checkpoint.
    // Read only when it may be replaced: an earlier export's index names its shards.
    const std::set<std::string> earlier =
        oneFile || !options.overwrite ? std::set<std::string>{} : earlierExportFiles(outDir);
    io::OutputTransaction tx(
        {checkpoint}, outDir,
        oneFile ? io::OutputTransaction::Shape::File : io::OutputTransaction::Shape::Folder,
        options.overwrite ? io::OutputTransaction::Existing::Replace
                          : io::OutputTransaction::Existing::Refuse,
        [&earlier](const std::string& name) { return earlier.count(name) || isShardName(name); });
    reportNotes(progress, tx.notes());
    if (progress) progress({0, "reading the checkpoint layout", 0, 0});
    SourceOptions so;
    so.tag = options.tag;
    so.dtype = options.dtype;
    so.excludeFrozen = options.excludeFrozen;
    so.all = options.all;
    so.ignore = options.ignore;
    so.backend = options.backend;
    so.opening = openingObserver(progress, cancel, "the checkpoint");
    const TensorSet set = anyTensors(checkpoint, so);
    const std::vector<SourceTensor>& plan = set.tensors;
    ConsolidateResult result;
    result.tag = set.tag;
    result.warnings = set.warnings;

    // huggingface_hub's splitter, in state-dict order; an alias goes where its target went.
    const bool st = options.format == ConsolidateOptions::Format::Safetensors;
    std::vector<std::vector<size_t>> shards;
    std::vector<size_t> current;
    uint64_t currentSize = 0, totalSize = 0;
    for (size_t i = 0; i < plan.size(); ++i) {
        const SourceTensor& p = plan[i];
        if (!p.aliasOf.empty()) continue;
        const uint64_t size = p.tensor.nbytes;
        totalSize += size;
        if (size > options.maxShardSize && !oneFile) { // its own shard, listed before the one being filled
            shards.push_back({i});
            continue;
        }
        if (currentSize + size > options.maxShardSize && !current.empty() && !oneFile) {
            shards.push_back(current);
            current.clear();
            currentSize = 0;
        }
        current.push_back(i);
        currentSize += size;
    }
    if (!current.empty() || shards.empty()) shards.push_back(current);
    std::map<std::string, size_t> shardOf;
    for (size_t s = 0; s < shards.size(); ++s)
        for (size_t i : shards[s])
            shardOf[plan[i].tensor.name] = s;

    uint64_t done = 0;
    auto onBytes = [&](uint64_t n) {
        done += n;
        if (progress) progress({int(totalSize ? done * 950 / totalSize : 950), "writing", done, totalSize});
    };
    nlohmann::json weightMap = nlohmann::json::object();
    for (size_t s = 0; s < shards.size(); ++s) {
        const std::string name = oneFile ? std::string() : shardName(st, s, shards.size());
        io::AtomicFile* file = &tx.create(name);
        std::vector<torch::OutTensor> tensors;
        for (size_t i : shards[s]) {
            tensors.push_back(plan[i].tensor);
            weightMap[plan[i].tensor.name] = name;
        }
        std::vector<torch::Alias> aliases;
        std::map<std::string, std::string> metadata{{"format", "pt"}};
        for (const SourceTensor& p : plan) {
            if (p.aliasOf.empty() || !shardOf.count(p.aliasOf) || shardOf[p.aliasOf] != s) continue;
            if (st)
                metadata[p.tensor.name] = p.aliasOf; // one copy; the alias recorded as save_model does
            else {
                aliases.push_back({p.tensor.name, p.aliasOf});
                weightMap[p.tensor.name] = name;
            }
        }
        if (st) {
            const auto hashes = writeSafetensors(*file, tensors, metadata, onBytes, cancel);
            verifySafetensors(*file, tensors, hashes, cancel);
        } else {
            const auto hashes = torch::writeTorchZip(*file, tensors, aliases, "archive", onBytes, cancel);
            file->finish();
            verifyTorchZip(*file, tensors, aliases, hashes, cancel);
        }
        result.tensors += tensors.size() + aliases.size();
        result.bytes += file->written();
    }
    // What the family says belongs beside the weights (config.json, tokenizer files).
    if (oneFile && !set.exportFiles.empty())
        result.warnings.push_back(
            "a single .safetensors output holds the weights only; export to a folder to "
            "get the configuration files too");
    for (const auto& [name, content] : oneFile ? decltype(set.exportFiles){} : set.exportFiles) {
        if (name.empty() || name.front() == '/' || name.find("..") != std::string::npos)
            throw Error("refusing to write '" + name + "' named by the checkpoint: not a plain file name",
                        checkpoint);
        io::AtomicFile& file = tx.create(name);
        file.write(content.data(), content.size());
        file.finish();
    }
    if (shards.size() > 1) {
        // transformers' format: indent 2, sorted keys, trailing newline; ASCII as Python's json.dumps.
        nlohmann::json idx;
        idx["metadata"]["total_size"] = totalSize;
        idx["weight_map"] = weightMap;
        const std::string text = idx.dump(2, ' ', true) + "\n";
        io::AtomicFile& file =
            tx.create(st ? "model.safetensors.index.json" : "pytorch_model.bin.index.json");
        file.write(text.data(), text.size());
        file.finish();
    }
    cancel.throwIfCancelled();
    // Everything written and verified: only now do the files take their final names.
    tx.commit();
    for (const auto& f : tx.files())
        result.files.push_back(f);
    // A device that failed mid-job says so here (the output is the CPU's, identical).
    if (options.backend)
        for (auto& w : options.backend->takeWarnings())
            result.warnings.push_back(std::move(w));
    if (progress) progress({1000, "done", done, totalSize});
    return result;
}

} // namespace ckpt::ops
