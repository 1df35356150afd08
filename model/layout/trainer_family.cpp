// A Hugging Face Trainer (or Accelerate) output folder: `checkpoint-N/` subfolders, each a tag in
// step order, and possibly the final model save_model wrote at the top ("final", the newest); or
// one `checkpoint-N` folder as its one tag. Each checkpoint's model is read by the family that
// knows it (the DeepSpeed tag folder inside, model.safetensors / pytorch_model.bin, an FSDP DCP
// folder); this family adds what the Trainer says (trainer_state.json) and what an export needs
// to load with from_pretrained (config, generation config, tokenizer files).
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/deepspeed.h"
#include "layout/families.h"
#include "layout/trainer_state.h"
#include "layout/words.h"

#include <algorithm>
#include <charconv>
#include <nlohmann/json.hpp>
#include <set>

namespace ckpt::layout {

namespace {

// What the Trainer names its saves: checkpoint-<global step>.
std::optional<int64_t> checkpointStep(const std::string& name)
{
    constexpr std::string_view prefix = "checkpoint-";
    if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
    int64_t step = 0;
    const char* first = name.data() + prefix.size();
    const char* last = name.data() + name.size();
    const auto [end, ec] = std::from_chars(first, last, step);
    if (ec != std::errc() || end != last || step < 0) return std::nullopt;
    return step;
}

bool isFolder(const std::string& p)
{
    return io::pathKind(p) == io::PathKind::Folder;
}

std::string withoutTrailingSlash(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

// What a folder loadable by from_pretrained holds beside the weights, as the Trainer saves them
// (the model's config and generation config, the tokenizer's or processor's files).
constexpr const char* kBesideWeights[] = {"config.json",
                                          "generation_config.json",
                                          "tokenizer.json",
                                          "tokenizer_config.json",
                                          "special_tokens_map.json",
                                          "added_tokens.json",
                                          "vocab.json",
                                          "merges.txt",
                                          "vocab.txt",
                                          "tokenizer.model",
                                          "spiece.model",
                                          "sentencepiece.bpe.model",
                                          "chat_template.jinja",
                                          "chat_template.json",
                                          "preprocessor_config.json",
                                          "processor_config.json"};

// The Trainer's own files in a checkpoint besides the model.
constexpr const char* kTrainerFiles[] = {"trainer_state.json", "optimizer.pt", "scheduler.pt",
                                         "training_args.bin", "rng_state.pth"};

bool isRngState(const std::string& n)
{
    return n.rfind("rng_state", 0) == 0 && n.ends_with(".pth");
}

// The files directly in a folder, by name: listed where the folder can be (a local one, S3, GCS,
// the Hub); over plain HTTP, which lists nothing, the names the Trainer writes (RNG states of up
// to 64 processes), asked for together.
std::set<std::string> filesIn(const std::string& dir)
{
    std::vector<std::string> names(std::begin(kBesideWeights), std::end(kBesideWeights));
    names.insert(names.end(), std::begin(kTrainerFiles), std::end(kTrainerFiles));
    for (int r = 0; r < 64; ++r)
        names.push_back("rng_state_" + std::to_string(r) + ".pth");
    std::set<std::string> out;
    for (const auto& e : io::Folder(dir).files(names))
        out.insert(e.name);
    return out;
}

// The content sniff: trainer_state.json as the Trainer writes it (sorted keys, indent 2) names
// global_step within its first few hundred bytes. A listed folder without one costs no request.
bool hasTrainerState(const std::string& dir)
{
    const io::Folder folder(dir);
    if (!folder.has("trainer_state.json")) return false;
    return io::readHead(folder.file("trainer_state.json"), 4096).find("\"global_step\"") != std::string::npos;
}

// The checkpoint-N folders of a run holding a trainer_state.json, in step order (none over plain
// HTTP, where nothing lists the run).
std::vector<std::pair<int64_t, std::string>> checkpointFolders(const std::string& run)
{
    std::vector<std::pair<int64_t, std::string>> out;
    const io::Folder folder(run);
    if (!folder.lists()) return out;
    std::vector<std::string> states;
    for (const auto& e : folder.entries())
        if (const auto step = checkpointStep(e.name); step && e.folder) {
            out.push_back({*step, folder.file(e.name)});
            states.push_back(e.name + "/trainer_state.json");
        }
    folder.probe(states); // a store's, in one wave: each is read next
    std::erase_if(out, [](const auto& c) { return !hasTrainerState(c.second); });
    std::sort(out.begin(), out.end());
    return out;
}

// Each of those files, from the checkpoint folder, else from the run folder above it (a run
// saves its tokenizer once at the top when only the final model has it).
std::vector<std::pair<std::string, std::string>>
filesBesideWeights(const std::string& dir, const std::set<std::string>& inDir, const std::string& run)
{
    std::set<std::string> inRun;
    if (!run.empty() && run != dir && isFolder(run)) inRun = filesIn(run);
    std::vector<std::pair<std::string, std::string>> out;
    for (const char* name : kBesideWeights) {
        if (inDir.count(name))
            out.push_back({name, io::childPath(dir, name)});
        else if (inRun.count(name))
            out.push_back({name, io::childPath(run, name)});
    }
    return out;
}

// The model of a checkpoint folder, by the family that reads it; `configRead`: that family read
// the model's config.json (Hugging Face's does).
Tag openModel(const std::string& path, FileSet& files, bool& configRead)
{
    configRead = false;
    if (looksLikeDeepSpeed(path)) {
        const TagList sub = deepSpeedFamily().listTags(path);
        size_t index = sub.tags.size();
        for (size_t i = 0; i < sub.tags.size(); ++i)
            if (sub.tags[i].first == sub.latest || sub.tags.size() == 1) index = i;
        if (index == sub.tags.size())
            throw Error("holds " + std::to_string(sub.tags.size()) +
                            " DeepSpeed tags and no `latest` naming one of them",
                        path);
        Tag t = deepSpeedFamily().openTag(sub, index, files);
        t.facts.insert(t.facts.begin(),
                       {QT_TRANSLATE_NOOP("ckpt::layout", "DeepSpeed tag"), sub.tags[index].first});
        return t;
    }
    const std::string fsdp = io::childFolder(path, "pytorch_model_fsdp_0");
    if (isFolder(fsdp) && dcpFamily().match(fsdp)) {
        const TagList sub = dcpFamily().listTags(fsdp);
        if (!sub.tags.empty()) return dcpFamily().openTag(sub, 0, files);
    }
    if (huggingFaceFamily().match(path)) {
        TagList sub;
        sub.root = path;
        sub.tags.push_back({io::fileName(withoutTrailingSlash(path)), path});
        configRead = true;
        return huggingFaceFamily().openTag(sub, 0, files);
    }
    throw Error("a Trainer checkpoint without model weights (no DeepSpeed tag folder, model.safetensors, "
                "pytorch_model.bin or pytorch_model_fsdp_0/)",
                path);
}

// The Trainer's own files in a checkpoint, for people: what a resume needs besides the model.
std::string trainerFiles(const std::set<std::string>& inDir)
{
    std::string names;
    const size_t rng = size_t(std::count_if(inDir.begin(), inDir.end(), isRngState));
    for (const char* n : {"optimizer.pt", "scheduler.pt", "training_args.bin"})
        if (inDir.count(n)) names += (names.empty() ? "" : ", ") + std::string(n);
    if (rng) names += (names.empty() ? "" : ", ") + std::to_string(rng) + " RNG state file(s)";
    return names.empty() ? "model only (save_only_model)" : names;
}

std::string numberText(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::vector<Fact> trainerFacts(const TrainingLog& s)
{
    std::vector<Fact> f;
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "global step"), std::to_string(s.globalStep)});
    if (s.epoch) f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "epoch"), numberText(*s.epoch)});
    if (!s.bestModelCheckpoint.empty())
        f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "best checkpoint"), s.bestCheckpointName()});
    if (s.bestMetric)
        f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "best metric"), numberText(*s.bestMetric)});
    f.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "log entries"), std::to_string(s.logHistory.size())});
    return f;
}

