#include "commands.h"

#include "ops/scan.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

int runScan(const ScanArgs& a)
{
    const ops::ScanReport r = ops::scanFile(a.path);
    int dangerous = 0;
    for (const auto& f : r.findings)
        dangerous += f.safety == pickle::Safety::Dangerous;
    if (a.json) {
        const nlohmann::ordered_json doc = ops::toJson(r);
        std::cout << doc.dump(2) << "\n";
    } else {
        std::cout << r.file << "  (" << r.format << ", " << r.pickles << " pickle(s), " << r.findings.size()
                  << " distinct globals, " << dangerous << " dangerous)\n";
        for (const auto& f : r.findings)
            std::cout << "  " << pickle::safetyName(f.safety)
                      << std::string(10 - std::string(pickle::safetyName(f.safety)).size(), ' ') << f.module
                      << "." << f.name << "  (" << f.count << "x, first in " << f.where << ")\n";
    }
    for (const auto& e : r.errors)
        std::cerr << "ckpt: warning: " << a.path << ": " << e << "\n";
    if (dangerous) {
        std::cerr << "ckpt: " << a.path << ": " << dangerous
                  << " dangerous global(s): torch.load(weights_only=False) of this file would run code\n";
        return 3;
    }
    if (!r.errors.empty() && r.findings.empty())
        throw Error("could not parse its pickle data: " + r.errors.front(), a.path);
    return 0;
}

} // namespace ckpt::cli
