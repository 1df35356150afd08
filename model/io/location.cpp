#include "io/location.h"

#include "io/error.h"
#include "io/input_file.h"
#include "io/mapped_file.h"
#include "io/remote/aws_config.h"
#include "io/remote/remote_object.h"
#include "io/remote/url.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <mutex>
#include <sys/stat.h>

namespace ckpt::io {

namespace fs = std::filesystem;

namespace {

std::string withSlash(std::string s)
{
    if (!s.empty() && s.back() != '/') s += '/';
    return s;
}

std::string withoutSlash(std::string s)
{
    while (!s.empty() && s.back() == '/')
        s.pop_back();
    return s;
}

// Object stores list their folders (S3 and GCS: ListObjectsV2; the Hub: its tree API); a plain
// HTTP server cannot, and the format names the files.
bool listable(remote::Scheme s)
{
    return s == remote::Scheme::S3 || s == remote::Scheme::Gcs || s == remote::Scheme::HuggingFace;
}

// One job asks the same folder several times (match, list the tags, open one): a listing is
// kept for a short while so that costs one round trip, not one per question. `oneLevel` false:
// everything below the folder (kept apart).
remote::ListPage listOnce(const std::string& url, bool oneLevel = true)
{
    using Clock = std::chrono::steady_clock;
    static std::mutex m;
    static std::map<std::string, std::pair<Clock::time_point, remote::ListPage>> cache;
    {
        std::lock_guard lock(m);
        const auto it = cache.find(oneLevel ? url : "**" + url);
        if (it != cache.end() && Clock::now() - it->second.first < std::chrono::seconds(30))
            return it->second.second;
    }
    const remote::Url u = remote::parseUrl(url);
    remote::ListPage page = remote::Store::forUrl(u)->list(u, oneLevel, nullptr);
    std::lock_guard lock(m);
    if (cache.size() > 256) cache.clear();
    cache[oneLevel ? url : "**" + url] = {Clock::now(), page};
    return page;
}

// The listing of the folder that holds `path`, and path's key: one LIST answers "file or
// folder" for every name in it.
PathKind remoteKind(const std::string& path)
{
    const remote::Url u = remote::parseUrl(path);
    if (!listable(u.scheme)) return u.key.empty() || u.key.back() == '/' ? PathKind::Folder : PathKind::File;
    if (u.key.empty()) return PathKind::Folder;
    const std::string key = withoutSlash(u.key);
    const remote::ListPage page = listOnce(withSlash(parentPath(path)));
    for (const auto& p : page.prefixes)
        if (p == key + "/") return PathKind::Folder;
    if (u.key.back() != '/')
        for (const auto& o : page.objects)
            if (o.key == key) return PathKind::File;
    return PathKind::Missing;
}

} // namespace

bool isRemotePath(const std::string& path)
{
    return remote::isRemote(path);
}

void requireOpenable(const std::string& path)
{
    if (isRemotePath(path)) {
        // s3:// asks the listing (one request, kept for the families' own questions); an HTTP
        // server is asked nothing here: opening the file says what it answered.
        if (pathKind(path) == PathKind::Missing) throw Error("no object or folder at this URL", path);
        return;
    }
    struct stat st
    {
    };
    if (::stat(path.c_str(), &st) != 0) throw cannotOpen(path, errno);
    if (!S_ISDIR(st.st_mode)) requireRegularFile(path);
}

void checkRemoteUrl(const std::string& url)
{
    remote::parseUrl(url);
}

std::string remoteSourceOf(const std::string& url)
{
    try {
        const remote::Url u = remote::parseUrl(url);
        if (u.scheme == remote::Scheme::Http || u.scheme == remote::Scheme::Https) return {};
        if (u.scheme != remote::Scheme::S3) return remote::Store::forUrl(u)->credentialNote();
        // Not the store's note: that one fetches a container's or instance's credentials.
        const remote::S3Settings s = remote::resolveS3Settings();
        return "credentials: " + s.credentials.source + "; endpoint " +
               (s.endpoint.empty() ? "AWS, region " + s.region : s.endpoint);
    } catch (const Error& e) {
        return e.what();
    }
}

std::string meantUrl(const std::string& text)
{
    return remote::meantUrl(text);
}

PathKind pathKind(const std::string& path)
{
    if (isRemotePath(path)) return remoteKind(path);
    struct stat st
    {
    };
    if (::stat(path.c_str(), &st) != 0) return PathKind::Missing;
    if (S_ISDIR(st.st_mode)) return PathKind::Folder;
    return S_ISREG(st.st_mode) ? PathKind::File : PathKind::Other;
}

bool canList(const std::string& folder)
{
    return !isRemotePath(folder) || listable(remote::parseUrl(folder).scheme);
}

std::vector<std::optional<uint64_t>> probeFiles(const std::vector<std::string>& paths)
{
    // A name found missing stays missing for the job (30 s): recognising, listing and opening a
    // tag ask for the same names, and a missing one would otherwise be asked for each time.
    using Clock = std::chrono::steady_clock;
    static std::mutex m;
    static std::map<std::string, Clock::time_point> missing;
    const auto knownMissing = [&](const std::string& p) {
        std::lock_guard lock(m);
        const auto it = missing.find(p);
        return it != missing.end() && Clock::now() - it->second < std::chrono::seconds(30);
    };
    std::vector<std::pair<std::string, uint64_t>> remote;
    for (const auto& p : paths)
        if (isRemotePath(p) && !knownMissing(p)) remote.push_back({p, 0});
    MappedFile::prefetch(remote);
    std::vector<std::optional<uint64_t>> out;
    for (const auto& p : paths) {
        if (isRemotePath(p)) {
            out.push_back(MappedFile::openedRemoteSize(p));
            std::lock_guard lock(m);
            if (missing.size() > 100000) missing.clear();
            if (!out.back()) missing[p] = Clock::now();
            continue;
        }
        struct stat st
        {
        };
        const bool found = ::stat(p.c_str(), &st) == 0;
        if (!found && errno != ENOENT && errno != ENOTDIR && errno != EACCES)
            throw Error(std::string("the name cannot be looked for: ") + std::strerror(errno), p);
        out.push_back(found && S_ISREG(st.st_mode) ? std::optional<uint64_t>(st.st_size) : std::nullopt);
    }
    return out;
}

// A listing in one order wherever the folder is: a store lists its folders before its objects,
// a local folder in the order of its directory blocks.
static void sortByName(std::vector<FolderEntry>& entries)
{
    std::sort(entries.begin(), entries.end(),
              [](const FolderEntry& a, const FolderEntry& b) { return a.name < b.name; });
}

std::vector<FolderEntry> listFolder(const std::string& folder)
{
    std::vector<FolderEntry> out;
    if (isRemotePath(folder)) {
        const std::string url = withSlash(folder);
        const remote::ListPage page = listOnce(url);
        const std::string prefix = remote::parseUrl(url).key;
        for (const auto& p : page.prefixes)
            out.push_back({withoutSlash(p.substr(prefix.size())), true, 0});
        for (const auto& o : page.objects)
            if (o.key.size() > prefix.size()) out.push_back({o.key.substr(prefix.size()), false, o.size});
        sortByName(out);
        return out;
    }
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(folder, ec)) {
        std::error_code e2;
        const bool dir = e.is_directory(e2);
        if (!dir && !e.is_regular_file(e2)) continue;
        out.push_back(
            {e.path().filename().string(), dir, dir ? 0 : uint64_t(e.file_size(e2)), e.is_symlink(e2)});
    }
    if (ec) throw Error("cannot list the folder: " + ec.message(), folder);
    sortByName(out);
    return out;
}

