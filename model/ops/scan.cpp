#include "ops/scan.h"

#include "io/archive.h"
#include "io/job.h"
#include "io/location.h"
#include "io/zip_reader.h"
#include "ops/detect.h"

#include <algorithm>

namespace ckpt::ops {

bool ScanReport::dangerous() const
{
    for (const auto& f : findings)
        if (f.safety == pickle::Safety::Dangerous) return true;
    return false;
}

namespace {

void record(ScanReport& r, const std::vector<pickle::GlobalRef>& globals, const std::string& where,
            uint64_t base)
{
    for (const auto& g : globals) {
        auto it = std::find_if(r.findings.begin(), r.findings.end(), [&](const ScanFinding& f) {
            return f.module == g.module && f.name == g.name;
        });
        if (it != r.findings.end()) {
            ++it->count;
            continue;
        }
        r.findings.push_back({g.module, g.name, pickle::classifyGlobal(g.module, g.name), 1,
                              where + " @ " + std::to_string(base + g.offset)});
    }
}

// Parses one pickle at `data`; returns its length, or 0 if it did not parse.
uint64_t scanPickle(ScanReport& r, io::ByteSpan data, const std::string& where, uint64_t base)
{
    pickle::Arena arena;
    std::vector<pickle::GlobalRef> seen;
    ++r.pickles;
    try {
        const auto res = pickle::parse(
            data, arena, [](const pickle::Value*) { return int64_t(-1); }, {}, &seen);
        record(r, seen, where, base);
        return res.end;
    } catch (const Error& e) {
        record(r, seen, where, base);
        r.errors.push_back(
            where + ": " + e.message() +
            (e.offset() != Error::kNoOffset ? " (at byte " + std::to_string(base + e.offset()) + ")" : ""));
        return 0;
    }
}

} // namespace

namespace {

// The pickles of one file, opened: a torch.save zip's .pkl entries, a legacy file's five pickles
// back to back, or a plain pickle.
ScanReport scanMapped(const std::shared_ptr<const io::MappedFile>& file, const std::string& name,
                      FileKind kind)
{
    ScanReport r;
    r.file = name;
    r.format = kindName(kind);
    try {
        switch (kind) {
        case FileKind::TorchZip: {
            io::ZipReader zip(file);
            for (const auto& e : zip.entries()) {
                const bool pklName = e.name.size() > 4 && e.name.substr(e.name.size() - 4) == ".pkl";
                if (!pklName) continue;
                scanPickle(r, zip.read(e).bytes, e.name, 0);
            }
            if (r.pickles == 0) r.errors.push_back("zip archive holds no .pkl entry");
            break;
        }
        case FileKind::TorchLegacy:
        case FileKind::Pickle:
        case FileKind::Unknown: {
            // A legacy torch file is five pickles back to back; a plain pickle file is one.
            uint64_t pos = 0;
            const int maxPickles = kind == FileKind::TorchLegacy ? 5 : 1;
            file->ensure(0, file->size()); // where each pickle ends is known only by reading it
            for (int i = 0; i < maxPickles && pos < file->size(); ++i) {
                const uint64_t n =
                    scanPickle(r, file->bytes().subspan(pos), "pickle " + std::to_string(i + 1), pos);
                if (n == 0) break;
                pos += n;
            }
            break;
        }
        case FileKind::Safetensors:
            break; // no pickle, nothing can run
        }
    } catch (const Error& e) {
        throw e.withFile(name);
    }
    return r;
}

bool holdsPickles(FileKind k)
{
    return k == FileKind::TorchZip || k == FileKind::TorchLegacy || k == FileKind::Pickle;
}

// One file of a folder: its own report, or its members' when it is an archive; else skipped.
void scanOne(const std::string& path, const std::string& relative, FolderScan& out)
{
    if (!io::wrapperOfFile(path).empty()) {
        for (const auto& m : io::unwrap(path).members) {
            if (m.directory || !m.data || m.data->size() == 0) continue;
            const std::string id = io::memberId(relative, m.name.empty() ? io::fileName(path) : m.name);
            const FileKind kind = detect(*m.data, id);
            if (holdsPickles(kind))
                out.files.push_back(scanMapped(m.data, id, kind));
            else
                out.skipped.push_back(id);
        }
        return;
    }
    const auto file = io::MappedFile::open(path);
    const FileKind kind = file->size() ? detect(*file, path) : FileKind::Unknown;
    if (holdsPickles(kind))
        out.files.push_back(scanMapped(file, relative, kind));
    else
        out.skipped.push_back(relative);
}

} // namespace

ScanReport scanFile(const std::string& path)
{
    const auto file = io::MappedFile::open(path);
    ScanReport r = scanMapped(file, path, detect(*file, path));
    // Nothing read before the pickle broke: no report to give, the file is not what it claims.
    if (!r.errors.empty() && r.findings.empty())
        throw Error("could not parse its pickle data: " + r.errors.front(), path);
    return r;
}

bool FolderScan::dangerous() const
{
    return std::any_of(files.begin(), files.end(), [](const ScanReport& r) { return r.dangerous(); });
}

FolderScan scanFolder(const std::string& path, const std::function<bool()>& cancelled)
{
    FolderScan out;
    out.path = path;
    if (io::pathKind(path) == io::PathKind::File) { // an archive (or any one file) on its own
        scanOne(path, io::fileName(path), out);
        return out;
    }
    for (const auto& f : io::listFilesBelow(path)) {
        if (cancelled && cancelled()) throw Cancelled();
        scanOne(f.path, f.relative, out);
    }
    if (out.files.empty() && out.skipped.empty()) throw Error("the folder holds no file", path);
    return out;
}

} // namespace ckpt::ops
