#include "commands.h"

#include "ops/inspect.h"

#include <iostream>

namespace ckpt::cli {

int runInspect(const InspectArgs& a)
{
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
