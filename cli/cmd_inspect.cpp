#include "commands.h"

#include "layout/family.h"
#include "ops/inspect.h"

#include <iostream>

namespace ckpt::cli {

int runInspect(const InspectArgs& a)
{
    // A checkpoint shows tags, files and parameters; a single file its whole object tree.
    if (!layout::familyOf(a.path).singleFile()) {
        const auto listing = ops::listCheckpoint(a.path, a.tag, a.json, a.entries);
        if (a.json) {
            ops::writeCheckpointJson(listing, std::cout);
            std::cout << "\n";
        } else {
            ops::printCheckpoint(listing, std::cout);
        }
        // As for a file: warnings also go to stderr, where scripts reading --json see them.
        for (const auto& w : listing.warnings)
            std::cerr << "ckpt: warning: " << a.path << ": " << w << "\n";
        for (const auto& t : listing.tags)
            for (const auto& w : t.warnings) {
                if (w.rfind("cannot be read: ", 0) == 0) continue; // already a checkpoint warning
                std::cerr << "ckpt: warning: " << a.path << ": tag " << t.header.name << ": " << w << "\n";
            }
        return 0;
    }
    if (!a.tag.empty()) throw Error("--tag applies to checkpoint folders, not to a single file", a.path);
    const auto listing = ops::listFile(a.path);
    if (a.json)
        std::cout << ops::toJson(listing).dump(2) << "\n";
    else
        ops::printInspect(listing, std::cout);
    for (const auto& w : listing.warnings)
        std::cerr << "ckpt: warning: " << a.path << ": " << w << "\n";
    return 0;
}

} // namespace ckpt::cli
