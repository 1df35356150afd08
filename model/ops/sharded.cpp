#include "ops/sharded.h"

#include "io/error.h"
#include "io/interrupt.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <numeric>
#include <set>
#include <sstream>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>
#include <xxhash.h>

namespace ckpt::ops {

namespace fs = std::filesystem;

namespace {

constexpr const char* kMarkers = ".ckpt-shards";

std::string hex(uint64_t v)
{
    char buf[17];
    std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
    return buf;
}

// A whole non-negative number, or -1.
long long wholeNumber(const std::string& s)
{
    if (s.empty() || s.size() > 9 ||
        !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return -1;
    return std::stoll(s);
}

// A marker is small JSON we wrote; anything else (too big, not JSON) is no marker.
nlohmann::json readMarker(const std::string& path)
{
    std::error_code ec;
    if (!fs::is_regular_file(path, ec) || fs::file_size(path, ec) > (1u << 20)) return nullptr;
    std::ifstream in(path);
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    return j.is_object() ? j : nullptr;
}

std::string listShards(const std::set<int>& shards, int count)
{
    std::string s;
    for (int i : shards)
        s += (s.empty() ? "" : ", ") + std::to_string(i);
    return (shards.size() == 1 ? "shard " : "shards ") + s + " of " + std::to_string(count);
}

} // namespace

std::string ShardSpec::label() const
{
    if (finalize) return "finalize";
    if (count == 0) return {};
    return "shard " + std::to_string(index) + "/" + std::to_string(count);
}

ShardSpec parseShard(const std::string& text)
{
    const auto slash = text.find('/');
    const long long i = slash == std::string::npos ? -1 : wholeNumber(text.substr(0, slash));
    const long long n = slash == std::string::npos ? -1 : wholeNumber(text.substr(slash + 1));
    if (i < 0 || n < 1 || n > 100000 || i >= n)
        throw Error("--shard '" + text +
                    "' is not I/N with 0 <= I < N (the shards of a job split N ways are 0/N to " +
                    "N-1/N), nor auto");
    ShardSpec s;
    s.index = int(i);
    s.count = int(n);
    s.source = "--shard";
    return s;
}

namespace {

// Which launch of a job this is, as the launcher names it (every rank of one launch sees the
// same): a marker of an earlier launch, a part that failed then, does not stop this one.
std::string launcherJob(const std::function<std::string(const char*)>& get)
{
    if (!get("SLURM_JOB_ID").empty())
        return "slurm " + get("SLURM_JOB_ID") + "." + get("SLURM_STEP_ID") + " " + get("SLURM_ARRAY_JOB_ID");
    for (const char* v : {"PMIX_NAMESPACE", "OMPI_MCA_ess_base_jobid", "TORCHELASTIC_RUN_ID"})
        if (!get(v).empty()) return std::string(v) + " " + get(v);
    return {};
}

} // namespace

ShardSpec shardFromEnvironment(int shards, const std::function<const char*(const char*)>& env)
{
    const auto get = [&](const char* name) -> std::string {
        const char* v = env(name);
        return v ? std::string(v) : std::string();
    };
    struct Launcher
    {
        const char *rank, *size, *name;
    };
    // Started together (every rank at once): rank 0 can wait for the others and finalize.
    static const Launcher together[] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "Open MPI"},
                                        {"PMI_RANK", "PMI_SIZE", "PMI"}};
    auto make = [&](long long rank, long long size, const std::string& source, bool startedTogether) {
        if (rank < 0 || size < 1 || rank >= size)
            throw Error("--shard auto: " + source + " gives rank " + std::to_string(rank) + " of " +
                        std::to_string(size) + ", which is no shard");
        if (shards > 0 && shards != size)
            throw Error("--shard auto: " + source + " starts " + std::to_string(size) +
                        " processes but --shards is " + std::to_string(shards));
        ShardSpec s;
        s.index = int(rank);
        s.count = int(size);
        s.source = source;
        s.finalizeWhenAllDone = startedTogether && rank == 0;
        s.job = launcherJob(get);
        return s;
    };
    // torchrun first when it started this process (it sets TORCHELASTIC_RUN_ID, or LOCAL_RANK
    // beside RANK): it is the innermost launcher, and under sbatch the batch step's SLURM_PROCID
    // (0 of 1) is in every torchrun rank's environment too, which made all of them shard 0/1.
    const bool byTorchrun = !get("RANK").empty() && !get("WORLD_SIZE").empty() &&
                            (!get("TORCHELASTIC_RUN_ID").empty() || !get("LOCAL_RANK").empty());
    if (byTorchrun)
        return make(wholeNumber(get("RANK")), wholeNumber(get("WORLD_SIZE")), "torchrun (RANK, WORLD_SIZE)",
                    true);
    for (const Launcher& l : together)
        if (!get(l.rank).empty())
            return make(wholeNumber(get(l.rank)), wholeNumber(get(l.size)),
                        std::string(l.name) + " (" + l.rank + ", " + l.size + ")", true);
    // A job array: its tasks start when the scheduler likes; --finalize is a dependent job.
    if (!get("SLURM_ARRAY_TASK_ID").empty()) {
        const long long id = wholeNumber(get("SLURM_ARRAY_TASK_ID"));
        const long long min =
            get("SLURM_ARRAY_TASK_MIN").empty() ? 0 : wholeNumber(get("SLURM_ARRAY_TASK_MIN"));
        long long n = shards > 0 ? shards : wholeNumber(get("SLURM_ARRAY_TASK_COUNT"));
        if (n < 1)
            throw Error(
                "--shard auto in a Slurm job array needs --shards N (SLURM_ARRAY_TASK_COUNT is not set)");
        ShardSpec s = make(id - min, n,
                           "a Slurm job array (SLURM_ARRAY_TASK_ID " + get("SLURM_ARRAY_TASK_ID") +
                               (min ? " less SLURM_ARRAY_TASK_MIN " + std::to_string(min) : "") + ")",
                           false);
        return s;
    }
    if (!get("SLURM_PROCID").empty() && !get("SLURM_NTASKS").empty())
        return make(wholeNumber(get("SLURM_PROCID")), wholeNumber(get("SLURM_NTASKS")),
                    "Slurm (SLURM_PROCID, SLURM_NTASKS)", true);
    if (!get("RANK").empty() && !get("WORLD_SIZE").empty())
        return make(wholeNumber(get("RANK")), wholeNumber(get("WORLD_SIZE")), "torchrun (RANK, WORLD_SIZE)",
                    true);
    throw Error(
        "--shard auto found no launcher: none of OMPI_COMM_WORLD_RANK, PMI_RANK, SLURM_ARRAY_TASK_ID, "
        "SLURM_PROCID or RANK is set (run under mpirun, srun, a Slurm array or torchrun, or give "
        "--shard I/N)");
}

