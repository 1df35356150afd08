// The few questions the recognizers ask of what a user named — file or folder, what a folder
// holds, a file's size — answered by the file system for a path and by the object store for a
// URL (s3:// lists; http(s):// cannot, so a folder there is one whose names the format gives).
// model/layout asks these, not std::filesystem, so a family never knows where bytes are.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ckpt::io {

enum class PathKind { Missing, File, Folder, Other };

struct FolderEntry
{
    std::string name; // the last component
    bool folder = false;
    uint64_t size = 0; // files only
    bool link = false; // a local symbolic link (followed for `folder` and `size`)
};

bool isRemotePath(const std::string& path);
// Throws Error naming `path` when nothing can be opened there: a local path that is missing or
// neither a folder nor a regular file (refused by its type, before any read); a URL the listing
// of its folder does not have. A plain HTTP server is asked nothing: opening says what it answers.
void requireOpenable(const std::string& path);
// Throws Error naming `url` when it is no URL the engine can open (malformed). Asks no server (a window
// checks what the user typed with it).
void checkRemoteUrl(const std::string& url);
// Who answers a URL and how it signs: "credentials: profile 'lab' in ~/.aws/credentials;
// endpoint http://minio:9000" (the words errors use); "" for plain HTTP(S). Asks no server; a
// setting that cannot be read is said so, and a URL that is none says why.
std::string remoteSourceOf(const std::string& url);
// A URL typed wrong ("s3:/b/k", "S3://b/k"): the URL meant, else empty (see remote/url.h).
std::string meantUrl(const std::string& text);
// Never throws for a local path (an unreadable one is Missing); a URL whose server cannot be
// asked throws Error naming it.
PathKind pathKind(const std::string& path);
// False for a plain HTTP(S) folder: its server has no listing, so a family must know the
// names it looks for and ask for them (probeFiles).
bool canList(const std::string& folder);
// Which of these files exist, and their sizes (nullopt: missing or unreadable), asked all at once
// (one wave of requests for remote files, whose heads then stay open for the parse). A local name
// the system cannot look for (too long, say) throws Error naming it.
std::vector<std::optional<uint64_t>> probeFiles(const std::vector<std::string>& paths);
// Files and folders directly in `folder` (not sorted). Throws Error naming the folder when it
// cannot be listed (a plain HTTP server).
std::vector<FolderEntry> listFolder(const std::string& folder);
struct FileBelow
{
    std::string path;     // as childPath writes it
    std::string relative; // to the folder listed, '/'-separated
    uint64_t size = 0;
};
// Every file under `folder`, at any depth, sorted by the relative path (links not followed),
// with the sizes the listing gave (no request per file). A folder that cannot be listed
// (canList) gives the files opened in it so far: those its family found by name. Throws Error
// naming a folder whose listing fails.
std::vector<FileBelow> listFilesBelow(const std::string& folder);
std::string childPath(const std::string& folder, const std::string& name);
// A folder's path as the questions above take it: without a trailing '/', except over plain
// HTTP, where the '/' is what says "folder".
std::string folderPath(const std::string& path);
// A local folder as an absolute path without "." or ".." and no trailing separator (what names a
// folder given as "."); a URL only loses its trailing '/'.
std::string normalFolder(const std::string& path);
// Whether two paths name one file (a local file by any of its paths; a URL by itself).
bool sameFile(const std::string& a, const std::string& b);
// A folder in `folder`, as every question above takes it: over plain HTTP, which lists nothing, a
// folder's URL ends in '/' (else it is asked for as a file).
std::string childFolder(const std::string& folder, const std::string& name);
std::string parentPath(const std::string& path);
std::string fileName(const std::string& path);
// Throws Error naming the path when it has no size to tell.
uint64_t fileSize(const std::string& path);
// A file's size when it can be told without a request (a local file; a remote one already open),
// else nullopt.
std::optional<uint64_t> knownSize(const std::string& path);
// Bytes of the regular local files at `location` (a file, or a folder and its subfolders; links
// not followed), counting at most 100,000 entries; 0 for a URL, whose bytes are counted as they
// are fetched. What opening it may parse, for a percentage.
uint64_t localBytesAt(const std::string& location);

} // namespace ckpt::io
