#include "io/output.h"

#include "io/error.h"
#include "io/remote/url.h"

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <mutex>
#include <set>
#include <sys/file.h>
#include <sys/stat.h>
#include <thread>
#include <unistd.h>

namespace ckpt::io {

namespace fs = std::filesystem;

namespace {

struct Identity
{
    dev_t dev = 0;
    ino_t ino = 0;
    bool operator==(const Identity&) const = default;
};

bool identityOf(const fs::path& p, Identity& id, struct stat* out = nullptr)
{
    struct stat st
    {
    };
    if (::stat(p.c_str(), &st) != 0) return false;
    id = {st.st_dev, st.st_ino};
    if (out) *out = st;
    return true;
}

// `p` and every folder above it, by identity: a bind mount or a second path to the same folder
// has the same device and inode as the original, whatever its name.
std::vector<Identity> identityChain(fs::path p)
{
    std::vector<Identity> chain;
    for (;;) {
        Identity id;
        if (identityOf(p, id)) chain.push_back(id);
        if (!p.has_relative_path()) break;
        p = p.parent_path();
    }
    return chain;
}

// The deepest part of `p` that exists (p itself when it exists).
fs::path deepestExisting(fs::path p)
{
    std::error_code ec;
    while (!fs::exists(p, ec) && p.has_relative_path())
        p = p.parent_path();
    return p;
}

bool pathInside(const fs::path& inner, const fs::path& outer)
{
    auto [o, i] = std::mismatch(outer.begin(), outer.end(), inner.begin(), inner.end());
    return o == outer.end();
}

// A hard link of `target` somewhere inside `dir` (bounded walk: checkpoint folders are small).
bool folderHoldsInode(const fs::path& dir, const Identity& target)
{
    std::error_code ec;
    size_t seen = 0;
    for (fs::recursive_directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end && seen < 200000; it.increment(ec), ++seen) {
        Identity id;
        if (it->is_regular_file(ec) && identityOf(it->path(), id) && id == target) return true;
    }
    return false;
}

struct Registry
{
    std::mutex mutex;
    std::set<std::string> temporaries;
    std::vector<std::string> folders; // in creation order: outermost first
};

Registry& registry()
{
    static Registry* r = new Registry; // never destroyed: a signal may arrive during exit
    return *r;
}

std::string hostName()
{
    char buf[256] = {};
    if (::gethostname(buf, sizeof buf - 1) != 0) return "host";
    std::string h;
    for (const char* c = buf; *c; ++c) // keeps the name parseable and safe in a file name
        h += std::isalnum(uint8_t(*c)) || *c == '.' || *c == '_' ? *c : '_';
    return h.empty() ? "host" : h;
}

constexpr const char* kPartialTag = ".ckpt-partial-";

// The output folder as one path without a trailing separator, through a symlink to its target:
// what is exchanged must be the folder itself, beside its siblings.
fs::path resolvedFolder(const std::string& path)
{
    std::error_code ec;
    fs::path p = fs::canonical(path, ec);
    if (ec) p = fs::absolute(path, ec).lexically_normal();
    if (!p.has_filename() && p.has_parent_path()) p = p.parent_path();
    return p;
}

// The process id in a temporary name ending "...<tag>HOST-PID", or 0.
pid_t partialPid(const std::string& name, const std::string& ourHost)
{
    const auto at = name.rfind(ourHost);
    if (name.empty() || name[0] != '.' || at == std::string::npos) return 0;
    const std::string pidText = name.substr(at + ourHost.size());
    if (pidText.empty() || pidText.size() > 9 ||
        !std::all_of(pidText.begin(), pidText.end(), [](char c) { return c >= '0' && c <= '9'; }))
        return 0;
    return pid_t(std::stol(pidText));
}

bool processGone(pid_t pid)
{
    return pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH;
}

void syncFolder(const fs::path& dir)
{
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    ::fsync(fd); // best effort: some file systems refuse fsync on folders
    ::close(fd);
}

// `src` again at `dst` without copying a byte: folders made anew, everything else hard-linked
// (symlinks recreated). Bounded like the other walks here.
void linkTree(const fs::path& src, const fs::path& dst, size_t& budget)
{
    if (budget-- == 0) throw Error("too many files to keep while replacing the output", src.string());
    struct stat st
    {
    };
    if (::lstat(src.c_str(), &st) != 0)
        throw Error(std::string("cannot keep this file while replacing the output: ") + std::strerror(errno),
                    src.string());
    if (S_ISDIR(st.st_mode)) {
        if (::mkdir(dst.c_str(), st.st_mode & 07777) != 0)
            throw Error(std::string("cannot keep this folder while replacing the output: ") +
                            std::strerror(errno),
                        src.string());
        std::error_code ec;
        for (fs::directory_iterator it(src, ec), end; !ec && it != end; it.increment(ec))
            linkTree(it->path(), dst / it->path().filename(), budget);
        if (ec)
            throw Error("cannot list this folder while replacing the output: " + ec.message(), src.string());
        return;
    }
    if (S_ISLNK(st.st_mode)) {
        std::error_code ec;
        const fs::path target = fs::read_symlink(src, ec);
        if (!ec) fs::create_symlink(target, dst, ec);
        if (ec)
            throw Error("cannot keep this link while replacing the output: " + ec.message(), src.string());
        return;
    }
    if (::link(src.c_str(), dst.c_str()) != 0)
        throw Error(std::string("cannot keep this file while replacing the output (hard link): ") +
                        std::strerror(errno),
                    src.string());
}

} // namespace

void detail::trackTemporary(const std::string& path, bool add)
{
    std::lock_guard lock(registry().mutex);
    if (add)
        registry().temporaries.insert(path);
    else
        registry().temporaries.erase(path);
}

void detail::trackCreatedFolder(const std::string& path, bool add)
{
    auto& r = registry();
    std::lock_guard lock(r.mutex);
    if (add)
        r.folders.push_back(path);
    else
        r.folders.erase(std::remove(r.folders.begin(), r.folders.end(), path), r.folders.end());
}

void removeAllTemporaryOutputs()
{
    auto& r = registry();
    // A job thread holds this lock only for an insert or erase; if it is somehow stuck, going
    // ahead without it is better than leaving partial files behind.
    std::unique_lock lock(r.mutex, std::defer_lock);
    for (int i = 0; i < 100 && !lock.try_lock(); ++i)
        ::usleep(1000);
    for (const auto& t : r.temporaries)
        ::unlink(t.c_str());
    for (auto it = r.folders.rbegin(); it != r.folders.rend(); ++it)
        ::rmdir(it->c_str()); // only succeeds when empty, which is the point
}

std::string partialName(const std::string& finalName)
{
    static const std::string suffix = kPartialTag + hostName() + "-" + std::to_string(::getpid());
    return "." + finalName + suffix;
}

void checkOutputOutsideInputs(const std::vector<std::string>& inputs, const std::string& output)
{
    // Outputs are local files: a URL taken as a path would become folders named "s3:" or
    // "http:" in the working folder.
    if (remote::isRemote(output))
        throw Error("an output is written to a local path; writing to a URL is not supported", output);
    std::error_code ec;
    const fs::path out = fs::weakly_canonical(fs::absolute(output), ec);
    if (ec) throw Error("cannot resolve the output path: " + ec.message(), output);
    const fs::path outExisting = deepestExisting(out);
    const std::vector<Identity> outChain = identityChain(outExisting);
    Identity outId;
    struct stat outStat
    {
    };
    const bool outExists = outExisting == out && identityOf(out, outId, &outStat);

    for (const auto& input : inputs) {
        const fs::path in = fs::weakly_canonical(fs::absolute(input), ec);
        Identity inId;
        struct stat inStat
        {
        };
        if (ec || !identityOf(in, inId, &inStat)) continue; // a missing input fails when it is read
        const bool inIsDir = S_ISDIR(inStat.st_mode);
        auto refuse = [&](const std::string& how) {
            throw Error("refusing to write here: the output " + how + " the input " + input +
                            "; choose an output outside every input",
                        output);
        };
        if (out == in || (outExists && outId == inId)) refuse("is");
        if (inIsDir &&
            (pathInside(out, in) || std::find(outChain.begin(), outChain.end(), inId) != outChain.end()))
            refuse("lies inside");
        if (pathInside(in, out)) refuse("contains");
        if (outExists && S_ISDIR(outStat.st_mode)) {
            const auto inChain = identityChain(in);
            if (std::find(inChain.begin(), inChain.end(), outId) != inChain.end()) refuse("contains");
        }
        // A hard link of an input file: replacing it would not touch the input's bytes (outputs
        // are renamed into place), but it is still the user's checkpoint under another name.
        if (outExists && S_ISREG(outStat.st_mode) && outStat.st_nlink > 1 && inIsDir &&
            folderHoldsInode(in, outId))
            refuse("is a hard link of a file in");
    }
}

namespace {

// A folder output that holds files is refused unless replacing was asked for.
void refuseHeld(std::vector<std::string> held, const std::string& path)
{
    if (held.empty()) return;
    std::sort(held.begin(), held.end());
    std::string list;
    for (size_t i = 0; i < held.size() && i < 3; ++i)
        list += (i ? ", " : "") + held[i];
    if (held.size() > 3) list += ", ...";
    throw OutputNotEmpty("the output folder is not empty (" + std::to_string(held.size()) +
                             (held.size() == 1 ? " file: " : " files: ") + list +
                             "); writing into it would mix two outputs",
                         path);
}

// The output is of the shape asked for (or absent).
void checkShape(const std::string& path, OutputTransaction::Shape shape)
{
    std::error_code ec;
    if (shape == OutputTransaction::Shape::Folder) {
        if (fs::exists(path, ec) && !fs::is_directory(path, ec))
            throw Error("the output should be a folder, but a file of that name exists", path);
    } else if (fs::is_directory(path, ec)) {
        throw Error("the output should be a file, but it is a folder", path);
    }
}

} // namespace

void OutputTransaction::precheck(const std::vector<std::string>& inputs, const std::string& path, Shape shape,
                                 Existing existing)
{
    checkOutputOutsideInputs(inputs, path);
    checkShape(path, shape);
    std::error_code ec;
    if (shape == Shape::Folder && existing == Existing::Refuse && fs::is_directory(path, ec))
        refuseHeld(filesHeld(path), path);
}

OutputTransaction::OutputTransaction(const std::vector<std::string>& inputs, const std::string& path,
                                     Shape shape, Existing existing, OldOutput oldOutput)
    : m_shape(shape), m_existing(existing), m_path(path), m_oldOutput(std::move(oldOutput))
{
    checkOutputOutsideInputs(inputs, path);
    checkShape(path, shape);
    if (shape == Shape::Folder) {
        m_folder = path;
    } else {
        const fs::path parent = fs::path(path).parent_path();
        m_folder = parent.empty() ? "." : parent.string();
    }
    try {
        if (shape == Shape::Folder && existing != Existing::Shared) removeStaleStaging();
        createFolders(m_folder);
        lockFolder();
        removeStalePartials();
        if (shape == Shape::Folder) prepareFolder(existing);
    } catch (...) {
        if (m_lockFd >= 0) ::close(m_lockFd);
        // Refused by the lock, the folder we made is the other writer's to use now (it may have
        // locked it between our mkdir and our flock): leave it. Otherwise it is ours, and empty.
        for (auto it = m_createdDirs.rbegin(); it != m_createdDirs.rend(); ++it) {
            if (!m_lockBusy) ::rmdir(it->c_str());
            detail::trackCreatedFolder(*it, false);
        }
        throw;
    }
}

OutputTransaction::~OutputTransaction()
{
    m_files.clear();          // uncommitted ones remove their temporaries
    if (!m_staging.empty()) { // uncommitted (committed, it is gone already): the old output stays
        std::error_code ec;
        if (!m_committed) fs::remove_all(m_staging, ec);
        detail::trackCreatedFolder(m_staging, false);
    }
    for (auto it = m_createdDirs.rbegin(); it != m_createdDirs.rend(); ++it) {
        if (!m_committed) ::rmdir(it->c_str()); // only when empty: never someone else's files
        detail::trackCreatedFolder(*it, false);
    }
    if (m_lockFd >= 0) ::close(m_lockFd);
}

void OutputTransaction::createFolders(const std::string& dir)
{
    std::error_code ec;
    fs::path p = fs::absolute(dir, ec);
    std::vector<fs::path> missing;
    while (!fs::exists(p, ec) && p.has_relative_path()) {
        missing.push_back(p);
        p = p.parent_path();
    }
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        if (::mkdir(it->c_str(), 0755) != 0) {
            // Another writer made it a moment ago: it is theirs, never ours to remove.
            if (errno == EEXIST) continue;
            throw Error(std::string("cannot create the output folder: ") + std::strerror(errno),
                        it->string());
        }
        m_createdDirs.push_back(it->string());
        detail::trackCreatedFolder(it->string(), true);
    }
    if (!fs::is_directory(dir, ec)) throw Error("cannot create the output folder", dir);
}

