// A checkpoint family (DeepSpeed ZeRO, a single torch.save / safetensors file, a Hugging Face
// folder, ...) is one recognizer behind this interface, and the registry is the only way the
// CLI, the window and the operations open anything: adding a family is new files in
// model/layout plus one line in family.cpp's list, nothing above this layer.
#pragma once

#include "layout/checkpoint.h"
#include "layout/file_set.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::layout {

// The tags a path holds, found cheaply (names, pointers such as `latest`): nothing parsed.
struct TagList
{
    std::string root;
    std::string latest; // the tag the family's pointer names, possibly one that does not exist
    std::vector<std::pair<std::string, std::string>> tags; // name, location; in training order
    std::vector<std::string> warnings;
    // Files beside the tags that are no part of them (named like a checkpoint, but not one), by
    // name relative to the root: listed, never read.
    std::vector<std::string> otherFiles;
};

class Family
{
public:
    virtual ~Family() = default;
    virtual std::string_view id() const = 0;
    virtual std::string_view displayName() const = 0; // "DeepSpeed checkpoint", for people
    // For "no checkpoint found; looked for ...": what this family looks like on disk.
    virtual std::string_view lookedFor() const = 0;
    // One file holding one object tree (a torch.save or safetensors file), not a folder of
    // tags: it is exported to one file and inspected as its whole object tree.
    virtual bool singleFile() const { return false; }
    // Cheap and content-based (magic bytes, `latest`, `.metadata`, an index JSON; never a name
    // alone): reads directory entries and at most a few KiB. Never throws.
    virtual bool match(const std::string& path) const = 0;
    // The files match() asks for by name in a folder nothing lists (plain HTTP), relative to it:
    // familyOf asks for every family's at once, so recognising costs one round trip, not one
    // per family.
    virtual std::vector<std::string> namesAsked() const { return {}; }
    // Throws Error when the path holds no tag after all.
    virtual TagList listTags(const std::string& path) const = 0;
    // Opens one tag fully and strictly (throws Error naming the file on anything inconsistent):
    // its files, parameters, and for each parameter where its bytes are. Files parsed on the way
    // are adopted into `files`, so operations never parse them again.
    virtual Tag openTag(const TagList& list, size_t index, FileSet& files) const = 0;
};

// In the order they are tried: folder families first, the single file last.
const std::vector<const Family*>& families();
// Adds a family before the built-in ones (a family built outside this library, a test's): every
// view and operation then takes its checkpoints. Call before anything is opened; the family must
// outlive every use.
void registerFamily(const Family& family);
// The family holding `path`; throws Error for a missing path, a FIFO/device, or a folder no
// family recognises (listing what was looked for).
const Family& familyOf(const std::string& path);

// An opened checkpoint: immutable once returned, shared by every operation and thread that
// reads it (the window's views, a comparison, an export, a conversion), so each file is parsed
// once. Operations take it with one of its tags (OpenedTag); paths are resolved once, here.
struct OpenedCheckpoint
{
    const Family* family = nullptr;
    Checkpoint model;
    std::shared_ptr<FileSet> files;

    // The tag a job means: `name`, or else the one `latest` names, or else the only one;
    // throws Error listing the tags when the choice is ambiguous or the name unknown.
    const Tag& chooseTag(const std::string& name) const;
};

// One tag of an opened checkpoint: what every operation reads. Holding it keeps the checkpoint
// (and so the tag) alive.
struct OpenedTag
{
    std::shared_ptr<const OpenedCheckpoint> checkpoint;
    const Tag* tag = nullptr;

    const Tag& operator*() const { return *tag; }
    const Tag* operator->() const { return tag; }
    const FileSet& files() const { return *checkpoint->files; }
    const std::string& root() const { return checkpoint->model.root; }
    // What an output may not be, contain or lie in: the path opened and the tag's own location.
    std::vector<std::string> inputs() const
    {
        std::vector<std::string> in{checkpoint->model.opened};
        if (!tag->dir.empty() && tag->dir != in.front()) in.push_back(tag->dir);
        return in;
    }
};

// The tag `name` of an opened checkpoint, by OpenedCheckpoint::chooseTag's rules.
OpenedTag tagOf(std::shared_ptr<const OpenedCheckpoint> opened, const std::string& name);

// What the window sees of an opening: bytes of the files parsed so far out of all the tags'
// files (a percentage; the files are parsed, not read: a pickle and a directory each), the file
// just parsed, and a way to stop between two files (openCheckpoint then throws Cancelled).
struct OpenObserver
{
    std::function<void(uint64_t done, uint64_t total, const std::string& file)> progress;
    std::function<bool()> cancelled;
};

// Every tag, leniently: a tag that cannot be read is kept with its error as a warning, so one
// bad save does not hide the others. Throws Error when nothing can be read.
std::shared_ptr<const OpenedCheckpoint> openCheckpoint(const std::string& path,
                                                       const OpenObserver& observer = {});
// One tag (`tag` empty: latest, or the only one), strictly: any damage is an Error. The observer
// sees the bytes of that tag's files parsed so far (what `ckpt export/stats/diff` show first).
// `files`: parse into this set (files a caller parsed before, to check them, are not parsed again).
std::shared_ptr<const OpenedCheckpoint> openCheckpointTag(const std::string& path, const std::string& tag,
                                                          const OpenObserver& observer = {},
                                                          std::shared_ptr<FileSet> files = nullptr);
// The same, as the tag an operation takes.
OpenedTag openTag(const std::string& path, const std::string& tag, const OpenObserver& observer = {},
                  std::shared_ptr<FileSet> files = nullptr);
// A file some opened checkpoint already parsed (a rank file, a shard), as a checkpoint of its own:
// its tensors are read from `parsed`, nothing is parsed again. `id` is its FileSet id.
OpenedTag openParsedFile(const std::string& id, std::shared_ptr<const TensorFile> parsed);

// Where the tag a job on `path` means lies (chooseTag's rules), from names alone: nothing is
// parsed, so an operation can refuse its output before it reads anything.
std::string tagLocation(const std::string& path, const std::string& tag);

} // namespace ckpt::layout
