// Where every output of every operation is written. One place decides whether an output may be
// written at all (never on, inside, or around an input: compared by resolved path and by
// device/inode, so symlinks, hard links, bind mounts and `..` are caught), and one transaction
// owns the files of a job: created under recognisable temporary names, committed together once
// the job has verified them, removed together otherwise — also from a signal handler.
#pragma once

#include "io/atomic_file.h"

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace ckpt::io {

// Throws Error naming both paths when `output` is, lies inside, or contains any of `inputs`
// (files or folders). `output` need not exist.
void checkOutputOutsideInputs(const std::vector<std::string>& inputs, const std::string& output);

// The files `folder` holds at any depth (relative paths, at most `limit`), temporaries left
// out: what makes a folder output "not empty" (empty subfolders mix nothing). The window asks
// before replacing by the same rule.
std::vector<std::string> filesHeld(const std::string& folder, size_t limit = SIZE_MAX);

// The temporary name of an output: ".NAME.ckpt-partial-HOST-PID" beside it.
std::string partialName(const std::string& finalName);

// Thrown when a folder output already holds files and replacing them was not asked for: a second
// export into it would leave the first one's shards and index beside the new files, and a loader
// could read the mix. The CLI adds its flag to the message, the window asks.
class OutputNotEmpty : public Error
{
public:
    using Error::Error;
};

class OutputTransaction
{
public:
    enum class Shape {
        File,  // `path` is the one output file
        Folder // `path` is a folder the outputs go into (created when missing)
    };
    // What a folder output does when the folder already holds files (a file output always
    // replaces its one file: the rename is atomic).
    enum class Existing {
        Refuse,  // OutputNotEmpty, before anything is read or written
        Replace, // the new output replaces the old one, atomically for the whole set (see commit())
        // Many writers fill one folder, each its own files (one process of a job split across
        // processes, ops/sharded.h): what the folder holds stays, nothing is staged, and each
        // transaction's files are renamed in one by one at commit. The folder is locked shared,
        // so a Refuse/Replace writer is kept out while shards write, and the other way round.
        Shared
    };
    // Replace: which top-level entries of the folder belong to the output being replaced, beside
    // those the new output writes (an export's earlier shards, named by its index). Every other
    // entry is kept.
    using OldOutput = std::function<bool(const std::string& name)>;

    // Checks the output against the inputs, creates missing folders, takes the folder's lock
    // (a second writer into the same folder fails clearly instead of mixing files) and removes
    // temporaries left by writers that are gone (listed in notes()).
    OutputTransaction(const std::vector<std::string>& inputs, const std::string& path, Shape shape,
                      Existing existing = Existing::Refuse, OldOutput oldOutput = {});
    // What the constructor refuses, checked without creating, locking or removing anything: an
    // operation given a path calls it before it reads the input, so a refusal costs no parse.
    static void precheck(const std::vector<std::string>& inputs, const std::string& path, Shape shape,
                         Existing existing = Existing::Refuse);
    // Uncommitted: removes every temporary, and the folders this transaction created if empty.
    ~OutputTransaction();
    OutputTransaction(const OutputTransaction&) = delete;
    OutputTransaction& operator=(const OutputTransaction&) = delete;

    // A new output under its temporary name: `name` a relative path inside the folder
    // (Shape::Folder; subfolders are created), or empty for the one file (Shape::File).
    AtomicFile& create(const std::string& name = {});
    // Renames every file to its final name, in creation order; if one rename fails, the files
    // already renamed are removed again, so the job leaves all of its outputs or none.
    // A folder output is written into a staging folder beside it (".NAME.ckpt-partial-HOST-PID"),
    // the entries it keeps (replacing: all but the old output's) are hard-linked into it, and the
    // two folders are exchanged in one rename (renameat2 RENAME_EXCHANGE): a reader, a crash or a
    // kill -9 sees the old set or the new set, never a mix. The old set is then removed.
    void commit();
    // Existing::Shared only: renames the files created since the last call in, in creation
    // order, and goes on (a process of a split job commits each unit as it is done).
    void commitPart();

    // Where files are created: the output folder, or the staging folder beside it.
    const std::string& folder() const { return m_folder; }
    std::vector<std::string> files() const;                // final paths, in creation order
    const AtomicFile* file(const std::string& name) const; // created under `name`, or nullptr
    const std::vector<std::string>& notes() const { return m_notes; }
    bool replacing() const { return m_replacing; } // the folder held files: they are replaced

private:
    void createFolders(const std::string& dir);
    void lockFolder();
    void removeStalePartials();
    void removeStaleStaging();
    void prepareFolder(Existing existing);
    void removeOldInPlace();
    void keepOldEntries();
    void swapInStaging();

    Shape m_shape;
    Existing m_existing = Existing::Refuse;
    std::string m_path;
    std::string m_folder;  // where files are created: the output folder, or the staging folder
    std::string m_staging; // replacing: the staging folder beside the output folder
    std::string m_target;  // the output folder resolved (through a symlink), once it exists
    OldOutput m_oldOutput;
    bool m_replacing = false;
    std::vector<std::string> m_names;       // each file's path relative to the folder, in creation order
    std::vector<std::string> m_createdDirs; // outermost first
    std::vector<std::unique_ptr<AtomicFile>> m_files;
    std::vector<std::string> m_notes;
    int m_lockFd = -1;
    bool m_lockBusy = false;    // another writer holds the folder
    size_t m_partCommitted = 0; // files renamed in by commitPart()
    bool m_committed = false;
};

// Removes every temporary output and created folder of every live transaction. Called by the
// interrupt handler when a job does not wind down in time; safe to call from any thread.
void removeAllTemporaryOutputs();

} // namespace ckpt::io

namespace ckpt::io::detail {
// The process-wide list removeAllTemporaryOutputs() works from.
void trackTemporary(const std::string& path, bool add);
void trackCreatedFolder(const std::string& path, bool add);
} // namespace ckpt::io::detail
