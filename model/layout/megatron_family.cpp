// Megatron-Core's checkpoints (Megatron-LM, NeMo 2's weights/, Megatron-Bridge): a run folder
// whose latest_checkpointed_iteration.txt names an iteration ("10", or "release"), each iteration
// an iter_NNNNNNN/ folder; or one iteration folder. The `torch_dist` format (dist_checkpointing)
// is a PyTorch DCP folder (.metadata, __R_I.distcp) with metadata.json naming its backend and
// common.pt holding what every rank shares (Megatron-LM's `args`, `checkpoint_version`,
// `iteration`): its tensors are read by the DCP family, under Megatron's own keys
// (decoder.layers.* stacked along the first dimension, a fused QKV), and the family adds what
// the saved args say of the run. The legacy format (mp_rank_TT[_PPP]/model_optim_rng.pt) is
// recognised and said to be not read yet.
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/families.h"
#include "layout/megatron_hf.h"
#include "layout/words.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

namespace ckpt::layout {

namespace {

constexpr const char* kTracker = "latest_checkpointed_iteration.txt";

// metadata.json of a dist_checkpointing save: its sharded backend ("torch_dist"), or "" when the
// folder holds none (or not one of Megatron's).
std::string shardedBackend(const io::Folder& dir)
{
    if (!dir.sizeOf("metadata.json")) return {};
    try {
        const auto j =
            nlohmann::json::parse(io::readSmallFile(dir.file("metadata.json"), 1u << 20), nullptr, false);
        return j.is_object() && j.contains("sharded_backend") && j["sharded_backend"].is_string()
                   ? j["sharded_backend"].get<std::string>()
                   : std::string();
    } catch (const Error&) {
        return {};
    }
}

// The iteration of an iter_NNNNNNN folder name.
std::optional<int64_t> iterationOf(const std::string& name)
{
    if (name.size() < 6 || name.rfind("iter_", 0) != 0) return std::nullopt;
    int64_t n = 0;
    for (size_t i = 5; i < name.size(); ++i) {
        if (name[i] < '0' || name[i] > '9' || n > (INT64_MAX - 9) / 10) return std::nullopt;
        n = n * 10 + (name[i] - '0');
    }
    return n;
}

std::string iterationFolderName(const std::string& tracked)
{
    if (tracked == "release") return "release";
    char buf[32];
    std::snprintf(buf, sizeof buf, "iter_%07lld", (long long)std::stoll(tracked));
    return buf;
}

bool isIteration(const io::Folder& dir)
{
    if (!shardedBackend(dir).empty()) return true;
    // The legacy format: mp_rank_TT[_PPP] folders, each with model_optim_rng.pt.
    if (!dir.lists()) return false;
    const std::vector<io::FolderEntry> entries = dir.entries();
    return std::any_of(entries.begin(), entries.end(),
                       [](const io::FolderEntry& e) { return e.folder && e.name.rfind("mp_rank_", 0) == 0; });
}

// What Megatron-LM's saved args say of the run, as facts (and badges under their own names).
void addArgsFacts(Tag& tag, const nlohmann::ordered_json& args)
{
    struct Arg
    {
        const char *key, *label;
    };
    static const Arg kArgs[] = {
        {"num_layers", QT_TRANSLATE_NOOP("ckpt::layout", "layers")},
        {"hidden_size", QT_TRANSLATE_NOOP("ckpt::layout", "hidden size")},
        {"num_attention_heads", QT_TRANSLATE_NOOP("ckpt::layout", "attention heads")},
        {"num_query_groups", QT_TRANSLATE_NOOP("ckpt::layout", "query groups")},
        {"ffn_hidden_size", QT_TRANSLATE_NOOP("ckpt::layout", "FFN size")},
        {"padded_vocab_size", QT_TRANSLATE_NOOP("ckpt::layout", "vocabulary (padded)")},
        {"max_position_embeddings", QT_TRANSLATE_NOOP("ckpt::layout", "max positions")},
        {"position_embedding_type", QT_TRANSLATE_NOOP("ckpt::layout", "position embedding")},
        {"normalization", QT_TRANSLATE_NOOP("ckpt::layout", "normalization")},
        {"swiglu", QT_TRANSLATE_NOOP("ckpt::layout", "SwiGLU")},
        {"add_bias_linear", QT_TRANSLATE_NOOP("ckpt::layout", "linear biases")},
        {"add_qkv_bias", QT_TRANSLATE_NOOP("ckpt::layout", "QKV bias")},
        {"untie_embeddings_and_output_weights", QT_TRANSLATE_NOOP("ckpt::layout", "untied embeddings")},
        {"num_experts", QT_TRANSLATE_NOOP("ckpt::layout", "experts")},
        {"moe_router_topk", QT_TRANSLATE_NOOP("ckpt::layout", "experts per token")},
        {"tensor_model_parallel_size", QT_TRANSLATE_NOOP("ckpt::layout", "tensor-parallel size")},
        {"pipeline_model_parallel_size", QT_TRANSLATE_NOOP("ckpt::layout", "pipeline-parallel size")},
        {"expert_model_parallel_size", QT_TRANSLATE_NOOP("ckpt::layout", "expert-parallel size")},
        {"consumed_train_samples", QT_TRANSLATE_NOOP("ckpt::layout", "consumed samples")},
    };
    const bool moe = args.contains("num_experts") && args["num_experts"].is_number_integer();
    for (const Arg& a : kArgs) {
        const std::string_view key = a.key;
        if (!args.contains(a.key) || args[a.key].is_null()) continue;
        if (!moe && (key == "moe_router_topk" || key == "expert_model_parallel_size")) continue; // defaults
        stateBadge(tag, a.key, a.label, args[a.key]);
    }
    if (args.value("bf16", false))
        tag.dtype = "bf16";
    else if (args.value("fp16", false))
        tag.dtype = "fp16";
    else if (args.contains("bf16") || args.contains("fp16"))
        tag.dtype = "fp32";
    if (args.contains("consumed_train_samples") && args["consumed_train_samples"].is_number_integer())
        tag.globalSamples = args["consumed_train_samples"].get<int64_t>();
}

MegatronShape shapeOf(const nlohmann::ordered_json& a)
{
    const auto num = [&](const char* k, int64_t fallback = 0) {
        return a.contains(k) && a[k].is_number_integer() ? a[k].get<int64_t>() : fallback;
    };
    const auto real = [&](const char* k, double fallback) {
        return a.contains(k) && a[k].is_number() ? a[k].get<double>() : fallback;
    };
    const auto flag = [&](const char* k) { return a.contains(k) && a[k].is_boolean() && a[k].get<bool>(); };
    const auto text = [&](const char* k) {
        return a.contains(k) && a[k].is_string() ? a[k].get<std::string>() : "";
    };
    MegatronShape m;
    m.layers = num("num_layers");
    m.hidden = num("hidden_size");
    m.heads = num("num_attention_heads");
    m.groups = flag("group_query_attention") ? num("num_query_groups", m.heads) : m.heads;
    m.headDim = num("kv_channels", m.heads ? m.hidden / m.heads : 0);
    m.ffn = num("ffn_hidden_size");
    m.moeFfn = num("moe_ffn_hidden_size", m.ffn);
    m.paddedVocab = num("padded_vocab_size");
    m.vocab = num("vocab_size", m.paddedVocab);
    m.maxPositions = num("max_position_embeddings");
    m.experts = num("num_experts");
    m.topk = num("moe_router_topk");
    m.normEpsilon = real("norm_epsilon", 1e-5);
    m.ropeTheta = real("rotary_base", 10000);
    m.normalization = text("normalization");
    m.positionEmbedding = text("position_embedding_type");
    m.swiglu = flag("swiglu");
    m.biasLinear = flag("add_bias_linear");
    m.qkvBias = flag("add_qkv_bias");
    m.untied = flag("untie_embeddings_and_output_weights");
    return m;
}

// The model as Hugging Face names it, where the args describe a class exactly; Megatron's own
// tensors then stay as other tensors (listed, diffed, exported with --all).
void asHuggingFace(Tag& tag, const nlohmann::ordered_json& args)
{
    const MegatronShape m = shapeOf(args);
    if (m.groups <= 0 || m.heads % m.groups != 0 || m.vocab <= 0 || m.vocab > m.paddedVocab) {
        tag.warnings.push_back(
            "the saved args do not give the model's heads, groups and vocabulary: exported "
            "under Megatron's names");
        return;
    }
    if (huggingFaceArchitecture(m).empty()) {
        tag.warnings.push_back("no Hugging Face architecture matches this model (normalization " +
                               m.normalization + ", position embedding " + m.positionEmbedding +
                               (m.swiglu ? ", SwiGLU" : "") + (m.biasLinear ? ", linear biases" : "") +
                               "): exported under Megatron's names");
        return;
    }
    std::vector<Parameter> hf = huggingFaceParameters(tag.params, m);
    for (Parameter& p : tag.params)
        tag.otherTensors.push_back(std::move(p));
    tag.params = std::move(hf);
    const std::string dtype = tag.dtype == "bf16" ? "bfloat16" : tag.dtype == "fp16" ? "float16" : "float32";
    // transformers writes config.json with sorted keys
    const nlohmann::json config = nlohmann::json::parse(huggingFaceConfig(m, dtype).dump());
    tag.exportFiles.push_back({"config.json", config.dump(2, ' ', true) + "\n"});
    stateBadge(tag, "architecture", QT_TRANSLATE_NOOP("ckpt::layout", "exports as"),
               huggingFaceArchitecture(m));
}

class MegatronFamily final : public Family
{
public:
    std::string_view id() const override { return "megatron"; }
    std::string_view displayName() const override
    {
        return QT_TRANSLATE_NOOP("ckpt::layout", "Megatron-Core checkpoint");
    }
    std::string_view lookedFor() const override
    {
        return "a Megatron-Core checkpoint (latest_checkpointed_iteration.txt beside iter_NNNNNNN folders, "
               "or "
               "an iteration folder whose metadata.json names its sharded backend)";
    }
    std::vector<std::string> namesAsked() const override { return {kTracker, "metadata.json"}; }

