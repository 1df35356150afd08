// What the fuzz targets of checkpoint folders share: a private temporary folder per process
// (removed at exit) holding copies of committed fixtures, one file of which a target replaces with
// the fuzzed bytes before opening the checkpoint the way the window and `ckpt` do, and reading
// every tensor it gives.
#pragma once

#include "io/error.h"
#include "layout/family.h"
#include "ops/tensor_source.h"

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>
#include <vector>

namespace fuzz {

namespace fs = std::filesystem;

// <tmp>/<name>-<pid>, created on the first call and removed when the process exits. A crash, a
// timeout or running out of memory ends the process without that: such folders of processes that
// are gone are removed here.
inline const fs::path& privateDir(const std::string& name)
{
    static fs::path dir;
    if (dir.empty()) {
        std::error_code ec;
        for (const auto& e : fs::directory_iterator(fs::temp_directory_path(), ec)) {
            const std::string n = e.path().filename().string();
            if (!n.starts_with(name + "-") || n.size() == name.size() + 1 ||
                n.find_first_not_of("0123456789", name.size() + 1) != std::string::npos)
                continue;
            const long pid = std::strtol(n.c_str() + name.size() + 1, nullptr, 10);
            if (pid > 0 && ::kill(pid_t(pid), 0) != 0 && errno == ESRCH) fs::remove_all(e.path(), ec);
        }
        dir = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
        fs::remove_all(dir);
        fs::create_directories(dir);
        std::atexit([] {
            std::error_code ec;
            fs::remove_all(dir, ec);
        });
    }
    return dir;
}

// Copies a fixture folder (recursively) to `dst`; gives its regular files, relative and sorted.
inline std::vector<std::string> copyFixture(const fs::path& src, const fs::path& dst)
{
    std::vector<std::string> files;
    fs::create_directories(dst);
    for (const auto& e : fs::recursive_directory_iterator(src)) {
        const fs::path rel = e.path().lexically_relative(src);
        if (e.is_directory()) {
            fs::create_directories(dst / rel);
        } else if (e.is_regular_file()) {
            fs::copy_file(e.path(), dst / rel, fs::copy_options::overwrite_existing);
            files.push_back(rel.generic_string());
        }
    }
    std::sort(files.begin(), files.end());
    return files;
}

inline void writeFile(const fs::path& p, const uint8_t* data, size_t size)
{
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), std::streamsize(size));
}

