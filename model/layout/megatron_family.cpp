// Megatron-Core's checkpoints (Megatron-LM, NeMo 2's weights/, Megatron-Bridge): a run folder
// whose latest_checkpointed_iteration.txt names an iteration ("10", or "release"), each iteration
// an iter_NNNNNNN/ folder; or one iteration folder. The `torch_dist` format (dist_checkpointing)
// is a PyTorch DCP folder (.metadata, __R_I.distcp) with metadata.json naming its backend and
// common.pt holding what every rank shares (Megatron-LM's `args`, `checkpoint_version`,
// `iteration`): its tensors are read by the DCP family, under Megatron's own keys
// (decoder.layers.* stacked along the first dimension, a fused QKV), and the family adds what
// the saved args say of the run. The legacy format (mp_rank_TT[_PPP]/model_optim_rng.pt) is read
// as the global tensors torch_dist would have saved (openLegacy). Where the args describe a Hugging
// Face class exactly, the model is that class's tensors (megatron_hf.h) and Megatron's stay as
// other tensors (--raw exports them); where none does, export asks for --raw.
#include "io/error.h"
#include "io/folder.h"
#include "io/input_file.h"
#include "layout/families.h"
#include "layout/megatron_buckets.h"
#include "layout/megatron_hf.h"
#include "layout/words.h"
#include "layout/yaml_scalars.h"
#include "torch/pickle_json.h"
#include "torch/torch_file.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

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

// A NeMo 2 checkpoint: context/ (the model's config, its tokenizer) beside weights/, a torch_dist
// save of the model under "module.".
bool isNemoCheckpoint(const io::Folder& dir)
{
    return dir.has("weights") && dir.has("context") && !shardedBackend(dir.folder("weights")).empty();
}

// A NeMo 2 run's checkpoint folders are named by their metrics and step
// ("<name>--val_loss=1.23-step=100-consumed_samples=800[-last]").
bool isNemoCheckpointName(const std::string& name)
{
    return name.find("step=") != std::string::npos;
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
        {"optimizer", QT_TRANSLATE_NOOP("ckpt::layout", "optimizer")},
        {"use_distributed_optimizer", QT_TRANSLATE_NOOP("ckpt::layout", "distributed optimizer")},
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
    m.tanhGelu = flag("openai_gelu");
    // Arguments that change what the model computes in ways no Hugging Face class does.
    const std::pair<const char*, const char*> exotic[] = {
        {"apply_layernorm_1p", "zero-centred norm weights (--apply-layernorm-1p)"},
        {"squared_relu", "squared ReLU"},
        {"apply_residual_connection_post_layernorm", "the residual taken after the norm"},
        {"rotary_interleaved", "interleaved RoPE"},
        {"qk_layernorm", "query and key norms"},
        {"use_rope_scaling", "RoPE scaling"},
        {"multi_latent_attention", "multi-latent attention"},
    };
    for (const auto& [key, what] : exotic)
        if (flag(key)) m.unmapped += (m.unmapped.empty() ? "" : ", ") + std::string(what);
    if (!text("glu_activation").empty())
        m.unmapped += (m.unmapped.empty() ? "" : ", ") + std::string("a gated ") + text("glu_activation");
    if (real("rotary_percent", 1.0) != 1.0 && m.positionEmbedding == "rope")
        m.unmapped += (m.unmapped.empty() ? "" : ", ") + std::string("partial RoPE (--rotary-percent)");
    return m;
}

// The names of the optimizer states the tensors have (exp_avg, exp_avg_sq, a master's).
std::set<std::string> stateNames(const std::vector<Parameter>& params)
{
    std::set<std::string> names;
    for (const Parameter& p : params)
        for (const OptimizerState& st : p.state)
            names.insert(st.name);
    return names;
}

// The optimizer-state fact: the states the tensors have.
void stateNamesBadge(Tag& tag)
{
    const std::set<std::string> names = stateNames(tag.params);
    if (!names.empty())
        stateBadge(tag, "optimizer_state", QT_TRANSLATE_NOOP("ckpt::layout", "optimizer state"),
                   nlohmann::ordered_json(std::vector<std::string>(names.begin(), names.end())));
}

