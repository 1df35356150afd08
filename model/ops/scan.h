// Lists every global a file's pickles reference and marks the dangerous ones. Parses only; a
// stream that breaks part-way still reports what it referenced up to that point.
#pragma once

#include "pickle/machine.h"
#include "pickle/safety.h"

#include <functional>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ckpt::ops {

struct ScanFinding
{
    std::string module;
    std::string name;
    pickle::Safety safety;
    int count = 0;
    std::string where; // "archive/data.pkl @ 12"

    template <class V> static void describe(V& v)
    {
        v("module", &ScanFinding::module);
        v("name", &ScanFinding::name);
        v("safety", [](const ScanFinding& f) { return std::string(pickle::safetyName(f.safety)); });
        v("count", &ScanFinding::count);
        v("first_seen", &ScanFinding::where);
    }
};

struct ScanReport
{
    std::string file;
    std::string format;
    int pickles = 0;
    std::vector<ScanFinding> findings; // first-seen order
    std::vector<std::string> errors;   // pickles that could not be parsed to the end
    bool dangerous() const;

    template <class V> static void describe(V& v)
    {
        v("file", &ScanReport::file);
        v("format", &ScanReport::format);
        v("pickles", &ScanReport::pickles);
        v("dangerous", &ScanReport::dangerous);
        v("globals", &ScanReport::findings);
        v("errors", &ScanReport::errors);
    }
};
// `ckpt scan --json`: the globals referenced, with their safety, and the pickles left unread.
nlohmann::ordered_json toJson(const ScanReport& r);

// One file's pickles. Throws when none of them could be read up to a single global (the file is
// not what it claims); a pickle that breaks later is reported in `errors`, beside what it held.
ScanReport scanFile(const std::string& path);

// `ckpt scan` of a whole checkpoint, before anyone torch.loads it: every file under `path` (any
// depth, links not followed, local or listed in an object store) that holds pickles, and every
// such member of the tar and compressed files there (Composer's per-rank tarballs). `path` may
// also be one archive file: its members.
struct FolderScan
{
    std::string path;
    std::vector<ScanReport> files;    // by relative path; a member as "<archive>!<member>"
    std::vector<std::string> skipped; // files that hold no pickle (safetensors, JSON, text): nothing to run
    bool dangerous() const;

    template <class V> static void describe(V& v)
    {
        v("path", &FolderScan::path);
        v("dangerous", &FolderScan::dangerous);
        v("files", &FolderScan::files);
        v("skipped", &FolderScan::skipped);
    }
};
// `cancelled` is asked between two files: true stops the scan with Cancelled.
FolderScan scanFolder(const std::string& path, const std::function<bool()>& cancelled = {});
nlohmann::ordered_json toJson(const FolderScan& r);

} // namespace ckpt::ops
