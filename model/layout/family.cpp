#include "layout/family.h"

#include "io/error.h"
#include "io/folder.h"
#include "layout/families.h"

#include <algorithm>
#include <optional>

namespace ckpt::layout {

namespace {

std::vector<const Family*>& registry()
{
    // Order matters only where two could match one path: specific folders before the generic
    // single file, which takes any regular file and lets its reader say what is wrong with it.
    // A Universal folder holds copied DeepSpeed model files too: it is tried before DeepSpeed's.
    // A Trainer checkpoint holds a DeepSpeed tag (and `latest`) or a Hugging Face model, and a run
    // folder its final model: the Trainer's family comes first and reads those through theirs.
    // A Megatron-Core iteration is a DCP folder too, with Megatron's metadata.json: before DCP's.
    // So is a Lightning run of FSDP .ckpt folders, which Lightning's family reads through DCP's; an
    // Accelerate save_state folder holds a Hugging Face model file: before both.
    static std::vector<const Family*> all = {
        &trainerFamily(),        &universalFamily(),   &deepSpeedFamily(),  &megatronFamily(),
        &verlFamily(),           &lightningFamily(),   &accelerateFamily(), &dcpFamily(),
        &dcpSafetensorsFamily(), &huggingFaceFamily(), &composerFamily(),   &singleFileFamily()};
    return all;
}

} // namespace

const std::vector<const Family*>& families()
{
    return registry();
}

void registerFamily(const Family& family)
{
    registry().insert(registry().begin(), &family);
}

const Family& familyOf(const std::string& path)
{
    io::requireOpenable(path);
    // Where nothing lists the folder, every family's names in one wave: each match then finds
    // its answers without a round trip of its own.
    std::vector<std::string> asked;
    for (const Family* f : families())
        for (const auto& n : f->namesAsked())
            asked.push_back(n);
    std::sort(asked.begin(), asked.end());
    asked.erase(std::unique(asked.begin(), asked.end()), asked.end());
    io::Folder(path).askAhead(asked);
    for (const Family* f : families())
        if (f->match(path)) return *f;
    std::string lookedFor;
    for (const Family* f : families())
        if (f->id() != singleFileFamily().id())
            lookedFor += std::string(lookedFor.empty() ? "" : "; ") + std::string(f->lookedFor());
    throw Error("no checkpoint found in this folder; looked for " + lookedFor +
                    " (a single file is opened by its own path)",
                path);
}

const Tag& OpenedCheckpoint::chooseTag(const std::string& name) const
{
    if (!name.empty()) {
        if (const Tag* t = model.find(name)) return *t;
        throw Error("no tag '" + name + "'", model.root);
    }
    if (const Tag* t = model.latest()) return *t;
    std::string names;
    for (const auto& t : model.tags)
        names += (names.empty() ? "" : ", ") + t.name;
    throw Error("no 'latest' file names a tag; choose one with --tag (" + names + ")", model.root);
}

namespace {

std::shared_ptr<OpenedCheckpoint> start(const std::string& path, TagList& list,
                                        std::shared_ptr<FileSet> files = nullptr)
{
    auto c = std::make_shared<OpenedCheckpoint>();
    c->family = &familyOf(path);
    c->files = files ? std::move(files) : std::make_shared<FileSet>();
    list = c->family->listTags(path);
    c->model.root = list.root;
    c->model.opened = path;
    c->model.family = std::string(c->family->id());
    c->model.familyName = std::string(c->family->displayName());
    c->model.singleFile = c->family->singleFile();
    c->model.warnings = list.warnings;
    c->model.otherFiles = list.otherFiles;
    if (!list.latest.empty() && std::none_of(list.tags.begin(), list.tags.end(),
                                             [&](const auto& t) { return t.first == list.latest; }))
        c->model.warnings.push_back("'latest' names tag '" + list.latest + "', which does not exist");
    return c;
}

// One tag opened by its family, with optimizer state kept by parameter name given to its parameters.
Tag openedTag(const Family& family, const TagList& list, size_t index, FileSet& files)
{
    Tag t = family.openTag(list, index, files);
    attachKeyedOptimizerState(t);
    return t;
}

// Reports an opening's parses to its observer, against the bytes at the locations it will read,
// for as long as it lives: the observer refers to the caller's locals, and the set is shared once
// the opening returns.
class Observing
{
public:
    Observing(FileSet& files, const OpenObserver& observer, const std::vector<std::string>& locations)
        : m_files(files)
    {
        if (!observer.progress && !observer.cancelled) return;
        if (observer.progress)
            for (const auto& l : locations)
                m_total += io::localBytesAt(l);
        files.observe({[this, &observer](const std::string& id, uint64_t bytes) {
                           m_done += bytes;
                           if (observer.progress) observer.progress(m_done, std::max(m_total, m_done), id);
                       },
                       observer.cancelled});
    }
    ~Observing() { m_files.observe({}); }
    Observing(const Observing&) = delete;
    Observing& operator=(const Observing&) = delete;

private:
    FileSet& m_files;
    uint64_t m_total = 0, m_done = 0;
};

} // namespace

std::shared_ptr<const OpenedCheckpoint> openCheckpoint(const std::string& path, const OpenObserver& observer)
{
    TagList list;
    auto c = start(path, list);
    std::vector<std::string> dirs;
    for (const auto& tag : list.tags)
        dirs.push_back(tag.second);
    const Observing observing(*c->files, observer, dirs);
    std::optional<Error> firstError;
    for (size_t i = 0; i < list.tags.size(); ++i) {
        const auto& [name, dir] = list.tags[i];
        if (observer.cancelled && observer.cancelled()) throw Cancelled();
        try {
            c->model.tags.push_back(openedTag(*c->family, list, i, *c->files));
        } catch (const Error& e) {
            if (!firstError) firstError = e;
            Tag t;
            t.name = name;
            t.dir = dir;
            t.latest = name == list.latest;
            t.unreadable = e.what();
            t.unreadableError = e;
            t.warnings.push_back(std::string("cannot be read: ") + e.what());
            c->model.warnings.push_back("tag " + name + ": " + e.what());
            c->model.tags.push_back(std::move(t));
        }
    }
    // Nothing readable is an error, not an empty tree: the one tag's (which names the file), or
    // each tag's, so that a run whose every save broke says how each one broke.
    if (firstError && c->model.tags.size() == list.tags.size() &&
        std::all_of(c->model.tags.begin(), c->model.tags.end(),
                    [](const Tag& t) { return !t.unreadable.empty(); })) {
        if (c->model.tags.size() == 1) throw *firstError;
        std::string each;
        for (const Tag& t : c->model.tags)
            each += (each.empty() ? "" : "; ") + t.name + ": " + t.unreadable;
        throw Error("none of its " + std::to_string(c->model.tags.size()) + " tags can be read (" + each +
                        ")",
                    c->model.root.empty() ? path : c->model.root);
    }
    return c;
}

namespace {

// The index in `list` of the tag a job means, chosen from names alone.
size_t chooseByName(const std::string& path, const TagList& list, const std::string& tag)
{
    OpenedCheckpoint names;
    names.model.root = path;
    for (const auto& [name, dir] : list.tags) {
        Tag t;
        t.name = name;
        t.latest = name == list.latest;
        names.model.tags.push_back(std::move(t));
    }
    const Tag& chosen = names.chooseTag(tag);
    return size_t(&chosen - names.model.tags.data());
}

} // namespace

std::shared_ptr<const OpenedCheckpoint> openCheckpointTag(const std::string& path, const std::string& tag,
                                                          const OpenObserver& observer,
                                                          std::shared_ptr<FileSet> files)
{
    TagList list;
    auto c = start(path, list, std::move(files));
    // Chosen from names alone, so only that tag is parsed.
    const size_t index = chooseByName(path, list, tag);
    const Observing observing(*c->files, observer, {list.tags[index].second});
    if (observer.cancelled && observer.cancelled()) throw Cancelled();
    c->model.tags.push_back(openedTag(*c->family, list, index, *c->files));
    return c;
}

OpenedTag openTag(const std::string& path, const std::string& tag, const OpenObserver& observer,
                  std::shared_ptr<FileSet> files)
{
    auto opened = openCheckpointTag(path, tag, observer, std::move(files));
    const Tag* t = &opened->model.tags.front();
    return {std::move(opened), t};
}

OpenedTag tagOf(std::shared_ptr<const OpenedCheckpoint> opened, const std::string& name)
{
    const Tag* t = &opened->chooseTag(name);
    return {std::move(opened), t};
}

OpenedTag openParsedFile(const std::string& id, std::shared_ptr<const TensorFile> parsed)
{
    auto c = std::make_shared<OpenedCheckpoint>();
    c->family = &singleFileFamily();
    c->files = std::make_shared<FileSet>();
    c->files->adopt(id, std::move(parsed));
    TagList list;
    list.root = id;
    list.tags.push_back({io::fileName(id), id});
    c->model.root = c->model.opened = id;
    c->model.family = std::string(c->family->id());
    c->model.familyName = std::string(c->family->displayName());
    c->model.singleFile = true;
    c->model.tags.push_back(openedTag(*c->family, list, 0, *c->files));
    const Tag* t = &c->model.tags.front();
    return {std::move(c), t};
}

std::string tagLocation(const std::string& path, const std::string& tag)
{
    const TagList list = familyOf(path).listTags(path);
    return list.tags[chooseByName(path, list, tag)].second;
}

} // namespace ckpt::layout
