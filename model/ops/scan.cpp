#include "ops/scan.h"

#include "io/zip_reader.h"
#include "ops/detect.h"

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

ScanReport scanFile(const std::string& path)
{
    ScanReport r;
    r.file = path;
    const FileKind kind = detect(path);
    r.format = kindName(kind);
    const auto file = io::MappedFile::open(path);
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
        throw e.withFile(path);
    }
    return r;
}

} // namespace ckpt::ops
