// A folder wherever its bytes live (a local path, an object store's prefix, a plain HTTP URL),
// asked what it holds. A family asks these questions and never whether a folder is remote: the
// answers differ only in cost, and the costly ones are asked in waves (one round trip for many
// names). The one real difference a family sees is `lists()`: a plain HTTP server has no listing,
// so there a folder's files are the names its format gives ("these names, if present").
#pragma once

#include "io/location.h"

#include <optional>
#include <string>
#include <vector>

namespace ckpt::io {

class Folder
{
public:
    // `path` as the user or a listing gave it: a local path or a URL.
    explicit Folder(std::string path);

    const std::string& path() const { return m_path; }
    // The last component ("step-100" for ckpt/step-100/ and s3://b/ckpt/step-100).
    std::string name() const;
    // The folder it is in; itself at the top of a bucket, host or Hub repository.
    Folder parent() const;
    // A file in it, and a folder in it (over plain HTTP a folder's URL ends in '/').
    std::string file(const std::string& name) const;
    Folder folder(const std::string& name) const;

    // Whether this is a folder at all (a local file or a missing path is not; over plain HTTP,
    // a URL ending in '/'). A URL whose server cannot be asked throws Error naming it.
    bool exists() const;
    // False for a plain HTTP folder: nothing lists it, and only the names a format gives can be
    // asked for (files(), probe()).
    bool lists() const;
    // Files and folders directly in it, unsorted; a local link is followed and marked `link`.
    // Throws Error naming the folder when it cannot be listed.
    std::vector<FolderEntry> entries() const;
    // Its files (links followed) by name, with sizes: the listing's where it lists, else those
    // of `expected` that are there, asked for in one wave.
    std::vector<FolderEntry> files(const std::vector<std::string>& expected = {}) const;
    // Whether anything has this name in it (a FIFO too: reading it then says why it is refused).
    // From the listing where there is one; a plain HTTP folder is asked.
    bool has(const std::string& name) const;
    // The sizes of these regular files in it (a relative path may name a subfolder's file);
    // nullopt where one is missing. Asked for in one wave: the remote files found stay open for
    // the read after, and one found missing is not asked for again by the same job.
    std::vector<std::optional<uint64_t>> probe(const std::vector<std::string>& names) const;
    std::optional<uint64_t> sizeOf(const std::string& name) const { return probe({name})[0]; }
    // These files of it (sizes as listed, 0 for unknown) are read next: remote ones are opened
    // together, in one wave, instead of a round trip each in a row. Nothing for local files.
    void willRead(const std::vector<FolderEntry>& files) const;
    // Where nothing lists it (plain HTTP), asks for these names in one wave, so that the
    // questions after find their answers without a round trip each; nothing where it lists.
    void askAhead(const std::vector<std::string>& names) const;
    // Every file below it, at any depth, sorted by relative path (listFilesBelow).
    std::vector<FileBelow> filesBelow() const;
    // The last name of what the link `name` in it points to; nullopt when it is no link (object
    // stores have none: Composer uploads a `.symlink` object in its place).
    std::optional<std::string> linkTarget(const std::string& name) const;

private:
    std::string m_path;
};

} // namespace ckpt::io