std::vector<FileBelow> listFilesBelow(const std::string& folder)
{
    std::vector<FileBelow> files;
    if (!canList(folder)) {
        // Nothing lists it: the files opened in it so far are those the family found by name.
        const std::string prefix = withSlash(folder);
        for (const auto& [url, size] : MappedFile::openedRemoteUnder(prefix))
            files.push_back({url, url.substr(prefix.size()), size});
    } else if (isRemotePath(folder)) {
        const remote::Url u = remote::parseUrl(withSlash(folder));
        // A folder with no folders in it (a tag) is all in the one-level listing the family
        // already asked for: no second request.
        remote::ListPage page = listOnce(withSlash(folder));
        if (!page.prefixes.empty()) page = listOnce(withSlash(folder), false);
        for (const auto& o : page.objects)
            if (o.key.size() > u.key.size() && o.key.back() != '/') {
                const std::string rel = o.key.substr(u.key.size());
                files.push_back({withSlash(folder) + rel, rel, o.size});
            }
    } else {
        std::error_code ec;
        for (fs::recursive_directory_iterator it(folder, ec), end; !ec && it != end; it.increment(ec)) {
            std::error_code sizeError;
            if (!it->is_regular_file(ec)) continue;
            const uint64_t size = it->file_size(sizeError);
            if (sizeError)
                throw Error("cannot read the file's size: " + sizeError.message(), it->path().string());
            files.push_back(
                {it->path().string(), fs::relative(it->path(), folder, ec).generic_string(), size});
        }
        if (ec) throw Error("cannot list the folder: " + ec.message(), folder);
    }
    std::sort(files.begin(), files.end(),
              [](const auto& a, const auto& b) { return a.relative < b.relative; });
    return files;
}

