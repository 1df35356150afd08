#include "snapshot.h"

#include "sharding_map.h"

#include "io/error.h"
#include "io/location.h"
#include "layout/family.h"
#include "ops/analyze.h"
#include "ops/file_listing.h"

#include <QDir>
#include <QFileInfo>
#include <QThread>
#include <atomic>
#include <filesystem>
#include <map>
#include <string_view>

namespace ckpt::app {

namespace {

Node* add(Node* parent, std::string name, NodeKind kind, std::string kindText)
{
    auto n = std::make_unique<Node>();
    n->name = std::move(name);
    n->kind = kind;
    n->kindText = std::move(kindText);
    n->parent = parent;
    n->row = parent ? int(parent->children.size()) : 0;
    n->path = parent && !parent->path.empty() ? parent->path + "/" + n->name : n->name;
    Node* raw = n.get();
    if (parent) parent->children.push_back(std::move(n));
    return raw;
}

// The file's object tree under its node, from the typed listing (depth first, with depths).
void addFileEntries(Node* fileNode, const ops::FileListing& listing)
{
    std::vector<Node*> stack{fileNode};
    std::map<std::string, std::vector<std::string>> byStorage; // which tensors share a storage
    for (const auto& t : listing.tensors)
        if (!t.storage.empty()) byStorage[t.storage].push_back(t.tensor.path);
    for (const torch::Entry& e : listing.entries) {
        if (e.depth == 0) continue;
        while (int(stack.size()) > e.depth)
            stack.pop_back();
        const auto slash = e.path.rfind('/');
        // A file of items names each item by its whole label ("optimizer/state/fc.weight/exp_avg@0").
        const bool item = listing.format == "dcp" && e.depth == 1;
        const std::string name =
            item || slash == std::string::npos ? item ? e.name : e.path : e.path.substr(slash + 1);
        const bool tensor =
            e.kind == torch::EntryKind::Tensor && e.tensor >= 0 && size_t(e.tensor) < listing.tensors.size();
        Node* n =
            add(stack.back(), name, tensor ? NodeKind::Tensor : NodeKind::Entry, tensor ? "tensor" : e.type);
        n->path = fileNode->path.empty() ? e.path : fileNode->path + "/" + e.path;
        if (tensor) {
            const ops::ListedTensor& t = listing.tensors[size_t(e.tensor)];
            n->dtype = torch::name(t.tensor.dtype);
            n->shape = t.tensor.shape;
            n->bytes = listing.format == "safetensors" ? t.storageBytes : t.tensor.nbytes();
            n->elements = t.tensor.numel();
            n->file = listing.file;
            n->value = t.value;
            n->tensor = std::make_unique<const ops::ListedTensor>(t);
            if (!t.storage.empty())
                for (const auto& o : byStorage[t.storage])
                    if (o != t.tensor.path) n->sharedWith.push_back(o);
        } else {
            n->value = e.summary;
        }
        stack.push_back(n);
    }
}

void describeParameter(Node* n, const layout::Parameter& p, int tag, int index, Node::Held held)
{
    n->tag = tag;
    n->param = index;
    n->held = held;
    n->dtype = torch::name(p.dtype);
    n->shape = p.shape;
    n->elements = p.numel();
    n->bytes = p.numel() * torch::elementSize(p.dtype);
    n->ranks = int(p.slices.size());
}

// The tag's parameters, each with its optimizer moments (`moments`: layout::momentTensors of the
// tag) below it.
void addParameters(Node* tagNode, const layout::Tag& t, int tag,
                   const std::vector<layout::Parameter>& moments)
{
    std::map<std::string, std::vector<int>> momentsOf;
    for (size_t mi = 0; mi < moments.size(); ++mi)
        momentsOf[moments[mi].name.substr(0, moments[mi].name.rfind('/'))].push_back(int(mi));
    Node* params = add(tagNode, "parameters", NodeKind::Group, "parameters");
    for (size_t pi = 0; pi < t.params.size(); ++pi) {
        const auto& p = t.params[pi];
        const char* kind = p.kind == layout::Parameter::Kind::Buffer   ? "buffer"
                           : p.kind == layout::Parameter::Kind::Frozen ? "parameter (frozen)"
                                                                       : "parameter";
        Node* pn = add(params, p.name, NodeKind::Parameter, p.tiedTo.empty() ? kind : "tied parameter");
        describeParameter(pn, p, tag, int(pi), Node::Held::Parameter);
        for (const int mi : momentsOf[p.name]) {
            // As saved: moments are often, but not always, fp32 (8-bit and bf16 optimizers keep
            // them smaller).
            const layout::Parameter& m = moments[size_t(mi)];
            Node* st = add(pn, m.name.substr(p.name.size() + 1), NodeKind::Parameter, "optimizer state");
            describeParameter(st, m, tag, mi, Node::Held::Moment);
        }
        params->elements += pn->elements;
    }
}

// The tag's tensors outside the model (the optimizer's state as DCP and Composer keep it, RNG
// states, ...), as a tree of their `/` paths under "other tensors".
void addOtherTensors(Node* tagNode, const layout::Tag& t, int tag)
{
    if (t.otherTensors.empty()) return;
    Node* group = add(tagNode, "other tensors", NodeKind::Group, "other tensors");
    std::map<std::string, Node*> folders{{"", group}};
    for (size_t i = 0; i < t.otherTensors.size(); ++i) {
        const layout::Parameter& p = t.otherTensors[i];
        Node* parent = group;
        std::string at;
        size_t from = 0;
        for (size_t slash; (slash = p.name.find('/', from)) != std::string::npos; from = slash + 1) {
            at = p.name.substr(0, slash);
            auto [it, added] = folders.emplace(at, nullptr);
            // A folder of the saved object tree: data, so an Entry (a Group's name is translated).
            if (added) it->second = add(parent, p.name.substr(from, slash - from), NodeKind::Entry, "folder");
            parent = it->second;
        }
        Node* n = add(parent, p.name.substr(from), NodeKind::Parameter, "other tensor");
        describeParameter(n, p, tag, int(i), Node::Held::Other);
        group->bytes += n->bytes;
    }
}

} // namespace

const layout::Parameter* heldParameter(const Snapshot& s, const Node& n)
{
    if (n.kind != NodeKind::Parameter || n.tag < 0 || size_t(n.tag) >= s.tags().size() || n.param < 0)
        return nullptr;
    const layout::Tag& t = s.tags()[size_t(n.tag)];
    const std::vector<layout::Parameter>* list = n.held == Node::Held::Parameter ? &t.params
                                                 : n.held == Node::Held::Other   ? &t.otherTensors
                                                 : size_t(n.tag) < s.moments.size()
                                                     ? &s.moments[size_t(n.tag)]
                                                     : nullptr;
    return list && size_t(n.param) < list->size() ? &(*list)[size_t(n.param)] : nullptr;
}

layout::Tag oneParameterTag(const Snapshot& s, const Node& n)
{
    const layout::Tag& t = s.tags().at(size_t(n.tag));
    layout::Tag one;
    one.name = t.name;
    one.dir = t.dir;
    if (n.held == Node::Held::Parameter) one.exportDtype = t.exportDtype; // moments as stored
    if (const layout::Parameter* p = heldParameter(s, n)) one.params.push_back(*p);
    return one;
}

namespace {
std::atomic<const void*> g_guiThread{nullptr};
std::atomic<int> g_guiLoads{0};
} // namespace

QString absoluteLocation(const QString& path)
{
    return io::isRemotePath(path.toStdString()) ? path : QFileInfo(path).absoluteFilePath();
}

QString canonicalLocation(const QString& path)
{
    return io::isRemotePath(path.toStdString()) ? path : QFileInfo(path).canonicalFilePath();
}

QString locationName(const QString& path)
{
    const std::string p = path.toStdString();
    return io::isRemotePath(p) ? QString::fromStdString(io::fileName(p)) : QFileInfo(path).fileName();
}

std::optional<bool> knownFolder(const QString& path, const Snapshot* open)
{
    const std::string p = path.toStdString();
    if (!io::isRemotePath(p)) return QFileInfo(path).isDir();
    if (!open) return std::nullopt;
    // Over HTTP a folder is written with its '/' (the format says it is one): the same place either way.
    const auto same = [](std::string_view a, std::string_view b) {
        while (a.size() > 1 && a.back() == '/')
            a.remove_suffix(1);
        while (b.size() > 1 && b.back() == '/')
            b.remove_suffix(1);
        return a == b;
    };
    if (same(open->path, p)) return !open->singleFile();
    for (const layout::Tag& t : open->tags()) {
        for (const layout::RankFile& f : t.files)
            if (same(f.path, p)) return false;
        // A single file's one tag is the file itself.
        if (same(t.dir, p)) return !open->singleFile();
    }
    return std::nullopt;
}

void setGuiThread(const void* thread)
{
    g_guiThread = thread;
}

int loadsOnGuiThread()
{
    return g_guiLoads;
}

namespace {

// Opens through the registry, like every consumer: parsing the files is where the time goes
// (0-90%); Cancel stops it between two files.
std::shared_ptr<const layout::OpenedCheckpoint>
openObserved(const std::string& path, const ops::ProgressSink& progress, const ops::CancelToken* cancel)
{
    layout::OpenObserver watch;
    if (progress)
        watch.progress = [&](uint64_t done, uint64_t total, const std::string& file) {
            progress({int(total ? done * 900 / total : 0),
                      "parsing " + std::filesystem::path(file).filename().string(), done, total});
        };
    if (cancel) watch.cancelled = [cancel] { return cancel->cancelled(); };
    auto opened = layout::openCheckpoint(path, watch);
    if (cancel) cancel->throwIfCancelled();
    return opened;
}

// Building the tree of each file (90-100%) counts their bytes.
struct TreeProgress
{
    const ops::ProgressSink& sink;
    const ops::CancelToken* cancel;
    uint64_t total = 0, done = 0;