    bool match(const std::string& path) const override
    {
        const io::Folder dir(path);
        if (!dir.exists()) return false;
        if (dir.sizeOf(kTracker)) return true;
        return !shardedBackend(dir).empty();
    }

    TagList listTags(const std::string& path) const override
    {
        const io::Folder dir(path);
        TagList list;
        list.root = path;
        if (!dir.sizeOf(kTracker)) { // one iteration folder
            list.tags.push_back({dir.name(), path});
            list.latest = dir.name();
            return list;
        }
        std::string tracked = io::readSmallFile(dir.file(kTracker), 64);
        tracked.erase(
            std::remove_if(tracked.begin(), tracked.end(), [](char c) { return std::isspace(uint8_t(c)); }),
            tracked.end());
        if (tracked != "release" &&
            (tracked.empty() ||
             !std::all_of(tracked.begin(), tracked.end(), [](char c) { return c >= '0' && c <= '9'; })))
            throw Error("holds '" + tracked + "': neither an iteration number nor 'release'",
                        dir.file(kTracker));
        list.latest = iterationFolderName(tracked);
        std::vector<std::pair<int64_t, std::string>> found;
        if (dir.lists())
            for (const io::FolderEntry& e : dir.entries()) {
                if (!e.folder) continue;
                if (const auto n = iterationOf(e.name))
                    found.push_back({*n, e.name});
                else if (e.name == "release")
                    found.push_back({-1, e.name});
            }
        if (found.empty() && !dir.lists()) found.push_back({0, list.latest}); // over HTTP: the tracked one
        std::sort(found.begin(), found.end());
        for (const auto& [n, name] : found)
            list.tags.push_back({name, dir.folder(name).path()});
        if (list.tags.empty()) throw Error("no iter_NNNNNNN folder beside " + std::string(kTracker), path);
        return list;
    }