// The model's config.json as badges (architecture, the dtype it was saved in), where the model's
// family did not read it (a DeepSpeed tag, whose config is its ds_config).
void addModelConfigBadges(Tag& t, const std::string& dir, const std::set<std::string>& inDir)
{
    if (!inDir.count("config.json")) return;
    const auto j = nlohmann::json::parse(io::readSmallFile(io::childPath(dir, "config.json"), 16u << 20),
                                         nullptr, false);
    if (!j.is_object()) {
        t.warnings.push_back("config.json: not a valid JSON object");
        return;
    }
    // The dtype named apart from the DeepSpeed tag's own (its training precision), which it can differ from.
    addTransformersConfigBadges(j, t, "config_dtype");
}

// The Trainer's own pickles (training_args.bin, scheduler.pt, the RNG states, optimizer.pt of a
// run without DeepSpeed) as files of the tag, parsed by our pickle VM (never run): the tree
// shows each one's values as it shows a rank file's. One that cannot be read is a warning.
void addTrainerFiles(Tag& t, const std::string& dir, const std::set<std::string>& inDir, FileSet& files)
{
    std::vector<std::string> names; // sorted, as the set is
    for (const auto& n : inDir)
        if (isRngState(n) || n == "training_args.bin" || n == "scheduler.pt" || n == "optimizer.pt")
            names.push_back(n);
    for (const std::string& n : names) {
        const std::string path = io::childPath(dir, n);
        if (std::any_of(t.files.begin(), t.files.end(), [&](const RankFile& f) { return f.path == path; }))
            continue;
        try {
            files.get(path);
        } catch (const Error& e) {
            t.warnings.push_back(n + ": cannot be read: " + e.what());
            continue;
        }
        RankFile f;
        f.path = path;
        f.name = n;
        f.role = n == "optimizer.pt"        ? FileRole::OptimStates
                 : n == "scheduler.pt"      ? FileRole::Scheduler
                 : n == "training_args.bin" ? FileRole::RunConfig
                                            : FileRole::Rng;
        f.size = io::fileSize(path);
        t.files.push_back(std::move(f));
    }
}