std::vector<int> dealUnits(const std::vector<uint64_t>& bytes, int count)
{
    std::vector<size_t> order(bytes.size());
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return bytes[a] > bytes[b]; });
    std::vector<uint64_t> load(size_t(std::max(count, 1)), 0);
    std::vector<int> owner(bytes.size(), 0);
    for (size_t u : order) {
        const size_t least = size_t(std::min_element(load.begin(), load.end()) - load.begin());
        owner[u] = int(least);
        load[least] += std::max<uint64_t>(bytes[u], 1); // empty units still spread out
    }
    return owner;
}

// A file's modification time to the nanosecond, as text ("" when it cannot be read).
std::string modified(const std::string& path)
{
    struct stat st
    {
    };
    if (::stat(path.c_str(), &st) != 0) return {};
    return std::to_string(st.st_mtim.tv_sec) + "." + std::to_string(st.st_mtim.tv_nsec);
}

uint64_t fingerprintOf(const std::string& planText)
{
    return XXH3_64bits(planText.data(), planText.size());
}

std::string describeInputs(const std::vector<std::string>& files)
{
    std::string text;
    for (const std::string& f : files) {
        struct stat st
        {
        };
        text += "input " + fs::path(f).filename().string(); // the same file whatever path reached it
        if (::stat(f.c_str(), &st) == 0)
            text += " " + std::to_string(st.st_size) + " " + std::to_string(st.st_mtim.tv_sec) + "." +
                    std::to_string(st.st_mtim.tv_nsec);
        text += "\n";
    }
    return text;
}

