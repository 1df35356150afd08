// A Hugging Face Trainer (or Accelerate) output folder: `checkpoint-N/` subfolders, each a tag in
// step order, and possibly the final model save_model wrote at the top ("final", the newest); or
// one `checkpoint-N` folder as its one tag. Each checkpoint's model is read by the family that
// knows it (the DeepSpeed tag folder inside, model.safetensors / pytorch_model.bin, an FSDP DCP
// folder); this family adds what the Trainer says (trainer_state.json) and what an export needs
// to load with from_pretrained (config, generation config, tokenizer files).
#include "io/error.h"
#include "io/input_file.h"
#include "io/location.h"
#include "layout/deepspeed.h"
#include "layout/families.h"

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>

namespace fs = std::filesystem;

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

bool isFolder(const fs::path& p)
{
    std::error_code ec;
    return fs::is_directory(p, ec);
}

// The content sniff: trainer_state.json as the Trainer writes it (sorted keys, indent 2) names
// global_step within its first few hundred bytes.
bool hasTrainerState(const fs::path& dir)
{
    return io::readHead((dir / "trainer_state.json").string(), 4096).find("\"global_step\"") !=
           std::string::npos;
}

// The checkpoint-N folders of a run holding a trainer_state.json, in step order.
std::vector<std::pair<int64_t, fs::path>> checkpointFolders(const fs::path& run)
{
    std::vector<std::pair<int64_t, fs::path>> out;
    std::error_code ec;
    size_t seen = 0;
    for (fs::directory_iterator it(run, ec), end; !ec && it != end && ++seen <= 100000; it.increment(ec)) {
        const auto step = checkpointStep(it->path().filename().string());
        std::error_code e2;
        if (step && it->is_directory(e2) && hasTrainerState(it->path())) out.push_back({*step, it->path()});
    }
    std::sort(out.begin(), out.end());
    return out;
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

// Each of those files, from the checkpoint folder, else from the run folder above it (a run
// saves its tokenizer once at the top when only the final model has it).
std::vector<std::pair<std::string, std::string>> filesBesideWeights(const fs::path& dir, const fs::path& run)
{
    std::vector<std::pair<std::string, std::string>> out;
    std::error_code ec;
    for (const char* name : kBesideWeights)
        for (const fs::path& from : {dir, run})
            if (!from.empty() && fs::is_regular_file(from / name, ec)) {
                out.push_back({name, (from / name).string()});
                break;
            }
    return out;
}

// The model of a checkpoint folder, by the family that reads it.
Tag openModel(const fs::path& dir, FileSet& files)
{
    const std::string path = dir.string();
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
        t.facts.insert(t.facts.begin(), {"DeepSpeed tag", sub.tags[index].first});
        return t;
    }
    const fs::path fsdp = dir / "pytorch_model_fsdp_0";
    if (isFolder(fsdp) && dcpFamily().match(fsdp.string())) {
        const TagList sub = dcpFamily().listTags(fsdp.string());
        if (!sub.tags.empty()) return dcpFamily().openTag(sub, 0, files);
    }
    if (huggingFaceFamily().match(path)) {
        TagList sub;
        sub.root = path;
        sub.tags.push_back({dir.filename().string(), path});
        return huggingFaceFamily().openTag(sub, 0, files);
    }
    throw Error("a Trainer checkpoint without model weights (no DeepSpeed tag folder, model.safetensors, "
                "pytorch_model.bin or pytorch_model_fsdp_0/)",
                path);
}

// The Trainer's own files in a checkpoint, for people: what a resume needs besides the model.
std::string trainerFiles(const fs::path& dir)
{
    std::string names;
    size_t rng = 0;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if (n.rfind("rng_state", 0) == 0 && n.ends_with(".pth")) ++rng;
    }
    for (const char* n : {"optimizer.pt", "scheduler.pt", "training_args.bin"})
        if (fs::is_regular_file(dir / n, ec)) names += (names.empty() ? "" : ", ") + std::string(n);
    if (rng) names += (names.empty() ? "" : ", ") + std::to_string(rng) + " RNG state file(s)";
    return names.empty() ? "model only (save_only_model)" : names;
}

