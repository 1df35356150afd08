#include "commands.h"

#include "ops/inspect.h"
#include "ops/universal.h"
#include "progress.h"

#include <chrono>
#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

int runUniversal(const UniversalArgs& a, const ops::CancelToken& cancel)
{
    ops::UniversalOptions o;
    o.tag = a.tag;
    o.injectMissingState = a.injectMissingState;
    o.overwrite = a.overwrite;
    o.shard = shardSpec(a.shard);
    const auto start = std::chrono::steady_clock::now();
    ops::UniversalResult r;
    {
        ProgressPrinter printer(a.quiet || a.json);
        r = ops::universal(a.input, a.output, o, printer.sink(), cancel);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t moved = r.tensorBytes + r.copiedBytes;
    if (a.json) {
        nlohmann::ordered_json doc = ops::toJson(r);
        doc["input"] = a.input;
        doc["seconds"] = seconds;
        std::cout << doc.dump(2) << "\n";
        return 0;
    }
    if (o.shard.sharded() && !o.shard.finalize && !o.shard.finalizeWhenAllDone) {
        std::cout << "tag " << r.tag << ", " << o.shard.label() << " (" << o.shard.source << "): wrote "
                  << r.files << " files, " << ops::humanBytes(r.bytesWritten) << " into " << r.output
                  << "; --finalize once every shard is done\n";
        return 0;
    }
    std::cout << "wrote " << r.output << ": Universal checkpoint of tag " << r.tag << " (ZeRO stage "
              << r.zeroStage << ", " << r.worldSize << " ranks"
              << (r.tensorParallel > 1 ? " x " + std::to_string(r.tensorParallel) + " tensor-parallel" : "")
              << "), " << r.parameters << " parameters, " << r.files << " files, "
              << ops::humanBytes(r.bytesWritten) << " in " << std::fixed;
    std::cout.precision(1);
    std::cout << seconds << " s";
    std::cout.precision(2);
    if (seconds > 0) std::cout << " (" << double(moved) / seconds / 1e9 << " GB/s)";
    std::cout << "\nwrote " << r.latestFile << " (load it with \"checkpoint\": {\"load_universal\": true})\n";
    for (const auto& w : r.warnings)
        std::cerr << logPrefix() << "warning: " << a.input << ": " << w << "\n";
    return 0;
}

} // namespace ckpt::cli