// How the args say the run was split, as the bucket layout needs it (legacySpec: the legacy
// format's rank files name the local spec's modules, whatever transformer_impl says).
BucketRun bucketRunOf(const nlohmann::ordered_json& args, bool legacySpec)
{
    const auto integer = [&](const char* key) -> int64_t {
        return args.contains(key) && args[key].is_number_integer() ? args[key].get<int64_t>() : 0;
    };
    const auto set = [&](const char* key) {
        return args.contains(key) && !args[key].is_null() && args[key] != false;
    };
    BucketRun run;
    run.tp = int(integer("tensor_model_parallel_size"));
    run.pp = int(integer("pipeline_model_parallel_size"));
    run.layers = integer("num_layers");
    // The optimizer's data-parallel group holds the context-parallel ranks too: world / (TP x PP).
    if (const int64_t world = integer("world_size");
        world > 0 && run.tp > 0 && run.pp > 0 && world % (run.tp * run.pp) == 0)
        run.dataParallel = world / (run.tp * run.pp);
    else if (const int64_t dp = integer("data_parallel_size"); dp > 0)
        run.dataParallel = dp * std::max<int64_t>(1, integer("context_parallel_size"));
    if (run.dataParallel > (int64_t(1) << 24)) run.dataParallel = 0; // no such run: not a size to pad by
    run.layersEvenlySplit = integer("virtual_pipeline_model_parallel_size") <= 1;
    for (const char* uneven :
         {"num_layers_per_virtual_pipeline_stage", "decoder_first_pipeline_num_layers",
          "decoder_last_pipeline_num_layers", "pipeline_model_parallel_layout",
          "account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split"})
        run.layersEvenlySplit = run.layersEvenlySplit && !set(uneven);
    run.experts = integer("num_experts") > 0;
    const std::string impl = args.contains("transformer_impl") && args["transformer_impl"].is_string()
                                 ? args["transformer_impl"].get<std::string>()
                                 : "";
    run.spec = legacySpec || impl == "local"  ? BucketRun::Spec::Local
               : impl == "transformer_engine" ? BucketRun::Spec::TransformerEngine
                                              : BucketRun::Spec::Unknown;
    return run;
}

// The distributed optimizer's state saved in its bucket layout (dp_reshardable; distrib_optim.pt)
// becomes each parameter's state where the layout the args describe accounts for every bucket;
// otherwise the buckets stay listed as saved, and a warning says why.
void placeBucketState(Tag& tag, const nlohmann::ordered_json& args, bool legacySpec = false)
{
    BucketRun run = bucketRunOf(args, legacySpec);
    // A tool's config (NeMo 2, Megatron-Bridge) gives no world size: torch_dist's files do, one
    // __R_I.distcp set per rank (the DCP family's rank of each file).
    if (!run.dataParallel && run.tp > 0 && run.pp > 0) {
        std::set<int> ranks;
        for (const RankFile& f : tag.files)
            if (f.dpRank >= 0 && f.name.ends_with(".distcp")) ranks.insert(f.dpRank);
        if (const int64_t world = int64_t(ranks.size()); world > 0 && world % (run.tp * run.pp) == 0)
            run.dataParallel = world / (run.tp * run.pp);
    }
    const BucketOutcome placed = attachBucketState(tag, run);
    if (!placed.found) return;
    if (placed.unplaced.empty()) {
        stateNamesBadge(tag);
        return;
    }
    if (stateNames(tag.params).empty())
        stateBadge(tag, "optimizer_state", QT_TRANSLATE_NOOP("ckpt::layout", "optimizer state"),
                   "bucket layout");
    tag.warnings.push_back("the distributed optimizer's state is saved in its bucket layout (dp_reshardable, "
                           "distrib_optim.pt) and is listed as saved, not per parameter: " +
                           placed.unplaced);
}

// The optimizer's state of the Hugging Face tensors `hf`: each state of Megatron's tensors
// (a moment or master copy of their shape) mapped as the weights are, the same regions of the
// state's tensors. A state some tensor lacks is left on Megatron's tensors alone.
void mapOptimizerState(std::vector<Parameter>& hf, const std::vector<Parameter>& stored,
                       const MegatronShape& m)
{
    for (const std::string& name : stateNames(stored)) {
        std::vector<Parameter> as;
        for (const Parameter& p : stored)
            if (const OptimizerState* st = p.stateNamed(name); st && !st->perSlice && st->shape == p.shape) {
                Parameter x;
                x.name = p.name, x.shape = p.shape, x.dtype = st->dtype, x.slices = st->slices;
                as.push_back(std::move(x));
            }
        std::vector<Parameter> mapped;
        try {
            mapped = huggingFaceParameters(as, m);
        } catch (const Error&) {
            continue; // a tensor the mapping reads has no such state
        }
        for (size_t i = 0; i < hf.size() && i < mapped.size(); ++i)
            hf[i].state.push_back(
                OptimizerState{name, mapped[i].shape, mapped[i].dtype, std::move(mapped[i].slices)});
    }
}