std::string childPath(const std::string& folder, const std::string& name)
{
    if (isRemotePath(folder)) return withSlash(folder) + name;
    return (fs::path(folder) / name).string();
}

std::string folderPath(const std::string& path)
{
    std::string p = path;
    while (p.size() > 1 && p.back() == '/')
        p.pop_back();
    return canList(path) ? p : withSlash(p);
}

std::string normalFolder(const std::string& path)
{
    if (isRemotePath(path)) return withoutSlash(path);
    fs::path p = fs::absolute(fs::path(path)).lexically_normal();
    if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
    return p.string();
}

bool sameFile(const std::string& a, const std::string& b)
{
    if (isRemotePath(a) || isRemotePath(b)) return a == b;
    std::error_code ec;
    return fs::equivalent(a, b, ec);
}

std::string childFolder(const std::string& folder, const std::string& name)
{
    return childPath(folder, name) + (canList(folder) ? "" : "/");
}

std::string parentPath(const std::string& path)
{
    if (!isRemotePath(path)) return fs::path(path).parent_path().string();
    // As std::filesystem writes it, without the trailing '/'; never above the bucket (or host),
    // nor above a Hub repository (hf://ORG/REPO[@REV] is its top).
    const std::string p = withoutSlash(path);
    const size_t start = p.find("://") + 3;
    size_t top = p.find('/', start);
    if (remote::parseUrl(path).scheme == remote::Scheme::HuggingFace && top != std::string::npos)
        top = p.find('/', top + 1);
    if (top == std::string::npos) return p;
    return p.substr(0, p.rfind('/'));
}

std::string fileName(const std::string& path)
{
    if (!isRemotePath(path)) return fs::path(path).filename().string();
    const std::string p = withoutSlash(path);
    return p.substr(p.rfind('/') + 1);
}

uint64_t fileSize(const std::string& path)
{
    if (isRemotePath(path)) {
        if (listable(remote::parseUrl(path).scheme))
            for (const auto& o : listOnce(withSlash(parentPath(path))).objects)
                if (o.key == remote::parseUrl(path).key) return o.size;
        return MappedFile::open(path)->size();
    }
    std::error_code ec;
    const auto n = fs::file_size(path, ec);
    // A size of "error" would show as 16 EiB (or 0) and hide that the folder changed under us.
    if (ec) throw Error("cannot read the file's size: " + ec.message(), path);
    return uint64_t(n);
}

std::optional<uint64_t> knownSize(const std::string& path)
{
    if (isRemotePath(path)) return MappedFile::openedRemoteSize(path);
    std::error_code ec;
    const auto n = fs::file_size(path, ec);
    return ec ? std::nullopt : std::optional<uint64_t>(n);
}

uint64_t localBytesAt(const std::string& location)
{
    if (isRemotePath(location)) return 0;
    std::error_code ec;
    if (fs::is_regular_file(fs::symlink_status(location, ec))) return fs::file_size(location, ec);
    uint64_t total = 0;
    size_t seen = 0;
    for (fs::recursive_directory_iterator it(location, fs::directory_options::skip_permission_denied, ec),
         end;
         !ec && it != end && ++seen <= 100000; it.increment(ec)) {
        std::error_code e2;
        if (it->is_regular_file(e2) && !it->is_symlink(e2)) total += it->file_size(e2);
    }
    return total;
}

} // namespace ckpt::io
