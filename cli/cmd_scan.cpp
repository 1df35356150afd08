#include "commands.h"

#include "io/archive.h"
#include "io/location.h"
#include "ops/scan.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

namespace {

// `all`: every global; else (a folder's many files) only those that are not known safe.
void printReport(const ops::ScanReport& r, bool all = true)
{
    int dangerous = 0;
    for (const auto& f : r.findings)
        dangerous += f.safety == pickle::Safety::Dangerous;
    std::cout << r.file << "  (" << r.format << ", " << r.pickles << " pickle(s), " << r.findings.size()
              << " distinct globals, " << dangerous << " dangerous)\n";
    for (const auto& f : r.findings)
        if (all || f.safety != pickle::Safety::TensorSafe)
            std::cout << "  " << pickle::safetyName(f.safety)
                      << std::string(10 - std::string(pickle::safetyName(f.safety)).size(), ' ') << f.module
                      << "." << f.name << "  (" << f.count << "x, first in " << f.where << ")\n";
}

// A folder (or an archive): every pickle of every file, members included; exit 3 if any is
// dangerous, and every file that could not be read to its end said as a warning.
int runScanFolder(const ScanArgs& a)
{
    const ops::FolderScan s = ops::scanFolder(a.path);
    if (a.json) {
        std::cout << ops::toJson(s).dump(2) << "\n";
    } else {
        uint64_t pickles = 0;
        for (const auto& r : s.files) {
            printReport(r, false);
            pickles += uint64_t(r.pickles);
        }
        std::cout << s.files.size() << " file(s) with pickles scanned (" << pickles << " pickle(s)), "
                  << s.skipped.size() << " holding none (safetensors, JSON, text: nothing to run)\n";
    }
    int dangerousFiles = 0;
    for (const auto& r : s.files) {
        for (const auto& e : r.errors)
            std::cerr << "ckpt: warning: " << r.file << ": " << e << "\n";
        dangerousFiles += r.dangerous();
    }
    if (dangerousFiles) {
        std::cerr
            << "ckpt: " << a.path << ": " << dangerousFiles
            << " file(s) with dangerous globals: torch.load(weights_only=False) of them would run code\n";
        return 3;
    }
    return 0;
}

} // namespace

int runScan(const ScanArgs& a)
{
    if (io::pathKind(a.path) == io::PathKind::Folder || !io::wrapperOfFile(a.path).empty())
        return runScanFolder(a);
    const ops::ScanReport r = ops::scanFile(a.path);
    int dangerous = 0;
    for (const auto& f : r.findings)
        dangerous += f.safety == pickle::Safety::Dangerous;
    if (a.json) {
        const nlohmann::ordered_json doc = ops::toJson(r);
        std::cout << doc.dump(2) << "\n";
    } else {
        printReport(r);
    }
    for (const auto& e : r.errors)
        std::cerr << "ckpt: warning: " << a.path << ": " << e << "\n";
    if (dangerous) {
        std::cerr << "ckpt: " << a.path << ": " << dangerous
                  << " dangerous global(s): torch.load(weights_only=False) of this file would run code\n";
        return 3;
    }
    return 0;
}

} // namespace ckpt::cli