// The model as Hugging Face names it, where the args describe a class exactly; Megatron's own
// tensors then stay as other tensors (listed, diffed, exported with --all).
void asHuggingFace(Tag& tag, const nlohmann::ordered_json& args)
{
    const MegatronShape m = shapeOf(args);
    if (m.groups <= 0 || m.heads % m.groups != 0 || m.vocab <= 0 || m.vocab > m.paddedVocab) {
        tag.unmappedModel = "the saved args do not give the model's heads, groups and vocabulary";
        tag.warnings.push_back(tag.unmappedModel + ": no Hugging Face class is matched");
        return;
    }
    if (huggingFaceArchitecture(m).empty()) {
        tag.unmappedModel =
            "no Hugging Face class computes this model (" +
            (m.unmapped.empty()
                 ? "normalization " + m.normalization + ", position embedding " + m.positionEmbedding +
                       (m.swiglu ? ", SwiGLU" : "") + (m.biasLinear ? ", linear biases" : "") +
                       (m.groups != m.heads ? ", grouped queries" : "")
                 : m.unmapped) +
            ")";
        tag.warnings.push_back(tag.unmappedModel + ": it is exported under Megatron's names with --raw");
        return;
    }
    std::vector<Parameter> hf = huggingFaceParameters(tag.params, m);
    mapOptimizerState(hf, tag.params, m);
    for (Parameter& p : tag.params) {
        tag.rawModel.push_back(p.name);
        tag.otherTensors.push_back(std::move(p));
    }
    tag.params = std::move(hf);
    const std::string dtype = tag.dtype == "bf16" ? "bfloat16" : tag.dtype == "fp16" ? "float16" : "float32";
    // transformers writes config.json with sorted keys
    const nlohmann::json config = nlohmann::json::parse(huggingFaceConfig(m, dtype).dump());
    tag.exportFiles.push_back({"config.json", config.dump(2, ' ', true) + "\n"});
    stateBadge(tag, "architecture", QT_TRANSLATE_NOOP("ckpt::layout", "exports as"),
               huggingFaceArchitecture(m));
}

// What the args say of the model: its facts, the optimizer's bucket-layout state placed on its
// tensors, and its Hugging Face names.
void describeModel(Tag& tag, const nlohmann::ordered_json& args, bool legacySpec = false)
{
    addArgsFacts(tag, args);
    placeBucketState(tag, args, legacySpec);
    asHuggingFace(tag, args);
}

// Megatron-Core's TransformerConfig as a tool dumped it (Megatron-Bridge's run_config.yaml under
// model.*, NeMo 2's context/model.yaml under config.*), as the Megatron-LM args the family reads.
nlohmann::ordered_json argsFromConfig(const std::map<std::string, nlohmann::json>& y, const std::string& at)
{
    const auto get = [&](const std::string& k) {
        const auto it = y.find(at + k);
        return it == y.end() ? nlohmann::json() : it->second;
    };
    nlohmann::ordered_json a;
    for (const char* k : {"num_layers",
                          "hidden_size",
                          "num_attention_heads",
                          "num_query_groups",
                          "kv_channels",
                          "ffn_hidden_size",
                          "normalization",
                          "position_embedding_type",
                          "rotary_base",
                          "rotary_percent",
                          "rotary_interleaved",
                          "add_bias_linear",
                          "add_qkv_bias",
                          "qk_layernorm",
                          "moe_router_topk",
                          "moe_ffn_hidden_size",
                          "multi_latent_attention",
                          "apply_residual_connection_post_layernorm",
                          "tensor_model_parallel_size",
                          "pipeline_model_parallel_size",
                          "expert_model_parallel_size",
                          "context_parallel_size",
                          "virtual_pipeline_model_parallel_size",
                          "pipeline_model_parallel_layout",
                          "account_for_embedding_in_pipeline_split",
                          "account_for_loss_in_pipeline_split",
                          "bf16",
                          "fp16",
                          "vocab_size",
                          "max_position_embeddings"})
        if (!get(k).is_null()) a[k] = get(k);
    if (get("layernorm_epsilon").is_number()) a["norm_epsilon"] = get("layernorm_epsilon");
    if (get("num_moe_experts").is_number_integer()) a["num_experts"] = get("num_moe_experts");
    // TransformerConfig's names for Megatron-LM's uneven pipeline stages (the bucket layout's).
    if (!get("num_layers_in_first_pipeline_stage").is_null())
        a["decoder_first_pipeline_num_layers"] = get("num_layers_in_first_pipeline_stage");
    if (!get("num_layers_in_last_pipeline_stage").is_null())
        a["decoder_last_pipeline_num_layers"] = get("num_layers_in_last_pipeline_stage");
    if (!a.contains("max_position_embeddings") && get("seq_length").is_number_integer())
        a["max_position_embeddings"] = get("seq_length");
    if (a.contains("num_query_groups") && a.contains("num_attention_heads") &&
        a["num_query_groups"] != a["num_attention_heads"])
        a["group_query_attention"] = true;
    if (get("share_embeddings_and_output_weights").is_boolean())
        a["untie_embeddings_and_output_weights"] = !get("share_embeddings_and_output_weights").get<bool>();
    if (get("layernorm_zero_centered_gamma").is_boolean())
        a["apply_layernorm_1p"] = get("layernorm_zero_centered_gamma");
    // The activation is a callable, dumped as its import path: SwiGLU is a gated SiLU.
    const nlohmann::json act = get("activation_func._target_");
    const std::string f = act.is_string() ? act.get<std::string>() : "";
    a["swiglu"] = get("gated_linear_unit") == true && f.ends_with(".silu");
    if (f.ends_with("squared_relu")) a["squared_relu"] = true;
    if (get("gated_linear_unit") == true && !f.ends_with(".silu")) a["glu_activation"] = f;
    return a;
}

