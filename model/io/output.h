// Where every output of every operation is written. One place decides whether an output may be
// written at all (never on, inside, or around an input: compared by resolved path and by
// device/inode, so symlinks, hard links, bind mounts and `..` are caught), and one transaction
// owns the files of a job: created under recognisable temporary names, committed together once
// the job has verified them, removed together otherwise — also from a signal handler.
#pragma once

#include "io/atomic_file.h"

#include <memory>
#include <string>
#include <vector>

namespace ckpt::io {

// Throws Error naming both paths when `output` is, lies inside, or contains any of `inputs`
// (files or folders). `output` need not exist.
void checkOutputOutsideInputs(const std::vector<std::string>& inputs, const std::string& output);

// The temporary name of an output: ".NAME.ckpt-partial-HOST-PID" beside it.
std::string partialName(const std::string& finalName);

class OutputTransaction
{
public:
    enum class Shape {
        File,  // `path` is the one output file
        Folder // `path` is a folder the outputs go into (created when missing)
    };

    // Checks the output against the inputs, creates missing folders, takes the folder's lock
    // (a second writer into the same folder fails clearly instead of mixing files) and removes
    // temporaries left by writers that are gone (listed in notes()).
    OutputTransaction(const std::vector<std::string>& inputs, const std::string& path, Shape shape);
    // Uncommitted: removes every temporary, and the folders this transaction created if empty.
    ~OutputTransaction();
    OutputTransaction(const OutputTransaction&) = delete;
    OutputTransaction& operator=(const OutputTransaction&) = delete;

    // A new output under its temporary name: `name` a relative path inside the folder
    // (Shape::Folder; subfolders are created), or empty for the one file (Shape::File).
    AtomicFile& create(const std::string& name = {});
    // Renames every file to its final name, in creation order; if one rename fails, the files
    // already renamed are removed again, so the job leaves all of its outputs or none.
    void commit();

    const std::string& folder() const { return m_folder; }
    std::vector<std::string> files() const; // final paths, in creation order
    const std::vector<std::string>& notes() const { return m_notes; }

private:
    void createFolders(const std::string& dir);
    void lockFolder();
    void removeStalePartials();

    Shape m_shape;
    std::string m_path;
    std::string m_folder;
    std::vector<std::string> m_createdDirs; // outermost first
    std::vector<std::unique_ptr<AtomicFile>> m_files;
    std::vector<std::string> m_notes;
    int m_lockFd = -1;
    bool m_lockBusy = false; // another writer holds the folder
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