// What the Trainer adds to the model's tag: its state, its files, and the files an export copies.
void addTrainerView(Tag& t, const std::string& dir, const std::set<std::string>& inDir,
                    const std::string& run, bool configRead)
{
    if (!configRead) addModelConfigBadges(t, dir, inDir);
    std::vector<Fact> facts;
    if (inDir.count("trainer_state.json")) {
        t.trainingLog = readTrainerState(io::childPath(dir, "trainer_state.json"));
        facts = trainerFacts(*t.trainingLog);
    }
    facts.push_back({QT_TRANSLATE_NOOP("ckpt::layout", "Trainer files"), trainerFiles(inDir)});
    t.facts.insert(t.facts.begin(), facts.begin(), facts.end());
    // The model family's own small files give way to the copies, read when an export needs them.
    t.exportCopies = filesBesideWeights(dir, inDir, run);
    std::erase_if(t.exportFiles, [&](const auto& f) {
        return std::any_of(t.exportCopies.begin(), t.exportCopies.end(),
                           [&](const auto& c) { return c.first == f.first; });
    });
}

class TrainerFamily final : public Family
{
public:
    std::string_view id() const override { return "trainer"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "Hugging Face Trainer run");
    }
    std::string_view lookedFor() const override
    {
        return "a Hugging Face Trainer run (checkpoint-N folders holding trainer_state.json) or one "
               "such checkpoint folder";
    }
    std::vector<std::string> namesAsked() const override { return {"trainer_state.json"}; }
    bool match(const std::string& path) const override
    {
        if (!isFolder(path)) return false;
        return hasTrainerState(path) || !checkpointFolders(path).empty();
    }
    TagList listTags(const std::string& given) const override
    {
        const std::string path = withoutTrailingSlash(given);
        TagList l;
        l.root = path;
        const auto checkpoints = checkpointFolders(path);
        if (checkpoints.empty()) { // one checkpoint folder
            if (!hasTrainerState(path))
                throw Error("no trainer_state.json and no checkpoint-N folders", path);
            // Over plain HTTP a folder is its URL ending in '/'.
            l.tags.push_back({io::fileName(io::normalFolder(path)), io::folderPath(given)});
        } else {
            for (const auto& [step, dir] : checkpoints)
                l.tags.push_back({io::fileName(dir), dir});
            // trainer.save_model(output_dir) after training: the newest model of the run.
            if (huggingFaceFamily().match(path)) l.tags.push_back({kFinal, path});
        }
        l.latest = l.tags.back().first;
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, location] = list.tags.at(index);
        const std::string& dir = location;
        // The run folder above a checkpoint (its parent), or the run itself for its final model.
        const bool final = location == list.root && list.tags.size() > 1;
        const std::string run = final ? dir : io::parentPath(io::normalFolder(location));
        bool configRead = false;
        Tag t = openModel(dir, files, configRead);
        t.name = name;
        t.latest = name == list.latest;
        const std::set<std::string> inDir = filesIn(dir);
        addTrainerView(t, dir, inDir, run, configRead);
        addTrainerFiles(t, dir, inDir, files);
        return t;
    }

private:
    static constexpr const char* kFinal = "final";
};

} // namespace

const Family& trainerFamily()
{
    static const TrainerFamily f;
    return f;
}

} // namespace ckpt::layout