// The vocabulary a Hugging Face tokenizer.json covers: its highest token id + 1, or 0.
int64_t tokenizerVocabulary(const std::string& path)
{
    try {
        const auto t = nlohmann::json::parse(io::readSmallFile(path, 64u << 20), nullptr, false);
        if (!t.is_object() || !t.contains("model") || !t["model"].is_object()) return 0;
        int64_t n = 0;
        const auto& v = t["model"].value("vocab", nlohmann::json());
        if (v.is_object())
            for (const auto& [piece, id] : v.items())
                if (id.is_number_integer()) n = std::max(n, id.get<int64_t>() + 1);
        if (v.is_array()) n = int64_t(v.size()); // Unigram: [piece, score] in id order
        if (t.contains("added_tokens") && t["added_tokens"].is_array())
            for (const auto& a : t["added_tokens"])
                if (a.is_object() && a.contains("id") && a["id"].is_number_integer())
                    n = std::max(n, a["id"].get<int64_t>() + 1);
        return n;
    } catch (const Error&) {
        return 0;
    }
}

// The padded vocabulary, which a config that pads at build time records nowhere else.
int64_t storedVocabulary(const Tag& tag)
{
    for (const Parameter& p : tag.params)
        if (p.name == "embedding.word_embeddings.weight" && !p.shape.empty()) return p.shape[0];
    return 0;
}

// NeMo 2 saves its module under "module.": Megatron's own keys without it.
void withoutModulePrefix(Tag& tag)
{
    const auto prefixed = [](const Parameter& p) { return p.name.starts_with("module."); };
    if (tag.params.empty() || !std::all_of(tag.params.begin(), tag.params.end(), prefixed)) return;
    for (auto* list : {&tag.params, &tag.otherTensors})
        for (Parameter& p : *list)
            if (prefixed(p)) p.name.erase(0, 7);
}

// The model's facts and Hugging Face names from a tool's config in place of saved args; the
// padded vocabulary from the stored embedding, the real one from the config or the tokenizer.
void addConfigModel(Tag& tag, nlohmann::ordered_json args, int64_t tokenizerVocab)
{
    if (const int64_t padded = storedVocabulary(tag)) {
        args["padded_vocab_size"] = padded;
        if (!args.contains("vocab_size") || !args["vocab_size"].is_number_integer()) {
            if (tokenizerVocab > 0 && tokenizerVocab <= padded) {
                args["vocab_size"] = tokenizerVocab;
            } else {
                args["vocab_size"] = padded;
                tag.warnings.push_back(
                    "the config names no vocabulary and no tokenizer says it: exported with "
                    "all " +
                    std::to_string(padded) + " stored rows, padding included");
            }
        }
    }
    describeModel(tag, args);
}

// How a legacy rank file's tensor makes the global one (torch_dist's key, layers stacked): the
// dimension tensor-parallel ranks split it along (-1: every rank holds all of it; a row-parallel
// layer's bias is added after its all-reduce, so each rank keeps all of it), and whether it is
// SwiGLU's fused gate and up (with --swiglu), each rank holding its share of both.
struct LegacyRule
{
    const char* suffix; // after decoder.layers.N. (or the whole key outside the layers)
    const char* key;    // torch_dist's
    int dim;
    bool gated = false;
};
constexpr LegacyRule kLayerRules[] = {
    {"self_attention.linear_qkv.weight", "decoder.layers.self_attention.linear_qkv.weight", 0},
    {"self_attention.linear_qkv.bias", "decoder.layers.self_attention.linear_qkv.bias", 0},
    {"self_attention.linear_proj.weight", "decoder.layers.self_attention.linear_proj.weight", 1},
    {"self_attention.linear_proj.bias", "decoder.layers.self_attention.linear_proj.bias", -1},
    {"input_layernorm.weight", "decoder.layers.self_attention.linear_qkv.layer_norm_weight", -1},
    {"input_layernorm.bias", "decoder.layers.self_attention.linear_qkv.layer_norm_bias", -1},
    {"pre_mlp_layernorm.weight", "decoder.layers.mlp.linear_fc1.layer_norm_weight", -1},
    {"pre_mlp_layernorm.bias", "decoder.layers.mlp.linear_fc1.layer_norm_bias", -1},
    {"mlp.linear_fc1.weight", "decoder.layers.mlp.linear_fc1.weight", 0, true},
    {"mlp.linear_fc1.bias", "decoder.layers.mlp.linear_fc1.bias", 0, true},
    {"mlp.linear_fc2.weight", "decoder.layers.mlp.linear_fc2.weight", 1},
    {"mlp.linear_fc2.bias", "decoder.layers.mlp.linear_fc2.bias", -1},
};
constexpr LegacyRule kModelRules[] = {
    {"embedding.word_embeddings.weight", "embedding.word_embeddings.weight", 0},
    {"embedding.position_embeddings.weight", "embedding.position_embeddings.weight", -1},
    {"output_layer.weight", "output_layer.weight", 0},
    {"decoder.final_layernorm.weight", "decoder.final_layernorm.weight", -1},
    {"decoder.final_layernorm.bias", "decoder.final_layernorm.bias", -1},
};