inline std::string readFile(const fs::path& p)
{
    std::ifstream in(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Opens `path` through the family registry and reads every tensor of up to 16 MiB (all of the
// tag's tensors, optimizer state included); an Error is a fine outcome. CKPT_FUZZ_VERBOSE=1 says
// what came of it (to see what an input reaches).
// Every tensor of a set read whole (those up to 16 MB: a fixture's are smaller).
inline void readAll(const ckpt::ops::TensorSet& set)
{
    std::vector<uint8_t> buf;
    for (const auto& t : set.tensors)
        if (t.tensor.fill && t.tensor.nbytes <= (16u << 20)) {
            buf.resize(t.tensor.nbytes);
            t.tensor.fill(0, t.tensor.nbytes, buf.data());
        }
}

inline void openAndRead(const std::string& path)
{
    static const bool verbose = std::getenv("CKPT_FUZZ_VERBOSE");
    try {
        ckpt::ops::SourceOptions o;
        o.all = true;
        const auto set = ckpt::ops::anyTensors(path, o);
        readAll(set);
        if (verbose)
            std::fprintf(stderr, "%s: %zu tensors, %zu skipped, %zu warnings\n", set.label.c_str(),
                         set.tensors.size(), set.skipped.size(), set.warnings.size());
    } catch (const ckpt::Error& e) {
        if (verbose) std::fprintf(stderr, "%s: %s\n", path.c_str(), e.what());
    }
}

// The same for the model alone, as an export reads it (a family's mapping: Megatron's Hugging Face
// names, a DTensor's shards assembled).
inline void openAndReadModel(const std::string& path)
{
    try {
        readAll(ckpt::ops::anyTensors(path, {}));
    } catch (const ckpt::Error&) {
    }
}

// The optimizer state a family placed on the latest tag's tensors, read as diff --moments reads
// it (Megatron's bucket layout made per parameter: regions of the saved buckets).
inline void openAndReadMoments(const std::string& path)
{
    try {
        const auto opened = ckpt::layout::openCheckpoint(path);
        const ckpt::layout::Tag& tag = opened->chooseTag("");
        ckpt::layout::Tag moments;
        moments.name = tag.name, moments.dir = tag.dir;
        moments.params = ckpt::layout::momentTensors(tag);
        readAll(ckpt::ops::tagTensors(opened, moments, {}));
    } catch (const ckpt::Error&) {
    }
}

// With CKPT_FUZZ_SEEDS=DIR set, a target writes its seed inputs there (`selector`, the first
// input byte that picks the fixture and file, then the file's bytes) and exits: run_fuzzers.sh
// seeds the folder targets from the fixtures they copy, with the selectors they use.
inline const char* seedDir()
{
    return std::getenv("CKPT_FUZZ_SEEDS");
}

inline void writeSeed(const std::string& name, uint8_t selector, const fs::path& file)
{
    const std::string bytes = readFile(file);
    std::ofstream out(fs::path(seedDir()) / name, std::ios::binary | std::ios::trunc);
    out.put(char(selector));
    out.write(bytes.data(), std::streamsize(bytes.size()));
}

// Fixtures of one family copied into the target's private folder, and files of them the fuzzer
// replaces: the first input byte picks the fixture (byte % fixtures) and the file (byte / fixtures
// % files), the rest is the file's new content. A file a fixture lacks is skipped.
class VictimRuns
{
public:
    VictimRuns(const std::string& target, const std::string& family, const std::vector<std::string>& fixtures,
               std::vector<std::string> victims)
        : m_victims(std::move(victims))
    {
        for (const std::string& name : fixtures) {
            const fs::path source = fs::path(CKPT_TEST_DATA) / family / name;
            const fs::path dir = privateDir(target) / name;
            copyFixture(source, dir);
            m_runs.push_back({dir, source});
        }
    }

    // With CKPT_FUZZ_SEEDS set: every fixture's every file, with its selector; then exits.
    void seedAndExit() const
    {
        if (!seedDir()) return;
        for (size_t r = 0; r < m_runs.size(); ++r)
            for (size_t v = 0; v < m_victims.size(); ++v) {
                std::error_code ec;
                const fs::path file = m_runs[r].source / m_victims[v];
                if (fs::is_regular_file(file, ec))
                    writeSeed("seed-" + std::to_string(r) + "-" + std::to_string(v),
                              uint8_t(r + v * m_runs.size()), file);
            }
        std::exit(0);
    }

    // Writes the input over the file it picks, calls `open(fixture folder)`, then puts the file back.
    template <class Open> void run(const uint8_t* data, size_t size, Open&& open) const
    {
        if (size < 1) return;
        const Run& run = m_runs[data[0] % m_runs.size()];
        const std::string& victim = m_victims[(data[0] / m_runs.size()) % m_victims.size()];
        std::error_code ec;
        if (!fs::is_regular_file(run.source / victim, ec)) return;
        writeFile(run.dir / victim, data + 1, size - 1);
        open(run.dir);
        fs::copy_file(run.source / victim, run.dir / victim, fs::copy_options::overwrite_existing);
    }

private:
    struct Run
    {
        fs::path dir, source;
    };
    std::vector<Run> m_runs;
    std::vector<std::string> m_victims;
};

} // namespace fuzz

// The libFuzzer entry points of a VictimRuns target: `runs()` returns its VictimRuns, `open(dir)`
// opens a fixture whose file the input replaced.
#define CKPT_FUZZ_VICTIM_TARGET(runs, open)                                                                  \
    extern "C" int LLVMFuzzerInitialize(int*, char***)                                                       \
    {                                                                                                        \
        runs().seedAndExit();                                                                                \
        return 0;                                                                                            \
    }                                                                                                        \
    extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)                                  \
    {                                                                                                        \
        runs().run(data, size, open);                                                                        \
        return 0;                                                                                            \
    }