uint64_t hashFile(const std::string& path, const CancelToken& cancel)
{
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw Error(std::string("cannot open: ") + std::strerror(errno), path);
    const std::unique_ptr<XXH3_state_t, decltype(&XXH3_freeState)> state(XXH3_createState(), &XXH3_freeState);
    XXH3_64bits_reset(state.get());
    std::vector<uint8_t> buf(8u << 20);
    for (;;) {
        cancel.throwIfCancelled();
        const ssize_t n = ::read(fd, buf.data(), buf.size());
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            const int e = errno;
            ::close(fd);
            throw Error(std::string("cannot read: ") + std::strerror(e), path);
        }
        if (n == 0) break;
        XXH3_64bits_update(state.get(), buf.data(), size_t(n));
    }
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED); // read once: leave the cache to the job
    ::close(fd);
    return XXH3_64bits_digest(state.get());
}

ShardedOutput::ShardedOutput(std::vector<std::string> inputs, std::string folder, const ShardSpec& spec,
                             uint64_t fingerprint, std::vector<WorkUnit> units,
                             std::vector<std::string> bindingFiles)
    : m_inputs(std::move(inputs)), m_folder(std::move(folder)), m_spec(spec), m_fingerprint(fingerprint),
      m_units(std::move(units)), m_binding(std::move(bindingFiles))
{
    if (m_spec.count > 0 && !m_spec.finalize) {
        std::vector<uint64_t> bytes;
        for (const auto& u : m_units)
            bytes.push_back(u.bytes);
        const std::vector<int> owner = dealUnits(bytes, m_spec.count);
        for (size_t u = 0; u < m_units.size(); ++u)
            if (owner[u] == m_spec.index) m_mine.push_back(u);
    }
    refuseForeignFiles();
}

std::string ShardedOutput::markerDir() const
{
    return (fs::path(m_folder) / kMarkers).string();
}

std::string ShardedOutput::unitMarker(size_t unit) const
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "unit-%06zu.json", unit);
    return (fs::path(kMarkers) / buf).string();
}

std::string ShardedOutput::shardMarker(int index, int count) const
{
    return (fs::path(kMarkers) /
            ("shard-" + std::to_string(index) + "-of-" + std::to_string(count) + ".json"))
        .string();
}

void ShardedOutput::refuseForeignFiles() const
{
    std::set<std::string> ours(m_binding.begin(), m_binding.end());
    for (const auto& u : m_units)
        ours.insert(u.files.begin(), u.files.end());
    std::vector<std::string> foreign;
    for (const std::string& f : io::filesHeld(m_folder, 100000))
        if (!ours.count(f) && fs::path(f).begin()->string() != kMarkers) foreign.push_back(f);
    if (foreign.empty()) return;
    std::sort(foreign.begin(), foreign.end());
    std::string list;
    for (size_t i = 0; i < foreign.size() && i < 3; ++i)
        list += (i ? ", " : "") + foreign[i];
    if (foreign.size() > 3) list += ", ...";
    throw io::OutputNotEmpty("the output folder holds files this split job does not write (" + list +
                                 "); the shards of one job write into a folder of their own",
                             m_folder);
}

std::unique_ptr<io::OutputTransaction> ShardedOutput::transaction() const
{
    return std::make_unique<io::OutputTransaction>(m_inputs, m_folder, io::OutputTransaction::Shape::Folder,
                                                   io::OutputTransaction::Existing::Shared);
}

bool ShardedOutput::done(size_t unit) const
{
    const nlohmann::json m = readMarker((fs::path(m_folder) / unitMarker(unit)).string());
    if (m.is_null() || m.value("plan", "") != hex(m_fingerprint) || !m.contains("files") ||
        !m["files"].is_array())
        return false;
    if (m["files"].size() != m_units[unit].files.size()) return false;
    for (const auto& f : m["files"]) {
        std::error_code ec;
        const fs::path p = fs::path(m_folder) / f.value("name", "");
        if (!fs::is_regular_file(p, ec) || fs::file_size(p, ec) != f.value("size", uint64_t(0))) return false;
    }
    return true;
}

uint64_t ShardedOutput::bytesOf(const std::vector<size_t>& units) const
{
    uint64_t total = 0;
    for (size_t u : units)
        total += m_units[u].bytes;
    return total;
}