struct RankDir
{
    int tp = 0, pp = 0;
    std::string path;
};

// The rank folders of a legacy iteration, checked to be tp x pp of them.
std::vector<RankDir> legacyRanks(const io::Folder& dir, int& tpSize, int& ppSize)
{
    std::vector<RankDir> ranks;
    tpSize = ppSize = 0;
    for (const io::FolderEntry& e : dir.entries()) {
        if (!e.folder || e.name.rfind("mp_rank_", 0) != 0) continue;
        int tp = -1, pp = 0, ep = -1;
        const int n = std::sscanf(e.name.c_str(), "mp_rank_%d_%d_%d", &tp, &pp, &ep);
        if (n < 1 || tp < 0 || pp < 0) continue;
        if (n == 3)
            throw Error("expert-parallel legacy saves (mp_rank_TT_PPP_EEE) are not read yet", dir.path());
        ranks.push_back({tp, pp, dir.folder(e.name).file("model_optim_rng.pt")});
        tpSize = std::max(tpSize, tp + 1), ppSize = std::max(ppSize, pp + 1);
    }
    if (ranks.empty()) throw Error("no mp_rank_TT folders", dir.path());
    if (int(ranks.size()) != tpSize * ppSize)
        throw Error(std::to_string(ranks.size()) + " rank folders where " + std::to_string(tpSize) + " x " +
                        std::to_string(ppSize) + " tensor x pipeline ranks need one each",
                    dir.path());
    return ranks;
}

// One rank's tensor `t` as chunks of its global tensor `g` (made at first use): its share along
// the rule's dimension, at its global layer; of SwiGLU's fused linear_fc1, its share of each half.
void addRankPiece(Parameter& g, const LegacyRule& rule, const RankDir& r, const torch::Tensor& t,
                  int64_t layer, int64_t layers, int tpSize, bool swiglu)
{
    std::vector<int64_t> shape = t.shape;
    if (rule.dim >= 0) shape.at(size_t(rule.dim)) *= tpSize;
    if (layer >= 0) shape.insert(shape.begin(), layers);
    if (g.name.empty()) g.name = rule.key, g.shape = shape, g.dtype = t.dtype;
    if (g.shape != shape || g.dtype != t.dtype)
        throw Error("'" + t.path + "' has another shape or dtype than on the other ranks", r.path);
    std::vector<int64_t> at(shape.size(), 0), size = t.shape;
    if (layer >= 0) at[0] = layer, size.insert(size.begin(), 1);
    const size_t d = rule.dim < 0 ? 0 : size_t(rule.dim) + (layer >= 0 ? 1 : 0);
    std::vector<int64_t> strides(size.size(), 1);
    for (size_t k = size.size() - 1; k > 0; --k)
        strides[k - 1] = strides[k] * size[k];
    const auto piece = [&](int64_t to, int64_t rows, int64_t from) {
        RankSlice s;
        s.rank = r.tp + r.pp * tpSize;
        std::vector<int64_t> o = at, sz = size;
        o[d] += to, sz[d] = rows;
        s.length = 1;
        for (int64_t x : sz)
            s.length *= uint64_t(x);
        s.master.push_back(Source::region(r.path, t.path, t.dtype, o, sz, from * strides[d], strides));
        g.slices.push_back(std::move(s));
    };
    const int64_t own = size[d];
    if (rule.dim < 0)
        piece(0, own, 0);
    else if (!(rule.gated && swiglu))
        piece(r.tp * own, own, 0);
    else { // [gate_r; up_r]: rows r*h of gate_all and F + r*h of up_all
        const int64_t h = own / 2;
        piece(r.tp * h, h, 0);
        piece(h * tpSize + r.tp * h, h, h);
    }
}

// The distributed optimizer's state beside a legacy rank's model (distrib_optim.pt): per
// gradient buffer and dtype, flat param / exp_avg / exp_avg_sq buffers in the optimizer's own
// bucket layout, which the file does not describe per parameter. Listed as the file's tensors
// (placeBucketState makes them each parameter's state where it can).
void addDistribOptim(Tag& tag, const RankDir& r, FileSet& files)
{
    const io::Folder dir(io::parentPath(r.path));
    if (!dir.sizeOf("distrib_optim.pt")) return;
    const std::string path = dir.file("distrib_optim.pt");
    const torch::TorchFile* f = files.get(path)->torch();
    if (!f) throw Error("not a torch.save file", path);
    RankFile rf;
    rf.path = path;
    rf.name = dir.name() + "/distrib_optim.pt";
    rf.role = FileRole::OptimStates;
    rf.mpRank = r.tp;
    rf.size = f->fileSize();
    tag.files.push_back(rf);
    for (const torch::Tensor& t : f->tensors())
        if (t.storage >= 0)
            tag.otherTensors.push_back(wholeTensor(path, t.path, rf.name + ":" + t.path, t.dtype, t.shape));
}

