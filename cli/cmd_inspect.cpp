#include "commands.h"

#include "layout/deepspeed.h"
#include "layout/recognize.h"
#include "ops/inspect.h"

#include <iostream>

namespace ckpt::cli {

int runInspect(const InspectArgs& a)
{
    // A folder is a checkpoint (tags, ranks, parameters); a file is one torch/safetensors file.
    if (layout::recognize(a.path) == layout::Family::DeepSpeed) {
        const auto doc = ops::inspectCheckpoint(a.path, a.tag);
        if (a.json)
            std::cout << doc.dump(2) << "\n";
        else
            ops::printCheckpoint(doc, std::cout);
        return 0;
    }
    if (!a.tag.empty()) throw Error("--tag applies to checkpoint folders, not to a single file", a.path);
    const auto doc = ops::inspectFile(a.path);
    if (a.json)
        std::cout << doc.dump(2) << "\n";
    else
        ops::printInspect(doc, std::cout);
    for (const auto& w : doc["warnings"])
        std::cerr << "ckpt: warning: " << a.path << ": " << w.get<std::string>() << "\n";
    return 0;
}

} // namespace ckpt::cli
