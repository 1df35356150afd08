#include "snapshot.h"

#include "sharding_map.h"

#include "io/error.h"
#include "layout/deepspeed.h"
#include "layout/family.h"
#include "ops/analyze.h"
#include "ops/inspect.h"

#include <QThread>
#include <atomic>
#include <filesystem>
#include <map>

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

void addFileEntries(Node* fileNode, const nlohmann::ordered_json& doc)
{
    // Rebuild the entry tree from the flat, depth-annotated list inspect produces.
    std::vector<Node*> stack{fileNode};
    const auto& tensors = doc["tensors"];
    std::map<std::string, std::vector<std::string>> byStorage; // which tensors share a storage
    for (const auto& t : tensors)
        if (t["storage"].is_string())
            byStorage[t["storage"].get<std::string>()].push_back(t["path"].get<std::string>());
    for (const auto& e : doc["entries"]) {
        const int depth = e["depth"].get<int>();
        if (depth == 0) continue;
        while (int(stack.size()) > depth)
            stack.pop_back();
        const std::string path = e["path"].get<std::string>();
        const auto slash = path.rfind('/');
        const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
        const std::string kind = e["kind"].get<std::string>();
        Node* n = add(stack.back(), name, kind == "tensor" ? NodeKind::Tensor : NodeKind::Entry,
                      kind == "tensor" ? "tensor" : e["type"].get<std::string>());
        n->path = fileNode->path.empty() ? path : fileNode->path + "/" + path;
        if (kind == "tensor") {
            const auto& t = tensors[e["tensor"].get<size_t>()];
            n->dtype = t["dtype"];
            n->shape = t["shape"].get<std::vector<int64_t>>();
            n->bytes = t["nbytes"];
            n->elements = 1;
            for (auto d : n->shape)
                n->elements *= uint64_t(d);
            n->info = t;
            n->info["file"] = doc["file"];
            if (t["storage"].is_string()) {
                std::vector<std::string> others;
                for (const auto& o : byStorage[t["storage"].get<std::string>()])
                    if (o != t["path"].get<std::string>()) others.push_back(o);
                if (!others.empty()) n->info["shared_with"] = others;
            }
        } else {
            n->info = {{"type", e["type"]}};
            if (e.contains("summary")) n->info["value"] = e["summary"];
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

// The tag's parameters, each with its optimizer moments (`moments`: ops::momentParameters of the
// tag, whichever way the family keeps them) below it.
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
    if (n.kind != NodeKind::Parameter || n.tag < 0 || size_t(n.tag) >= s.tags.size() || n.param < 0)
        return nullptr;
    const layout::Tag& t = s.tags[size_t(n.tag)];
    const std::vector<layout::Parameter>* list = n.held == Node::Held::Parameter ? &t.params
                                                 : n.held == Node::Held::Other   ? &t.otherTensors
                                                 : size_t(n.tag) < s.moments.size()
                                                     ? &s.moments[size_t(n.tag)]
                                                     : nullptr;
    return list && size_t(n.param) < list->size() ? &(*list)[size_t(n.param)] : nullptr;
}

layout::Tag oneParameterTag(const Snapshot& s, const Node& n)
{
    const layout::Tag& t = s.tags.at(size_t(n.tag));
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

void setGuiThread(const void* thread)
{
    g_guiThread = thread;
}

int loadsOnGuiThread()
{
    return g_guiLoads;
}

std::shared_ptr<const Snapshot> loadSnapshot(const std::string& path, const ops::ProgressSink& progress,
                                             const ops::CancelToken* cancel)
{
    if (g_guiThread && QThread::currentThread() == g_guiThread) ++g_guiLoads;
    auto s = std::make_shared<Snapshot>();
    s->path = path;
    s->root = std::make_unique<Node>();
    s->root->kind = NodeKind::Checkpoint;
    s->root->name = std::filesystem::path(path).filename().string();
    Node* root = s->root.get();

    if (!layout::familyOf(path).singleFile()) {
        // Parsing the files is where the time goes (0-90%); Cancel stops it between two files.
        layout::OpenObserver watch;
        if (progress)
            watch.progress = [&](uint64_t done, uint64_t total, const std::string& file) {
                progress({int(total ? done * 900 / total : 0),
                          "parsing " + std::filesystem::path(file).filename().string(), done, total});
            };
        if (cancel) watch.cancelled = [cancel] { return cancel->cancelled(); };
        const auto opened = layout::openCheckpoint(path, watch);
        if (cancel) cancel->throwIfCancelled();
        const layout::Checkpoint& ck = opened->model;
        s->opened = opened;
        s->family = ck.family;
        s->warnings = ck.warnings;
        root->kindText = ck.familyName;
        // The files are parsed; building the tree of each (90-100%) counts their bytes.
        uint64_t total = 0, done = 0;
        for (const auto& t : ck.tags)
            for (const auto& f : t.files)
                total += f.size;
        for (size_t ti = 0; ti < ck.tags.size(); ++ti) {
            const layout::Tag& t = ck.tags[ti];
            s->tags.push_back(t);
            s->layouts.push_back(std::make_shared<const ShardingLayout>(shardingLayout(t)));
            for (const auto& w : t.warnings) // an unreadable tag is in the checkpoint's warnings already
                if (t.unreadable.empty()) s->warnings.push_back(t.name + ": " + w);
            Node* tn = add(root, t.name, NodeKind::Tag,
                           !t.unreadable.empty() ? "tag (cannot be read)"
                           : t.latest            ? "tag (latest)"
                                                 : "tag");
            tn->tag = int(ti);
            tn->ranks = t.worldSize;
            tn->info = {{"zero_stage", t.zeroStage},
                        {"world_size", t.worldSize},
                        {"dtype", t.dtype},
                        {"ds_version", t.dsVersion},
                        {"global_steps", t.globalSteps},
                        {"global_samples", t.globalSamples},
                        {"optimizer", t.optimizer}};
            Node* cfg = add(tn, "configuration", NodeKind::Config, "configuration");
            cfg->info = {
                {"ds_config", t.config}, {"client_state", t.clientState}, {"lr_scheduler", t.lrScheduler}};
            Node* files = add(tn, "rank files", NodeKind::Group, "files");
            for (const auto& f : t.files) {
                if (cancel) cancel->throwIfCancelled();
                if (progress)
                    progress({900 + int(total ? done * 100 / total : 0), t.name + "/" + f.name, done, total});
                done += f.size;
                Node* fn = add(files, f.name, NodeKind::RankFile, layout::roleName(f.role));
                fn->bytes = f.size;
                fn->info = {{"file", f.path},
                            {"role", layout::roleName(f.role)},
                            {"dp_rank", f.dpRank},
                            {"mp_rank", f.mpRank}};
                // The file as the layout parsed it: never a second parse. Files the layout did
                // not parse as one torch file (a .distcp of many items, an unused extra file)
                // are listed without their object tree.
                if (const auto parsed = opened->files->find(f.path)) {
                    try {
                        addFileEntries(fn, ops::inspectFile(*parsed));
                    } catch (const ckpt::Error& e) {
                        fn->info["error"] = e.what();
                    }
                }
                files->bytes += f.size;
            }
            s->moments.push_back(ops::momentParameters(t));
            addParameters(tn, t, int(ti), s->moments.back());
            addOtherTensors(tn, t, int(ti));
        }
        return s;
    }
    const auto doc = ops::inspectFile(path);
    s->family = doc["format"];
    for (const auto& w : doc["warnings"])
        s->warnings.push_back(w.get<std::string>());
    root->kindText = doc["format"].get<std::string>() + " file";
    root->bytes = doc["file_size"];
    addFileEntries(root, doc);
    return s;
}

} // namespace ckpt::app
