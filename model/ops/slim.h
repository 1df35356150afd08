// `ckpt slim`: rewrites torch.save files so each storage holds only the bytes its views reach.
// Overlapping views stay one storage (offsets remapped); views that were disjoint may be split
// into storages of their own; strides are kept, so the gaps inside one view stay. Everything else in the
// pickle is written back as it was (pickle::write), so torch.load gives the same objects, the
// same values and the same sharing, from a file that is not bloated. Storages are copied range
// by range from the mapped input, never whole into memory; the output is re-read and every
// tensor compared before it takes its name.
#pragma once

#include "layout/file_set.h"
#include "ops/job.h"

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

namespace ckpt::ops {

struct SlimOptions
{
    bool dryRun = false; // plan and report only; nothing is written
    // A folder output that holds files: replace them (else refused). Entries the new output
    // writes are replaced; others are kept.
    bool overwrite = false;
};

struct SlimFile
{
    std::string path;   // relative to the input folder (or the input file itself)
    std::string action; // "slimmed", "copied (not bloated)", "copied (not a torch.save file)"
    uint64_t bytesBefore = 0;
    uint64_t bytesAfter = 0; // exact when written; planned for a dry run
    uint64_t storageBefore = 0, storageAfter = 0, usedBytes = 0;
    size_t storagesBefore = 0, storagesAfter = 0;

    // Its fields as `ckpt slim --json` and Python name them (ops/describe.h).
    template <class V> static void describe(V& v)
    {
        v("path", &SlimFile::path);
        v("action", &SlimFile::action);
        v("bytes_before", &SlimFile::bytesBefore);
        v("bytes_after", &SlimFile::bytesAfter);
        v("storage_bytes_before", &SlimFile::storageBefore);
        v("storage_bytes_after", &SlimFile::storageAfter);
        v("used_bytes", &SlimFile::usedBytes);
        v("storages_before", &SlimFile::storagesBefore);
        v("storages_after", &SlimFile::storagesAfter);
    }
};

struct SlimResult
{
    std::vector<SlimFile> files;
    std::vector<std::string> warnings;
    uint64_t bytesBefore() const;
    uint64_t bytesAfter() const;

    template <class V> static void describe(V& v)
    {
        v("files", &SlimResult::files);
        v("bytes_before", &SlimResult::bytesBefore);
        v("bytes_after", &SlimResult::bytesAfter);
        v("warnings", &SlimResult::warnings);
    }
};
// `ckpt slim --json`: each file's action and sizes (the command adds its input and output).
nlohmann::ordered_json toJson(const SlimResult& r);

// PATH a torch.save file (zip or legacy) and OUT a file, or PATH a folder and OUT a new folder
// with the same tree. Throws Error naming the file on anything it cannot do.
// `parsed`: an opened checkpoint's parsed files (the window's): a file it holds is not parsed again.
SlimResult slim(const std::string& input, const std::string& output, const SlimOptions& options,
                const ProgressSink& progress, const CancelToken& cancel,
                const layout::FileSet* parsed = nullptr);

} // namespace ckpt::ops