void ShardedOutput::commitUnit(size_t unit, io::OutputTransaction& tx) const
{
    // The unit's files, finished and verified under their temporary names: hashed now (they are
    // in the page cache), so that finalize can tell a file changed or cut since.
    nlohmann::json files = nlohmann::json::array();
    for (const std::string& name : m_units[unit].files) {
        const io::AtomicFile* f = tx.file(name);
        if (!f) throw Error("the unit's file '" + name + "' was not written", m_folder);
        files.push_back({{"name", name},
                         {"size", f->written()},
                         {"mtime", modified(f->tempPath())}, // a rename keeps it
                         {"xxh3", hex(hashFile(f->tempPath(), {}))}});
    }
    nlohmann::json marker{{"plan", hex(m_fingerprint)},
                          {"unit", unit},
                          {"shard", {m_spec.index, m_spec.count}},
                          {"files", files}};
    const std::string text = marker.dump(1) + "\n";
    io::AtomicFile& m = tx.create(unitMarker(unit));
    m.write(text.data(), text.size());
    m.finish();
    tx.commitPart(); // the files first, the marker last
}

void ShardedOutput::writeMine(const std::function<io::OutputTransaction&()>& transaction,
                              const std::function<void(size_t, io::OutputTransaction&)>& writeUnit,
                              const std::function<void(size_t)>& kept) const
{
    try {
        io::OutputTransaction& tx = transaction();
        for (size_t u : m_mine) {
            if (done(u)) {
                if (kept) kept(u);
                continue;
            }
            writeUnit(u, tx);
            commitUnit(u, tx);
        }
        markShard();
    } catch (const std::exception& e) {
        markShard(e.what());
        throw;
    }
}

void ShardedOutput::markShard(const std::string& error) const
{
    if (m_spec.count == 0 || m_spec.finalize) return;
    std::vector<size_t> units = m_mine;
    nlohmann::json marker{
        {"plan", hex(m_fingerprint)}, {"shard", {m_spec.index, m_spec.count}}, {"units", units}};
    if (!error.empty()) marker["error"] = error;
    if (!m_spec.job.empty()) marker["job"] = m_spec.job;
    const std::string text = marker.dump(1) + "\n";
    auto tx = transaction();
    io::AtomicFile& m = tx->create(shardMarker(m_spec.index, m_spec.count));
    m.write(text.data(), text.size());
    m.finish();
    tx->commit();
}