    Tag openTag(const TagList& list, size_t index, FileSet& files) const override
    {
        const auto& [name, where] = list.tags.at(index);
        const io::Folder dir(where);
        const std::string backend = shardedBackend(dir);
        if (backend.empty()) {
            if (isIteration(dir))
                throw Error(
                    "Megatron's legacy checkpoint format (mp_rank_TT[_PPP]/model_optim_rng.pt) is not "
                    "read yet",
                    where);
            throw Error("no metadata.json naming a sharded backend: not a Megatron-Core iteration", where);
        }
        if (backend != "torch_dist")
            throw Error("sharded backend '" + backend + "' is not read (torch_dist is)",
                        dir.file("metadata.json"));
        TagList sub;
        sub.root = where;
        sub.tags.push_back({name, where});
        Tag tag = dcpFamily().openTag(sub, 0, files);
        tag.latest = name == list.latest;
        stateBadge(tag, "layout", QT_TRANSLATE_NOOP("ckpt::layout", "layout"), "megatron");
        if (const auto n = iterationOf(name)) tag.globalSteps = *n;
        if (dir.sizeOf("common.pt")) {
            const auto common = files.get(dir.file("common.pt"));
            if (const torch::TorchFile* f = common->torch()) {
                const auto args = torch::pickleToJson(f->value("args"));
                if (args.is_object()) {
                    addArgsFacts(tag, args);
                    asHuggingFace(tag, args);
                }
                if (const auto it = torch::asInt(f->value("iteration"))) tag.globalSteps = *it;
            }
        }
        return tag;
    }
};

} // namespace

const Family& megatronFamily()
{
    static const MegatronFamily f;
    return f;
}

} // namespace ckpt::layout