void OutputTransaction::lockFolder()
{
    // A folder output (shards + index) is one writer's alone: two would mix their files. Single
    // files are each renamed into place whole, so many may be written into one folder at once
    // (a shell loop over files); they only keep a folder writer out.
    for (int attempt = 0;; ++attempt) {
        m_lockFd = ::open(m_folder.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (m_lockFd < 0)
            throw Error(std::string("cannot open the output folder: ") + std::strerror(errno), m_folder);
        const bool alone = m_shape == Shape::Folder && m_existing != Existing::Shared;
        if (::flock(m_lockFd, (alone ? LOCK_EX : LOCK_SH) | LOCK_NB) != 0) {
            if (errno == EWOULDBLOCK) {
                m_lockBusy = true;
                throw Error("another ckpt job is writing into this folder; run again when it has finished",
                            m_folder);
            }
            // Some file systems (old NFS) cannot lock; writing without the lock is what every
            // other tool does there.
            return;
        }
        // The folder may have been swapped for a new one (a writer that finished replacing it)
        // between our open and our lock: then the lock is on the old one; take the new one's.
        struct stat held
        {
        }, now{};
        if (::fstat(m_lockFd, &held) != 0 || ::stat(m_folder.c_str(), &now) != 0 ||
            (held.st_dev == now.st_dev && held.st_ino == now.st_ino) || attempt == 8)
            return;
        ::close(m_lockFd);
        m_lockFd = -1;
    }
}

void OutputTransaction::removeStalePartials()
{
    const std::string ourHost = std::string(kPartialTag) + hostName() + "-";
    std::error_code ec;
    // A folder output may have subfolders (slim keeps the input's tree): look in them too, but
    // only below a folder we write (a single file's folder is not ours to walk).
    const bool deep = m_shape == Shape::Folder;
    size_t seen = 0;
    for (fs::recursive_directory_iterator it(m_folder, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end && ++seen < 200000; it.increment(ec)) {
        if (!deep) it.disable_recursion_pending();
        const fs::directory_entry& e = *it;
        const std::string name = e.path().filename().string();
        const pid_t pid = partialPid(name, ourHost);
        if (pid <= 0) continue;
        if (pid == ::getpid()) {
            // Ours, unless another transaction of this process is writing it right now: then
            // an earlier process with the same PID left it.
            std::lock_guard lock(registry().mutex);
            const bool live =
                std::any_of(registry().temporaries.begin(), registry().temporaries.end(),
                            [&](const std::string& t) { return fs::path(t).filename() == name; });
            if (live) continue;
        } else if (!processGone(pid)) {
            continue; // its writer may still be running
        }
        const std::string pidText = std::to_string(pid);
        if (::unlink(e.path().c_str()) == 0)
            m_notes.push_back("removed stale partial output " + e.path().string() + " (its writer, process " +
                              pidText + ", is gone)");
    }
}

void OutputTransaction::removeStaleStaging()
{
    // A replacing writer that died left its staging folder beside the output: the new set not
    // yet swapped in, or the old set swapped out and not yet removed. Either way it is no
    // output. Where the two-rename fallback was cut between its renames, the old set is put back.
    const fs::path target = resolvedFolder(m_path);
    const std::string base = target.filename().string();
    const std::string ourHost = std::string(kPartialTag) + hostName() + "-";
    const std::string oldPrefix = "." + base + ".old" + kPartialTag, stagingPrefix = "." + base + kPartialTag;
    std::error_code ec;
    std::vector<fs::path> aside, staging;
    for (fs::directory_iterator it(target.parent_path(), ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        const bool isOld = name.rfind(oldPrefix, 0) == 0, isStaging = name.rfind(stagingPrefix, 0) == 0;
        const pid_t pid = partialPid(name, ourHost);
        if ((!isOld && !isStaging) || pid <= 0 || !processGone(pid) || !it->is_directory(ec)) continue;
        (isOld ? aside : staging).push_back(it->path());
    }
    for (const fs::path& p : aside) {
        if (!fs::exists(target, ec) && ::rename(p.c_str(), target.c_str()) == 0) {
            m_notes.push_back("restored the earlier output " + target.string() + " from " + p.string() +
                              " (its replacing writer is gone)");
            continue;
        }
        staging.push_back(p);
    }
    for (const fs::path& p : staging)
        if (fs::remove_all(p, ec) != static_cast<std::uintmax_t>(-1) && !ec)
            m_notes.push_back("removed stale partial output " + p.string() + " (its writer is gone)");
}

std::vector<std::string> filesHeld(const std::string& folder, size_t limit)
{
    std::error_code ec;
    std::vector<std::string> held;
    size_t seen = 0;
    for (fs::recursive_directory_iterator it(folder, fs::directory_options::skip_permission_denied, ec), end;
         !ec && it != end && ++seen < 200000 && held.size() < limit; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (!it->is_directory(ec) && name.find(kPartialTag) == std::string::npos)
            held.push_back(fs::relative(it->path(), folder, ec).string());
    }
    return held;
}

void OutputTransaction::prepareFolder(Existing existing)
{
    if (existing == Existing::Shared) return; // the other writers' files stay; ours go in one by one
    const std::vector<std::string> held = filesHeld(m_folder);
    if (existing == Existing::Refuse) refuseHeld(held, m_path);
    m_replacing = !held.empty();
    // Resolved once, now that the folder exists: what is staged beside, kept from and swapped.
    m_target = resolvedFolder(m_path).string();
    // Every folder output is staged beside the folder and swapped in whole, so that the folder
    // shows a complete set at every moment. Where that cannot be (the folder is a mount point,
    // its parent is not ours to write), files are renamed into it one by one.
    const fs::path target = m_target;
    struct stat st
    {
    }, parentSt{};
    if (::stat(target.c_str(), &st) != 0 || ::stat(target.parent_path().c_str(), &parentSt) != 0 ||
        st.st_dev != parentSt.st_dev)
        return;
    const std::string staging = (target.parent_path() / partialName(target.filename().string())).string();
    detail::trackCreatedFolder(staging, true); // registered first: an interrupt finds it
    if (::mkdir(staging.c_str(), st.st_mode & 07777) != 0) {
        const int e = errno;
        detail::trackCreatedFolder(staging, false);
        if (e == EACCES || e == EPERM || e == EROFS) return;
        throw Error(std::string("cannot create the staging folder beside the output: ") + std::strerror(e),
                    m_path);
    }
    m_staging = staging;
    m_folder = m_staging;
}

void OutputTransaction::removeOldInPlace()
{
    // Not atomic: the folder cannot be swapped (see prepareFolder). The old set goes first, so
    // that a failure leaves no mix of two exports under final names, only fewer files.
    const fs::path target = m_target;
    std::set<std::string> replaced;
    for (const auto& n : m_names)
        replaced.insert(fs::path(n).begin()->string());
    std::error_code ec;
    std::vector<fs::path> old;
    for (fs::directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (name.find(kPartialTag) == std::string::npos &&
            (replaced.count(name) || (m_oldOutput && m_oldOutput(name))))
            old.push_back(it->path());
    }
    for (const auto& p : old)
        if (fs::remove_all(p, ec) == static_cast<std::uintmax_t>(-1) || ec)
            throw Error("cannot remove the earlier output's file: " + ec.message(), p.string());
    m_notes.push_back("the earlier output in " + m_path +
                      " was replaced file by file (the folder cannot be swapped in one step here)");
}

void OutputTransaction::keepOldEntries()
{
    // The new output's top-level entries replace theirs; so do the old output's own files (the
    // operation names them); everything else the folder held comes along.
    std::set<std::string> replaced;
    for (const auto& n : m_names)
        replaced.insert(fs::path(n).begin()->string());
    const fs::path target = m_target;
    std::error_code ec;
    size_t budget = 200000;
    for (fs::directory_iterator it(target, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string name = it->path().filename().string();
        if (replaced.count(name) || (m_oldOutput && m_oldOutput(name)) ||
            name.find(kPartialTag) != std::string::npos)
            continue;
        linkTree(it->path(), fs::path(m_staging) / name, budget);
    }
    if (ec) throw Error("cannot list the output folder: " + ec.message(), m_path);
}

void OutputTransaction::swapInStaging()
{
    const fs::path target = m_target;
    std::string old = m_staging; // where the old set is once the folders are exchanged
    if (::renameat2(AT_FDCWD, m_staging.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
        if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            throw Error(std::string("cannot put the new output in place: ") + std::strerror(errno), m_path);
        // No atomic exchange on this file system (NFS, some FUSE): two renames. Cut between them,
        // the next writer into this folder puts the old set back (removeStaleStaging).
        old = (target.parent_path() / partialName(target.filename().string() + ".old")).string();
        if (::rename(target.c_str(), old.c_str()) != 0)
            throw Error(std::string("cannot move the earlier output aside: ") + std::strerror(errno), m_path);
        if (::rename(m_staging.c_str(), target.c_str()) != 0) {
            const int e = errno;
            ::rename(old.c_str(), target.c_str());
            throw Error(std::string("cannot put the new output in place: ") + std::strerror(e), m_path);
        }
    }
    syncFolder(target.parent_path());
    std::error_code ec;
    fs::remove_all(old, ec);
    if (ec) m_notes.push_back("could not remove the replaced output " + old + ": " + ec.message());
}

AtomicFile& OutputTransaction::create(const std::string& name)
{
    if (m_committed) throw Error("output already committed", m_path);
    std::string target, shown;
    if (m_shape == Shape::File) {
        if (!name.empty()) throw Error("a single-file output takes no member name", m_path);
        if (!m_files.empty()) throw Error("a single-file output has one file", m_path);
        target = m_path;
    } else {
        // A relative path inside the folder; its subfolders are created (and removed again
        // with the rest when the transaction is not committed).
        const fs::path rel(name);
        bool valid = !name.empty() && rel.is_relative() && rel.has_filename();
        for (const auto& part : rel)
            valid = valid && !part.empty() && part != "." && part != "..";
        if (!valid) throw Error("invalid output name '" + name + "'", m_path);
        if (rel.has_parent_path()) createFolders((fs::path(m_folder) / rel.parent_path()).string());
        target = (fs::path(m_folder) / rel).string();
        shown = (fs::path(m_path) / rel).string(); // the staging folder is no name to show
    }
    m_files.push_back(std::unique_ptr<AtomicFile>(new AtomicFile(target, shown)));
    m_names.push_back(name);
    return *m_files.back();
}

std::vector<std::string> OutputTransaction::files() const
{
    std::vector<std::string> out;
    for (size_t i = 0; i < m_files.size(); ++i)
        out.push_back(m_staging.empty() ? m_files[i]->finalPath() : (fs::path(m_path) / m_names[i]).string());
    return out;
}

const AtomicFile* OutputTransaction::file(const std::string& name) const
{
    for (size_t i = m_names.size(); i-- > 0;)
        if (m_names[i] == name) return m_files[i].get();
    return nullptr;
}

void OutputTransaction::commitPart()
{
    if (m_existing != Existing::Shared)
        throw Error("a part of an output is committed only in a shared folder", m_path);
    for (; m_partCommitted < m_files.size(); ++m_partCommitted) {
        m_files[m_partCommitted]->sync();
        m_files[m_partCommitted]->commit();
    }
}

void OutputTransaction::commit()
{
    // Every file made durable before the first rename, several fsyncs at once (a job of many
    // files waits for the disk once, not once per file).
    std::atomic<size_t> next{m_partCommitted};
    std::exception_ptr failed;
    std::mutex failedLock;
    auto syncSome = [&] {
        for (size_t i; (i = next++) < m_files.size();) {
            try {
                m_files[i]->sync();
            } catch (...) {
                const std::lock_guard<std::mutex> lock(failedLock);
                if (!failed) failed = std::current_exception();
            }
        }
    };
    std::vector<std::thread> syncers;
    for (size_t t = 1; t < std::min<size_t>(m_files.size(), 8); ++t)
        syncers.emplace_back(syncSome);
    syncSome();
    for (auto& t : syncers)
        t.join();
    if (failed) std::rethrow_exception(failed);
    if (m_staging.empty() && m_replacing) removeOldInPlace();
    size_t done = m_partCommitted;
    try {
        for (; done < m_files.size(); ++done)
            m_files[done]->commit();
    } catch (...) {
        for (size_t i = m_partCommitted; i < done; ++i)
            ::unlink(m_files[i]->finalPath().c_str());
        throw;
    }
    if (!m_staging.empty()) { // failing here, the destructor removes the staging folder: old set kept
        keepOldEntries();
        syncFolder(m_staging);
        swapInStaging();
    }
    m_committed = true;
}

} // namespace ckpt::io