void ShardedOutput::waitForOtherShards(const ProgressSink& progress, const CancelToken& cancel) const
{
    const auto start = std::chrono::steady_clock::now();
    for (;;) {
        std::set<int> waiting;
        for (int i = 0; i < m_spec.count; ++i) {
            if (i == m_spec.index) continue;
            const nlohmann::json m = readMarker((fs::path(m_folder) / shardMarker(i, m_spec.count)).string());
            if (m.is_null() || m.value("plan", "") != hex(m_fingerprint)) {
                waiting.insert(i);
                continue;
            }
            // A part that failed in another launch (an earlier srun of this job) is no news.
            if (m.contains("error") && m["error"].is_string() && m.value("job", "") != m_spec.job) {
                waiting.insert(i);
                continue;
            }
            if (m.contains("error") && m["error"].is_string())
                throw Error("shard " + std::to_string(i) + "/" + std::to_string(m_spec.count) +
                                " failed, so this job cannot be finished: " + m["error"].get<std::string>() +
                                " (fix it, run that shard again, then --finalize)",
                            m_folder);
        }
        if (waiting.empty()) return;
        const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (waited > m_spec.waitSeconds)
            throw Error("waited " + std::to_string(int(waited)) + " s for " +
                            listShards(waiting, m_spec.count) +
                            " to finish; run those again if they died, then `--finalize` once",
                        m_folder);
        if (progress) progress({999, "waiting for " + listShards(waiting, m_spec.count), 0, 0});
        for (int i = 0; i < 10; ++i) {
            cancel.throwIfCancelled();
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
    }
}

int ShardedOutput::shardCountForMessages() const
{
    if (m_spec.count > 0) return m_spec.count;
    // The count the shards ran with, as their markers say (the newest plan's).
    std::error_code ec;
    for (fs::directory_iterator it(markerDir(), ec), end; !ec && it != end; it.increment(ec)) {
        const nlohmann::json m = readMarker(it->path().string());
        if (m.is_null() || m.value("plan", "") != hex(m_fingerprint) || !m.contains("shard")) continue;
        const auto& s = m["shard"];
        if (s.is_array() && s.size() == 2 && s[1].is_number_integer() && s[1].get<int>() > 0)
            return s[1].get<int>();
    }
    return 0;
}

ShardedOutput::Written ShardedOutput::checkComplete(const ProgressSink& progress,
                                                    const CancelToken& cancel) const
{
    std::vector<size_t> missing;
    for (size_t u = 0; u < m_units.size(); ++u)
        if (!done(u)) missing.push_back(u);
    if (!missing.empty()) {
        const int count = shardCountForMessages();
        if (count == 0)
            throw Error("cannot finalize: no shard of this job has finished a unit here (" +
                            std::to_string(missing.size()) + " of " + std::to_string(m_units.size()) +
                            " units missing); run every --shard I/N first, with the same input and options",
                        m_folder);
        std::vector<uint64_t> bytes;
        for (const auto& u : m_units)
            bytes.push_back(u.bytes);
        const std::vector<int> owner = dealUnits(bytes, count);
        std::set<int> shards;
        for (size_t u : missing)
            shards.insert(owner[u]);
        throw Error("cannot finalize: " + listShards(shards, count) +
                        (shards.size() == 1 ? " has" : " have") + " not finished (" +
                        std::to_string(missing.size()) + " of " + std::to_string(m_units.size()) +
                        " units missing); run them again with the same input and options, then --finalize",
                    m_folder);
    }
    // What the shards recorded is what the folder holds now: each file's size and modification
    // time (a write changes it), and with rehash, every file read back whole and hashed, several
    // at once (finalize then reads the whole output: one node's I/O, where the shards had many).
    struct File
    {
        size_t unit;
        std::string path;
        uint64_t size;
        std::string hash, mtime;
    };
    std::vector<File> files;
    uint64_t total = 0;
    for (size_t u = 0; u < m_units.size(); ++u) {
        const nlohmann::json m = readMarker((fs::path(m_folder) / unitMarker(u)).string());
        for (const auto& f : m["files"]) {
            files.push_back({u, (fs::path(m_folder) / f.value("name", "")).string(),
                             f.value("size", uint64_t(0)), f.value("xxh3", ""), f.value("mtime", "")});
            if (m_spec.rehash) total += files.back().size;
        }
    }
    std::atomic<size_t> next{0};
    std::atomic<uint64_t> done{0};
    std::mutex lock;
    std::exception_ptr failed;
    auto work = [&] {
        for (size_t i; (i = next++) < files.size();) {
            try {
                const File& f = files[i];
                std::error_code ec;
                const char* differs = nullptr;
                if (fs::file_size(f.path, ec) != f.size || ec)
                    differs = "its size";
                else if (modified(f.path) != f.mtime)
                    differs = "its modification time";
                else if (m_spec.rehash && hex(hashFile(f.path, cancel)) != f.hash)
                    differs = "its hash";
                if (differs) {
                    // The unit is redone by its shard's next run.
                    fs::remove(fs::path(m_folder) / unitMarker(f.unit), ec);
                    throw Error("changed since its shard wrote it (" + std::string(differs) +
                                    " differs from the marker's): the shard that wrote it writes it again "
                                    "when run again",
                                f.path);
                }
                if (!m_spec.rehash) continue;
                const uint64_t d = done += f.size;
                const std::lock_guard<std::mutex> g(lock);
                if (progress)
                    progress({int(total ? d * 900 / total : 900), "checking the shards' files", d, total});
            } catch (...) {
                const std::lock_guard<std::mutex> g(lock);
                if (!failed) failed = std::current_exception();
                next = files.size();
            }
        }
    };
    std::vector<std::thread> threads;
    const size_t n = std::min<size_t>(std::max(1u, std::thread::hardware_concurrency()), 8);
    for (size_t t = 1; t < std::min(n, files.size()); ++t)
        threads.emplace_back(work);
    work();
    for (auto& t : threads)
        t.join();
    if (failed) std::rethrow_exception(failed);
    Written w;
    for (const File& f : files)
        w.files.push_back(f.path);
    w.bytes = total;
    return w;
}

void ShardedOutput::removeMarkers() const
{
    std::error_code ec;
    fs::remove_all(markerDir(), ec);
    if (ec) throw Error("cannot remove the shards' markers: " + ec.message(), markerDir());
}

} // namespace ckpt::ops