    void file(const std::string& label, uint64_t bytes)
    {
        if (cancel) cancel->throwIfCancelled();
        if (sink) sink({900 + int(total ? done * 100 / total : 0), label, done, total});
        done += bytes;
    }
};

// A tag's rank files, each with its object tree as the layout parsed it: never a second parse.
// Files the layout did not parse as one torch file (a .distcp of many items, an unused extra
// file) are listed without their object tree.
void addRankFiles(Node* tagNode, const layout::Tag& t, const layout::FileSet& parsed, TreeProgress& progress)
{
    Node* files = add(tagNode, "rank files", NodeKind::Group, "files");
    for (const auto& f : t.files) {
        progress.file(t.name + "/" + f.name, f.size);
        Node* fn = add(files, f.name, NodeKind::RankFile, layout::roleName(f.role));
        fn->bytes = f.size;
        fn->file = f.path;
        // Ranks only where the file has one: a model file of one process has no data-parallel
        // rank, and a tag of one tensor-parallel rank no tensor-parallel rank worth saying.
        fn->facts = {{"role", layout::roleName(f.role)}};
        if (f.dpRank >= 0) fn->facts.push_back({"data-parallel rank", std::to_string(f.dpRank)});
        if (t.mpWorldSize > 1) fn->facts.push_back({"tensor-parallel rank", std::to_string(f.mpRank)});
        // A file of items (a DCP .distcp) shows them, as `ckpt inspect --entries` lists them.
        const auto file = f.items.empty() ? parsed.find(f.path) : nullptr;
        if (file || !f.items.empty()) {
            try {
                addFileEntries(fn, file ? ops::listFile(*file) : ops::listItems(f, parsed));
            } catch (const ckpt::Error& e) {
                fn->error = e.what();
            }
        }
        files->bytes += f.size;
    }
}

void addTag(Snapshot& s, size_t ti, TreeProgress& progress)
{
    const layout::Tag& t = s.opened->model.tags[ti];
    s.layouts.push_back(std::make_shared<const ShardingLayout>(shardingLayout(t)));
    for (const auto& w : t.warnings) // an unreadable tag is in the checkpoint's warnings already
        if (t.unreadable.empty()) s.warnings.push_back(t.name + ": " + w);
    Node* tn = add(s.root.get(), t.name, NodeKind::Tag,
                   !t.unreadable.empty() ? "tag (cannot be read)"
                   : t.latest            ? "tag (latest)"
                                         : "tag");
    tn->tag = int(ti);
    tn->ranks = t.worldSize;
    tn->facts = t.facts;
    Node* cfg = add(tn, "configuration", NodeKind::Config, "configuration");
    cfg->text = layout::configurationText(t);
    addRankFiles(tn, t, *s.opened->files, progress);
    s.moments.push_back(layout::momentTensors(t));
    addParameters(tn, t, int(ti), s.moments.back());
    addOtherTensors(tn, t, int(ti));
}

// A file on its own: its object tree is the tree (the file family parsed it when opening).
void addSingleFile(Snapshot& s)
{
    const layout::Tag& t = s.opened->model.tags.front();
    const ops::FileListing listing = ops::listFile(*s.opened->files->get(t.files.front().path));
    s.warnings.insert(s.warnings.end(), listing.warnings.begin(), listing.warnings.end());
    s.root->kindText = listing.format + " file";
    s.root->bytes = listing.fileSize;
    addFileEntries(s.root.get(), listing);
}

} // namespace

std::shared_ptr<const Snapshot> loadSnapshot(const std::string& path, const ops::ProgressSink& progress,
                                             const ops::CancelToken* cancel)
{
    if (g_guiThread && QThread::currentThread() == g_guiThread) ++g_guiLoads;
    auto s = std::make_shared<Snapshot>();
    s->path = path;
    s->root = std::make_unique<Node>();
    s->root->kind = NodeKind::Checkpoint;
    // A URL is named whole: which server or bucket it is on matters as much as its last part.
    s->root->name = io::isRemotePath(path) ? path : std::filesystem::path(path).filename().string();
    s->opened = openObserved(path, progress, cancel);
    const layout::Checkpoint& ck = s->opened->model;
    s->family = ck.family;
    s->warnings = ck.warnings;
    if (ck.singleFile) {
        addSingleFile(*s);
        return s;
    }
    s->root->kindText = ck.familyName;
    TreeProgress tree{progress, cancel};
    for (const auto& t : ck.tags)
        for (const auto& f : t.files)
            tree.total += f.size;
    for (size_t ti = 0; ti < ck.tags.size(); ++ti)
        addTag(*s, ti, tree);
    return s;
}

} // namespace ckpt::app
