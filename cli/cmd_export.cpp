#include "commands.h"

#include "ops/export.h"
#include "ops/inspect.h"
#include "progress.h"

#include <iostream>

namespace ckpt::cli {

int runExport(const ExportArgs& a, const ops::CancelToken& cancel)
{
    ops::ExportOptions opt;
    opt.skipUnsupported = a.skipUnsupported;
    ops::ExportResult r;
    {
        ProgressPrinter printer(a.quiet);
        r = ops::exportFileToSafetensors(a.input, a.output, opt, printer.sink(), cancel);
    }
    for (const auto& w : r.warnings)
        std::cerr << "ckpt: warning: " << a.input << ": " << w << "\n";
    std::cout << "wrote " << r.path << ": " << r.tensors << " tensors, " << ops::humanBytes(r.bytes) << "\n";
    return 0;
}

} // namespace ckpt::cli