// Megatron's legacy format (--ckpt-format torch): iter_N/mp_rank_TT[_PPP]/model_optim_rng.pt, each
// rank's part of the model under module.state_dict() names. Its tensors become the global,
// layer-stacked tensors torch_dist would have saved, each rank's part a chunk of them (TP shards
// side by side along their partition dimension, a pipeline stage's layers at their global index).
Tag openLegacy(const std::string& name, const std::string& where, FileSet& files)
{
    int tpSize = 0, ppSize = 0;
    const std::vector<RankDir> ranks = legacyRanks(io::Folder(where), tpSize, ppSize);
    Tag tag;
    tag.name = name;
    tag.dir = where;
    tag.sharding = Sharding::NdChunks;
    nlohmann::ordered_json args;
    for (const RankDir& r : ranks) {
        const torch::TorchFile* f = files.get(r.path)->torch();
        if (!f) throw Error("not a torch.save file", r.path);
        RankFile rf;
        rf.path = r.path;
        rf.name = io::fileName(io::parentPath(r.path)) + "/model_optim_rng.pt";
        rf.role = FileRole::ModelStates;
        rf.mpRank = r.tp;
        rf.size = f->fileSize();
        tag.files.push_back(rf);
        addDistribOptim(tag, r, files);
        if (&r == &ranks.front()) {
            args = torch::pickleToJson(f->value("args"));
            if (const auto it = torch::asInt(f->value("iteration"))) tag.globalSteps = *it;
        }
    }
    if (!args.is_object()) throw Error("no args saved", ranks.front().path);
    // The ranks the save had, by its args: a last rank folder that never arrived is no smaller run.
    for (const auto& [arg, have] : {std::pair<const char*, int>{"tensor_model_parallel_size", tpSize},
                                    {"pipeline_model_parallel_size", ppSize}})
        if (args.contains(arg) && args[arg].is_number_integer() && args[arg].get<int64_t>() != have)
            throw Error(std::string(arg) + " is " + args[arg].dump() + ", but " + std::to_string(have) +
                            " rank folder(s) of that kind are here",
                        where);
    const int64_t layers = args.contains("num_layers") && args["num_layers"].is_number_integer()
                               ? args["num_layers"].get<int64_t>()
                               : 0;
    if (layers <= 0 || layers % ppSize)
        throw Error("num_layers does not split over the pipeline stages", ranks.front().path);
    const bool swiglu = args.contains("swiglu") && args["swiglu"].is_boolean() && args["swiglu"].get<bool>();
    std::map<std::string, Parameter> global;
    for (const RankDir& r : ranks)
        for (const torch::Tensor& t : files.get(r.path)->torch()->tensors()) {
            if (t.storage < 0) continue;
            if (t.path.rfind("model/", 0) != 0) { // the optimizer's state (a regular one's), RNG states
                if (t.aliasOf >= 0) continue;     // listed once, under its first path
                const std::string listed =
                    io::fileName(io::parentPath(r.path)) + "/model_optim_rng.pt:" + t.path;
                tag.otherTensors.push_back(wholeTensor(r.path, t.path, listed, t.dtype, t.shape));
                continue;
            }
            const std::string key = t.path.substr(6);
            const LegacyRule* rule = nullptr;
            int64_t layer = -1;
            if (key.rfind("decoder.layers.", 0) == 0) {
                const size_t dot = key.find('.', 15);
                if (dot == std::string::npos || dot == 15 || dot > 24 ||
                    key.find_first_not_of("0123456789", 15) != dot)
                    throw Error("'" + key + "' names no layer", r.path);
                layer = int64_t(r.pp) * (layers / ppSize) + std::stoll(key.substr(15, dot - 15));
                for (const LegacyRule& x : kLayerRules)
                    if (key.compare(dot + 1, std::string::npos, x.suffix) == 0) rule = &x;
                if (layer >= layers) throw Error("'" + key + "' lies beyond num_layers", r.path);
            } else {
                for (const LegacyRule& x : kModelRules)
                    if (key == x.suffix) rule = &x;
            }
            if (!rule)
                throw Error("'" + key + "' is not a tensor this reader maps (dense GPT layers only)", r.path);
            if (rule->dim < 0 && r.tp != 0) continue; // replicated: rank 0's
            addRankPiece(global[rule->key], *rule, r, t, layer, layers, tpSize, swiglu);
        }
    for (auto& [key, g] : global)
        tag.params.push_back(std::move(g));
    stateBadge(tag, "layout", QT_TRANSLATE_NOOP("ckpt::layout", "layout"), "megatron legacy");
    describeModel(tag, args, true);
    return tag;
}

