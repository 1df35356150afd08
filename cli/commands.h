// One function per `ckpt` subcommand; each returns the process exit code (0 ok, 1 error,
// 3 scan found danger). Errors escape as ckpt::Error and main() prints them as one line.
#pragma once

#include "ops/job.h"

#include <string>

namespace ckpt::cli {

struct InspectArgs
{
    std::string path;
    std::string tag;
    bool json = false;
};
struct ExportArgs
{
    std::string input;
    std::string output;
    std::string tag;
    std::string format = "safetensors";
    std::string maxShardSize = "5GB";
    std::string dtype = "fp32";
    bool excludeFrozen = false;
    bool skipUnsupported = false;
    bool quiet = false;
};
struct ScanArgs
{
    std::string path;
    bool json = false;
};

int runInspect(const InspectArgs& a);
int runExport(const ExportArgs& a, const ops::CancelToken& cancel);
int runScan(const ScanArgs& a);

} // namespace ckpt::cli
