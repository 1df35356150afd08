#include "commands.h"

#include "ops/inspect.h"
#include "ops/verify.h"
#include "progress.h"

#include <iostream>
#include <nlohmann/json.hpp>

namespace ckpt::cli {

// 0: whole; 4: damaged (each problem one line on stderr, naming the file); 1 (thrown): could not check.
int runVerify(const VerifyArgs& a, const ops::CancelToken& cancel)
{
    ops::VerifyOptions o;
    o.tag = a.tag;
    o.allTags = a.allTags;
    o.manifest = a.manifest;
    o.writeManifest = a.writeManifest;
    o.megatronManifest = a.format == "megatron";
    ops::VerifyReport r;
    {
        ProgressPrinter printer(a.quiet || a.json);
        r = ops::verify(a.path, o, printer.sink(), cancel);
    }
    if (a.json) {
        std::cout << ops::toJson(r).dump(2) << "\n";
    } else {
        std::cout << r.family << ", " << (r.tags.empty() ? std::string("one file") : "tag(s)");
        for (size_t i = 0; i < r.tags.size(); ++i)
            std::cout << (i ? ", " : " ") << r.tags[i];
        std::cout << ": " << r.files.size() << " file(s), " << ops::humanBytes(r.bytes) << " read\n";
        for (const auto& f : r.files)
            std::cout << "  "
                      << (f.status == "ok"            ? "ok         "
                          : f.status == "not covered" ? "not covered"
                                                      : "DAMAGED    ")
                      << "  " << f.name << "  (" << f.format << ")\n";
        for (const auto& n : r.notes)
            std::cout << "note: " << n << "\n";
        if (!r.manifestWritten.empty()) std::cout << "manifest written: " << r.manifestWritten << "\n";
    }
    for (const auto& p : r.problems)
        std::cerr << "ckpt: damaged: " << p << "\n";
    for (const auto& f : r.files)
        for (const auto& p : f.problems)
            std::cerr << "ckpt: damaged: " << f.path << ": " << p << "\n";
    if (r.whole()) {
        if (!a.json) std::cout << "whole\n";
        return 0;
    }
    return 4;
}

} // namespace ckpt::cli