// The state name and parameter key of a dist_checkpointing optimizer tensor saved per parameter,
// "[chained_N.]optimizer.state.<state>.<parameter key>" (the regular optimizer's, and the
// distributed optimizer's fully_reshardable ones): nullopt for any other key.
std::optional<std::pair<std::string, std::string>> perParameterState(std::string key)
{
    std::replace(key.begin(), key.end(), '/', '.'); // where a planner split the key into a path
    if (key.starts_with("chained_")) {
        const size_t dot = key.find('.');
        if (dot == std::string::npos || key.find_first_not_of("0123456789", 8) != dot) return std::nullopt;
        key.erase(0, dot + 1);
    }
    constexpr std::string_view kPrefix = "optimizer.state.";
    if (!key.starts_with(kPrefix)) return std::nullopt;
    const size_t dot = key.find('.', kPrefix.size());
    if (dot == std::string::npos || dot == kPrefix.size() || dot + 1 == key.size()) return std::nullopt;
    return std::pair{key.substr(kPrefix.size(), dot - kPrefix.size()), key.substr(dot + 1)};
}

// Megatron-Core's optimizer state, where it was saved per parameter (each state tensor of its
// parameter's global shape, sharded as the parameter is), becomes that parameter's state: the
// moments, and the fp32 master copy (fp32_param; the distributed optimizer's fully_reshardable
// format calls it param). The distributed optimizer's dp_reshardable buffers
// (optimizer.distributed.*) follow its internal buckets: placeBucketState places them, once the
// args say how the run was split.
void attachOptimizerState(Tag& tag)
{
    std::vector<std::pair<std::pair<std::string, std::string>, Parameter>> saved;
    for (auto* list : {&tag.params, &tag.otherTensors})
        std::erase_if(*list, [&](Parameter& t) {
            auto state = perParameterState(t.path.empty() ? t.name : t.path);
            if (state) saved.push_back({std::move(*state), std::move(t)});
            return state.has_value();
        });
    std::map<std::string, Parameter*> byKey;
    for (Parameter& p : tag.params)
        byKey[p.name] = &p;
    for (auto& [state, t] : saved) {
        auto owner = byKey.find(state.second);
        if (owner == byKey.end() && state.second.starts_with("module.")) // NeMo 2's wrapper
            owner = byKey.find(state.second.substr(7));
        if (owner != byKey.end() && owner->second->shape == t.shape)
            owner->second->state.push_back(
                OptimizerState{state.first, t.shape, t.dtype, std::move(t.slices)});
        else
            tag.otherTensors.push_back(std::move(t));
    }
    stateNamesBadge(tag);
}

// A torch_dist folder's tensors, through the DCP family, under Megatron's own keys.
Tag openTorchDist(const std::string& name, const io::Folder& dir, FileSet& files)
{
    const std::string backend = shardedBackend(dir);
    if (backend != "torch_dist")
        throw Error("sharded backend '" + backend + "' is not read (torch_dist is)",
                    dir.file("metadata.json"));
    TagList sub;
    sub.root = dir.path();
    sub.tags.push_back({name, dir.path()});
    Tag tag = dcpFamily().openTag(sub, 0, files);
    attachOptimizerState(tag);
    stateBadge(tag, "layout", QT_TRANSLATE_NOOP("ckpt::layout", "layout"), "megatron");
    return tag;
}