std::string numberText(double v)
{
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

std::vector<Fact> trainerFacts(const TrainerState& s)
{
    std::vector<Fact> f;
    f.push_back({"global step", std::to_string(s.globalStep)});
    if (s.epoch) f.push_back({"epoch", numberText(*s.epoch)});
    if (!s.bestModelCheckpoint.empty()) f.push_back({"best checkpoint", s.bestCheckpointName()});
    if (s.bestMetric) f.push_back({"best metric", numberText(*s.bestMetric)});
    f.push_back({"log entries", std::to_string(s.logHistory.size())});
    return f;
}

// The model's config.json as badges (architecture, the dtype it was saved in), where the model's
// family did not read it (a DeepSpeed tag, whose config is its ds_config).
void addModelConfigBadges(Tag& t, const fs::path& dir)
{
    const fs::path config = dir / "config.json";
    if (t.badges.contains("model_type") || !fs::is_regular_file(config)) return;
    const auto j = nlohmann::json::parse(io::readSmallFile(config.string(), 16u << 20), nullptr, false);
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
void addTrainerFiles(Tag& t, const fs::path& dir, FileSet& files)
{
    std::vector<std::string> names;
    std::error_code ec;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
        const std::string n = it->path().filename().string();
        if ((n.rfind("rng_state", 0) == 0 && n.ends_with(".pth")) || n == "training_args.bin" ||
            n == "scheduler.pt" || n == "optimizer.pt")
            names.push_back(n);
    }
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
        const std::string path = (dir / n).string();
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
        f.role = n == "optimizer.pt" ? FileRole::OptimStates : FileRole::Other;
        f.size = fs::file_size(dir / n, ec);
        t.files.push_back(std::move(f));
    }
}

// What the Trainer adds to the model's tag: its state, its files, and the files an export copies.
void addTrainerView(Tag& t, const fs::path& dir, const fs::path& run)
{
    addModelConfigBadges(t, dir);
    std::vector<Fact> facts;
    if (fs::exists(dir / "trainer_state.json")) {
        t.trainerState = readTrainerState((dir / "trainer_state.json").string());
        facts = trainerFacts(*t.trainerState);
    }
    facts.push_back({"Trainer files", trainerFiles(dir)});
    t.facts.insert(t.facts.begin(), facts.begin(), facts.end());
    // The model family's own small files give way to the copies, read when an export needs them.
    t.exportCopies = filesBesideWeights(dir, run);
    std::erase_if(t.exportFiles, [&](const auto& f) {
        return std::any_of(t.exportCopies.begin(), t.exportCopies.end(),
                           [&](const auto& c) { return c.first == f.first; });
    });
}

// `run/checkpoint-2/` as `run/checkpoint-2`: the last component names the tag.
std::string withoutTrailingSlash(std::string path)
{
    while (path.size() > 1 && path.back() == '/')
        path.pop_back();
    return path;
}

// The folder as an absolute path without "." or ".." and no trailing separator: what names a
// checkpoint folder given as "." (its tag was called ".") and finds the run above it.
fs::path normalFolder(const std::string& path)
{
    fs::path p = fs::absolute(fs::path(path)).lexically_normal();
    if (!p.has_filename() && p.has_parent_path() && p != p.root_path()) p = p.parent_path();
    return p;
}

class TrainerFamily final : public Family
{
public:
    std::string_view id() const override { return "trainer"; }
    std::string_view displayName() const override { return "Hugging Face Trainer run"; }
    std::string_view lookedFor() const override
    {
        return "a Hugging Face Trainer run (checkpoint-N folders holding trainer_state.json) or one "
               "such checkpoint folder";
    }
    bool match(const std::string& path) const override
    {
        if (io::isRemotePath(path) || !isFolder(path)) return false;
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
            l.tags.push_back({normalFolder(path).filename().string(), path});
        } else {
            for (const auto& [step, dir] : checkpoints)
                l.tags.push_back({dir.filename().string(), dir.string()});
            // trainer.save_model(output_dir) after training: the newest model of the run.
            if (huggingFaceFamily().match(path)) l.tags.push_back({kFinal, path});
        }
        l.latest = l.tags.back().first;
        return l;
    }
    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, location] = list.tags.at(index);
        const fs::path dir(location);
        // The run folder above a checkpoint (its parent), or the run itself for its final model.
        const bool final = location == list.root && list.tags.size() > 1;
        const fs::path run = final ? dir : normalFolder(location).parent_path();
        Tag t = openModel(dir, files);
        t.name = name;
        t.latest = name == list.latest;
        addTrainerView(t, dir, run);
        addTrainerFiles(t, dir, files);
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
