#include "commands.h"

#include "layout/family.h"
#include "ops/consolidate.h"
#include "ops/export.h"
#include "ops/inspect.h"
#include "progress.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

namespace {

std::optional<torch::DType> parseDtype(const std::string& s)
{
    if (s.empty()) return std::nullopt;
    if (s == "fp32" || s == "float32") return torch::DType::Float32;
    if (s == "bf16" || s == "bfloat16") return torch::DType::BFloat16;
    if (s == "fp16" || s == "float16") return torch::DType::Float16;
    throw Error("--dtype must be fp32, bf16 or fp16, not '" + s + "'");
}

} // namespace

int runExport(const ExportArgs& a, const ops::CancelToken& cancel)
{
    // A single file is copied into one safetensors file; every other family becomes a folder.
    if (!layout::familyOf(a.input).singleFile()) {
        ops::ConsolidateOptions opt;
        opt.tag = a.tag;
        if (a.format != "safetensors" && a.format != "bin")
            throw Error("--format must be safetensors or bin");
        opt.format = a.format == "bin" ? ops::ConsolidateOptions::Format::Bin
                                       : ops::ConsolidateOptions::Format::Safetensors;
        opt.maxShardSize = ops::parseShardSize(a.maxShardSize);
        opt.excludeFrozen = a.excludeFrozen;
        opt.all = a.all;
        opt.raw = a.raw;
        opt.ignore = a.ignore;
        opt.dtype = parseDtype(a.dtype);
        opt.overwrite = a.overwrite;
        opt.backend = backendFor(a.device, a.quiet || a.device == "auto");
        opt.shard = shardSpec(a.shard);
        opt.manifestOut = a.manifestOut;
        ops::ConsolidateResult r;
        {
            ProgressPrinter printer(a.quiet || a.json);
            r = ops::consolidate(a.input, a.output, opt, printer.sink(), cancel);
        }
        if (a.json) {
            nlohmann::ordered_json doc = ops::toJson(r);
            doc["input"] = a.input;
            doc["output"] = a.output;
            if (opt.shard.sharded()) doc["shard"] = opt.shard.label();
            std::cout << doc.dump(2) << "\n";
            return 0;
        }
        for (const auto& w : r.warnings)
            std::cerr << logPrefix() << "warning: " << a.input << ": " << w << "\n";
        if (opt.shard.sharded() && !opt.shard.finalize && !opt.shard.finalizeWhenAllDone)
            std::cout << "tag " << r.tag << ", " << opt.shard.label() << " (" << opt.shard.source
                      << "): wrote " << r.tensors << " tensors, " << ops::humanBytes(r.bytes) << " in "
                      << r.files.size() << " file(s) to " << a.output
                      << "; --finalize once every shard is done\n";
        else if (opt.shard.finalizeWhenAllDone)
            std::cout << "tag " << r.tag << ", " << opt.shard.label() << " (" << opt.shard.source
                      << "): every shard done, finalized: " << r.tensors << " tensors, "
                      << ops::humanBytes(r.bytes) << " in " << r.files.size() << " file(s) in " << a.output
                      << "\n";
        else
            std::cout << "tag " << r.tag << ": wrote " << r.tensors << " tensors, "
                      << ops::humanBytes(r.bytes) << " in " << r.files.size() << " file(s) to " << a.output
                      << "\n";
        for (const auto& f : r.files)
            std::cout << "  " << f << "\n";
        if (!r.manifest.empty()) std::cout << "manifest written: " << r.manifest << "\n";
        return 0;
    }
    if (!a.shard.shard.empty() || a.shard.finalize)
        throw Error(
            "--shard and --finalize split a checkpoint's export; a single file is exported by one process",
            a.input);
    if (!a.tag.empty() || !a.dtype.empty() || a.format != "safetensors" || a.excludeFrozen || a.all ||
        a.raw || !a.ignore.empty())
        throw Error(
            "--tag, --dtype, --format, --exclude-frozen, --all, --raw and --ignore apply to checkpoints; a "
            "single file is "
            "exported as one safetensors file",
            a.input);
    ops::ExportOptions opt;
    opt.skipUnsupported = a.skipUnsupported;
    opt.manifestOut = a.manifestOut;
    ops::ExportResult r;
    {
        ProgressPrinter printer(a.quiet || a.json);
        r = ops::exportFileToSafetensors(a.input, a.output, opt, printer.sink(), cancel);
    }
    if (a.json) {
        nlohmann::ordered_json doc = ops::toJson(r);
        doc["input"] = a.input;
        std::cout << doc.dump(2) << "\n";
        return 0;
    }
    for (const auto& w : r.warnings)
        std::cerr << logPrefix() << "warning: " << a.input << ": " << w << "\n";
    std::cout << "wrote " << r.path << ": " << r.tensors << " tensors, " << ops::humanBytes(r.bytes) << "\n";
    if (!r.manifest.empty()) std::cout << "manifest written: " << r.manifest << "\n";
    return 0;
}

} // namespace ckpt::cli