// A NeMo 2 checkpoint: weights/ is the model (under "module."), Lightning's state in its
// common.pt (global_step); context/model.yaml the model's config, context/nemo_tokenizer/ the
// tokenizer whose vocabulary NeMo padded.
Tag openNemo(const std::string& name, const io::Folder& dir, FileSet& files)
{
    const io::Folder weights = dir.folder("weights"), context = dir.folder("context");
    Tag tag = openTorchDist(name, weights, files);
    tag.dir = dir.path();
    withoutModulePrefix(tag);
    stateBadge(tag, "framework", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "NeMo 2");
    if (weights.sizeOf("common.pt"))
        if (const torch::TorchFile* f = files.get(weights.file("common.pt"))->torch())
            if (const auto step = torch::asInt(f->value("global_step"))) tag.globalSteps = *step;
    if (!context.sizeOf("model.yaml")) {
        tag.warnings.push_back(
            "no context/model.yaml: the model's shape is unknown, so it has no Hugging Face "
            "names");
        placeBucketState(tag, {});
        return tag;
    }
    const auto yaml = yamlScalars(io::readSmallFile(context.file("model.yaml"), 16u << 20));
    const auto tok = yaml.find("tokenizer.pretrained_model_name");
    int64_t vocab = 0;
    if (tok != yaml.end() && tok->second.is_string() &&
        tok->second.get<std::string>().find('/') == std::string::npos &&
        tok->second.get<std::string>().find("..") == std::string::npos) {
        const io::Folder t = context.folder(tok->second.get<std::string>());
        if (t.sizeOf("tokenizer.json")) vocab = tokenizerVocabulary(t.file("tokenizer.json"));
    }
    addConfigModel(tag, argsFromConfig(yaml, "config."), vocab);
    return tag;
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
               "an "
               "iteration folder whose metadata.json names its sharded backend or holding mp_rank_TT "
               "folders, "
               "a NeMo 2 checkpoint's context/ and weights/, or a folder of those)";
    }
    std::vector<std::string> namesAsked() const override { return {kTracker, "metadata.json"}; }

    bool match(const std::string& path) const override
    {
        const io::Folder dir(path);
        if (!dir.exists()) return false;
        if (dir.sizeOf(kTracker)) {
            // verl writes the same tracker beside its global_step_N folders: Megatron's run has
            // iter_NNNNNNN (or release) folders. Over HTTP, which lists nothing, the tracker says.
            if (!dir.lists()) return true;
            for (const io::FolderEntry& e : dir.entries())
                if (e.folder && (iterationOf(e.name) || e.name == "release")) return true;
            return false;
        }
        // One iteration: torch_dist's (metadata.json) or the legacy format's mp_rank_TT folders.
        if (isIteration(dir) || isNemoCheckpoint(dir)) return true;
        // A NeMo 2 run: its first checkpoint folder says.
        if (!dir.lists()) return false;
        for (const io::FolderEntry& e : dir.entries())
            if (e.folder && isNemoCheckpointName(e.name)) return isNemoCheckpoint(dir.folder(e.name));
        return false;
    }

    TagList listTags(const std::string& path) const override
    {
        const io::Folder dir(path);
        TagList list;
        list.root = path;
        if (!dir.sizeOf(kTracker) && !isIteration(dir) && !isNemoCheckpoint(dir)) { // a NeMo 2 run
            std::vector<std::string> names;
            for (const io::FolderEntry& e : dir.entries())
                if (e.folder && isNemoCheckpointName(e.name)) names.push_back(e.name);
            std::sort(names.begin(), names.end(),
                      [](const auto& a, const auto& b) { return trainingOrder(a) < trainingOrder(b); });
            for (const std::string& n : names)
                list.tags.push_back({n, dir.folder(n).path()});
            if (names.empty()) throw Error("no NeMo 2 checkpoint folder (<name>-step=N...)", path);
            list.latest = names.back();
            return list;
        }
        if (!dir.sizeOf(kTracker)) { // one iteration folder, or one NeMo 2 checkpoint
            list.tags.push_back({dir.name(), path});
            list.latest = dir.name();
            return list;
        }
        std::string tracked = io::readSmallFile(dir.file(kTracker), 64);
        tracked.erase(
            std::remove_if(tracked.begin(), tracked.end(), [](char c) { return std::isspace(uint8_t(c)); }),
            tracked.end());
        if (tracked != "release" &&
            (tracked.empty() || tracked.size() > 12 ||
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
        if (isNemoCheckpoint(dir)) {
            Tag tag = openNemo(name, dir, files);
            tag.latest = name == list.latest;
            return tag;
        }
        const std::string backend = shardedBackend(dir);
        if (backend.empty()) {
            if (!isIteration(dir))
                throw Error("no metadata.json naming a sharded backend and no mp_rank_TT folders: not a "
                            "Megatron-Core iteration",
                            where);
            Tag tag = openLegacy(name, where, files);
            tag.latest = name == list.latest;
            return tag;
        }
        Tag tag = openTorchDist(name, dir, files);
        tag.latest = name == list.latest;
        if (const auto n = iterationOf(name)) tag.globalSteps = *n;
        bool described = false;
        if (dir.sizeOf("common.pt")) {
            const auto common = files.get(dir.file("common.pt"));
            if (const torch::TorchFile* f = common->torch()) {
                const auto args = torch::pickleToJson(f->value("args"));
                if (args.is_object()) {
                    describeModel(tag, args);
                    described = true;
                }
                if (const auto it = torch::asInt(f->value("iteration"))) tag.globalSteps = *it;
            }
        }
        // Megatron-Bridge saves no args: its run_config.yaml holds the model's config.
        if (!described && dir.sizeOf("run_config.yaml")) {
            stateBadge(tag, "framework", QT_TRANSLATE_NOOP("ckpt::layout", "framework"), "Megatron-Bridge");
            addConfigModel(
                tag,
                argsFromConfig(yamlScalars(io::readSmallFile(dir.file("run_config.yaml"), 16u << 20)),
                               "model."),
                0);
            described = true;
        }
        if (!described) {
            tag.warnings.push_back("no saved args (common.pt) and no run_config.yaml: the model's shape is "
                                   "unknown, so it has no Hugging Face names");
            placeBucketState(tag, {});
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
