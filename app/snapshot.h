// What the window shows, built on a worker thread from the model library and handed to the
// GUI thread whole: a tree of plain values plus the details each node needs. No Qt objects,
// no file handles — it crosses threads by value.
#pragma once

#include "layout/checkpoint.h"
#include "layout/family.h"
#include "layout/sharding.h"
#include "ops/file_listing.h"
#include "ops/job.h"

#include <QString>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ckpt::app {

enum class NodeKind { Checkpoint, Tag, Config, RankFile, Entry, Tensor, Parameter, Group };

struct Node
{
    std::string name;
    NodeKind kind = NodeKind::Entry;
    std::string kindText; // "tag (latest)", "model states", "parameter (frozen)", ...
    std::string dtype;
    std::vector<int64_t> shape;
    uint64_t elements = 0;
    uint64_t bytes = 0;
    int ranks = 0;
    std::string path; // names from the root joined by '/', for --select and tests
    int tag = -1;     // index into Snapshot::tags
    int param = -1;   // index into that tag's list `held` names
    // Which list of the tag `param` indexes: its parameters, the optimizer moments of its
    // parameters (Snapshot::moments: "<param>/exp_avg"), or its other tensors (optimizer state
    // that is no moment, RNG, ...). A Parameter node of any of them has values, statistics and
    // a partition table.
    enum class Held : uint8_t { Parameter, Moment, Other } held = Held::Parameter;
    // What the details pane shows beyond the columns, by kind of node:
    std::string file;                                // RankFile, Tensor: the file it is or lies in
    std::unique_ptr<const ops::ListedTensor> tensor; // Tensor: as its file stores it
    std::vector<std::string> sharedWith;             // Tensor: the other tensors of its storage
    std::string value;                               // Entry: a small value's repr; Tensor: a 0-d one's
    std::string error;                               // RankFile: why its object tree cannot be listed
    std::vector<layout::Fact> facts;                 // Tag: what its family says of it; RankFile: role, ranks
    std::string text;                                // Config: the configuration, as JSON text
    Node* parent = nullptr;
    int row = 0; // index in parent->children: the item model's row, without a search
    std::vector<std::unique_ptr<Node>> children;
};

struct Snapshot
{
    std::string path;
    std::string family; // "deepspeed", "file", "hf", ...: the recognizer's id
    // The opened checkpoint's tags, which Node::tag indexes (a single file's one tag).
    const std::vector<layout::Tag>& tags() const { return opened->model.tags; }
    // Each tag's sharding map, laid out on the loading worker (at 64 ranks x 10,000 parameters
    // it took 43 ms of the GUI thread when a tag was selected); may be shorter than `tags`.
    std::vector<std::shared_ptr<const layout::ShardingLayout>> layouts;
    // Each tag's optimizer moments as parameters of their own ("<param>/exp_avg"), whichever way
    // the family keeps them: layout::momentTensors.
    std::vector<std::vector<layout::Parameter>> moments;
    std::vector<std::string> warnings;
    std::unique_ptr<Node> root;
    // The checkpoint as opened through the registry (parsed files and layout), a single file
    // too, shared with the jobs the window runs on it, so none of them parses a file again.
    std::shared_ptr<const layout::OpenedCheckpoint> opened;
    bool singleFile() const { return opened->model.singleFile; }
};

// What a Parameter node stands for (a parameter, a moment, another tensor of its tag); nullptr
// for any other node.
const layout::Parameter* heldParameter(const Snapshot& s, const Node& n);
// The node's tag with that one parameter alone: what a job reads to show or export it (moments
// and other tensors as stored, parameters as the tag exports them).
layout::Tag oneParameterTag(const Snapshot& s, const Node& n);

// Where the window keeps a path: a local one made absolute, a URL (s3://, http(s)://) as it is.
QString absoluteLocation(const QString& path);
// The same file however it was named: a local path with its links resolved (empty when it does not
// exist), a URL as it is.
QString canonicalLocation(const QString& path);
// The last name of a path or a URL, as a title shows it ("global_step2" of ".../global_step2/").
QString locationName(const QString& path);
// A word for people in the user's language: the window's own (`context`), else a family's, which
// model/layout marks where it defines it (layout/words.h, context "ckpt::layout"); else as it is
// (a number, a key of a family's own).
QString wordText(const char* context, const std::string& word);
// Whether `path` is a folder, from what the open checkpoint `open` already knows when it is a URL
// there (its root, a tag folder, a rank file): nullopt for a URL it does not know. A local path
// asks the file system. Never asks a server: the GUI thread must not wait for one.
std::optional<bool> knownFolder(const QString& path, const Snapshot* open);

// Builds the snapshot for a checkpoint folder or a single file. Throws ckpt::Error, and
// Cancelled when `cancel` is set. Progress counts the bytes of the files parsed so far.
std::shared_ptr<const Snapshot> loadSnapshot(const std::string& path, const ops::ProgressSink& progress = {},
                                             const ops::CancelToken* cancel = nullptr);

// How many snapshots were built on the GUI thread (a test asserts 0: file reading belongs on
// workers). Set by the window at start-up.
void setGuiThread(const void* thread);
int loadsOnGuiThread();

} // namespace ckpt::app
