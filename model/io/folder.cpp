#include "io/folder.h"

#include "io/mapped_file.h"

#include <filesystem>

namespace ckpt::io {

Folder::Folder(std::string path) : m_path(std::move(path)) {}

std::string Folder::name() const
{
    return fileName(m_path);
}

Folder Folder::parent() const
{
    return Folder(parentPath(m_path));
}

std::string Folder::file(const std::string& name) const
{
    return childPath(m_path, name);
}

Folder Folder::folder(const std::string& name) const
{
    return Folder(childFolder(m_path, name));
}

bool Folder::exists() const
{
    return pathKind(m_path) == PathKind::Folder;
}

bool Folder::lists() const
{
    return canList(m_path);
}

std::vector<FolderEntry> Folder::entries() const
{
    return listFolder(m_path);
}

std::vector<FolderEntry> Folder::files(const std::vector<std::string>& expected) const
{
    std::vector<FolderEntry> out;
    if (lists()) {
        for (auto& e : entries())
            if (!e.folder) out.push_back(std::move(e));
        return out;
    }
    const auto sizes = probe(expected);
    for (size_t i = 0; i < expected.size(); ++i)
        if (sizes[i]) out.push_back({expected[i], false, *sizes[i]});
    return out;
}

bool Folder::has(const std::string& name) const
{
    return lists() ? pathKind(file(name)) != PathKind::Missing : bool(sizeOf(name));
}

std::vector<std::optional<uint64_t>> Folder::probe(const std::vector<std::string>& names) const
{
    std::vector<std::string> paths;
    for (const auto& n : names)
        paths.push_back(file(n));
    return probeFiles(paths);
}

void Folder::willRead(const std::vector<FolderEntry>& files) const
{
    std::vector<std::pair<std::string, uint64_t>> open;
    for (const auto& f : files)
        open.push_back({file(f.name), f.size});
    MappedFile::prefetch(open);
}

void Folder::askAhead(const std::vector<std::string>& names) const
{
    if (!lists() && exists()) probe(names);
}

std::vector<FileBelow> Folder::filesBelow() const
{
    return listFilesBelow(m_path);
}

std::optional<std::string> Folder::linkTarget(const std::string& name) const
{
    if (isRemotePath(m_path)) return std::nullopt;
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_symlink(file(name), ec)) return std::nullopt;
    fs::path target = fs::read_symlink(file(name), ec);
    if (target.filename().empty()) target = target.parent_path(); // "ep0-ba2/"
    return target.filename().string();
}

} // namespace ckpt::io
