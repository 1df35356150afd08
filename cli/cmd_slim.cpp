#include "commands.h"

#include "ops/inspect.h"
#include "ops/slim.h"
#include "progress.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

int runSlim(const SlimArgs& a, const ops::CancelToken& cancel)
{
    ops::SlimOptions o;
    o.dryRun = a.dryRun;
    o.overwrite = a.overwrite;
    ops::SlimResult r;
    {
        ProgressPrinter printer(a.quiet || a.json);
        r = ops::slim(a.input, a.output, o, printer.sink(), cancel);
    }
    const uint64_t before = r.bytesBefore(), after = r.bytesAfter();
    if (a.json) {
        nlohmann::ordered_json doc = ops::toJson(r);
        doc["input"] = a.input;
        doc["output"] = a.output;
        doc["dry_run"] = a.dryRun;
        std::cout << doc.dump(2) << "\n";
        return 0;
    }
    const char* verb = a.dryRun ? "would write" : "wrote";
    for (const auto& f : r.files) {
        std::cout << f.action << "  " << f.path << ": " << ops::humanBytes(f.bytesBefore) << " -> "
                  << ops::humanBytes(f.bytesAfter);
        if (f.action == "slimmed")
            std::cout << " (storages " << ops::humanBytes(f.storageBefore) << " -> "
                      << ops::humanBytes(f.storageAfter) << "; the tensors use "
                      << ops::humanBytes(f.usedBytes) << ")";
        std::cout << "\n";
    }
    std::cout << verb << " " << a.output << ": " << ops::humanBytes(before) << " -> "
              << ops::humanBytes(after);
    if (before > after)
        std::cout << ", " << ops::humanBytes(before - after) << " smaller ("
                  << (before - after) * 100 / before << "%)";
    std::cout << "\n";
    for (const auto& w : r.warnings)
        std::cerr << "ckpt: warning: " << a.input << ": " << w << "\n";
    return 0;
}

} // namespace ckpt::cli
