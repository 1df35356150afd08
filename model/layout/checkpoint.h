// The domain model: checkpoint -> tags -> rank files and parameters with their partition maps.
// Plain values, built by a recognizer from pickles and zip directories only (no tensor bytes),
// safe to copy across threads.
#pragma once

#include "io/error.h"

#include "layout/training_log.h"
#include "torch/dtype.h"

#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ckpt::layout {

// What a file of a tag holds, as the family that read it says: what bloat and the byte summary go
// by, never the file's name. A file a family does not list, or lists as Other, is judged by its
// tensors' paths alone.
enum class FileRole {
    ModelStates, // the model's weights (DeepSpeed's *_model_states.pt, a Trainer's model files)
    OptimStates, // optimizer state (and fp32 masters): every tensor of it is optimizer bytes
    Layer,       // a pipeline layer's weights
    Expert,      // an MoE expert's weights
    ExpertOptim, // an MoE expert's optimizer state
    Rng,         // RNG states (a Trainer's rng_state*.pth): no weights, whatever they are called
    Scheduler,   // the LR scheduler's state
    RunConfig,   // the run's arguments (a Trainer's training_args.bin)
    Other,
};
const char* roleName(FileRole r);

struct RankFile
{
    std::string path; // absolute or as given
    std::string name; // file name within the tag folder
    FileRole role = FileRole::Other;
    int dpRank = -1; // rank in the data-parallel (ZeRO) group, -1 when the name has none
    int mpRank = 0;
    std::string prefix; // "bf16_" / "fp16_" on optimizer files
    uint64_t size = 0;
    // A file that is a sequence of items, each a file of its own in the FileSet (a DCP .distcp:
    // one torch.save per tensor chunk or value): each item's label and FileSet id, in file order,
    // as `ckpt inspect --entries` lists them. Empty: the file is one file.
    struct Item
    {
        std::string label, id;
    };
    std::vector<Item> items;
};

// A string that hundreds of thousands of Sources repeat (a rank file's path, a flat group's
// tensor path), held once: equal texts made anywhere share one immutable allocation (interned),
// so a ZeRO-3 tag of 64 ranks x 10,000 parameters does not hold two million copies of a few
// hundred paths. Reads as a const std::string&.
class SharedText
{
public:
    SharedText();
    SharedText(std::string_view text); // implicit, as the std::string it replaces was
    SharedText(const std::string& text) : SharedText(std::string_view(text)) {}
    SharedText(const char* text) : SharedText(std::string_view(text)) {}
    operator const std::string&() const { return *m_text; }
    const std::string& str() const { return *m_text; }
    const char* c_str() const { return m_text->c_str(); }
    bool empty() const { return m_text->empty(); }
    size_t size() const { return m_text->size(); }
    bool ends_with(std::string_view s) const { return m_text->ends_with(s); }
    friend bool operator==(const SharedText& a, const SharedText& b)
    {
        return a.m_text == b.m_text || *a.m_text == *b.m_text;
    }
    friend bool operator==(const SharedText& a, const std::string& b) { return *a.m_text == b; }
    friend bool operator==(const SharedText& a, const char* b) { return *a.m_text == b; }
    friend bool operator==(const std::string& a, const SharedText& b) { return a == *b.m_text; }
    friend bool operator<(const SharedText& a, const SharedText& b) { return *a.m_text < *b.m_text; }
    friend std::string operator+(const std::string& a, const SharedText& b) { return a + *b.m_text; }
    friend std::string operator+(const char* a, const SharedText& b) { return a + *b.m_text; }
    friend std::string operator+(const SharedText& a, const std::string& b) { return *a.m_text + b; }
    friend std::string operator+(const SharedText& a, const char* b) { return *a.m_text + b; }

private:
    std::shared_ptr<const std::string> m_text;
};

// Where one piece of a tensor lives, in the tensor at `tensorPath` inside `file` (a FileSet id:
// a path, or the id a recognizer gave an archive member or a span of a shard file).
// Flat: `count` elements from logical element `offset` of that tensor; concatenated in order,
// a parameter's flat sources give the parameter (partitions of ZeRO, whole tensors of a file).
// N-d chunk (`chunkOffsets` non-empty): a block of the parameter, at these per-dimension
// offsets and of shape `chunkShape`, filled from the stored tensor: the whole stored tensor (DCP
// shards, any sharded dimension), or, with `regionStrides`, a region of it (one layer of a
// stacked `layers.*` tensor, the q rows of a fused QKV, one expert of a grouped tensor).
struct Source
{
    SharedText file;
    SharedText tensorPath;
    uint64_t offset = 0;
    uint64_t count = 0;
    torch::DType dtype = torch::DType::Float32; // as stored: moments need not be fp32
    std::vector<int64_t> chunkOffsets;
    std::vector<int64_t> chunkShape;
    // The region: chunk element (i0, i1, ...) is the stored tensor's element regionOffset +
    // sum(ik * regionStrides[k]), counted in its logical (row-major) order, whatever its layout
    // on disk. A last stride of 1 reads rows whole; another reads each row element by element
    // (a transposed region: GPT-2's Conv1D weights are Megatron's Linear ones transposed).
    // Empty: the whole tensor, row-major.
    std::vector<int64_t> regionStrides;
    int64_t regionOffset = 0;

    // `count` elements from logical element `offset` of the tensor at `tensorPath` in `file`.
    static Source flat(SharedText file, SharedText tensorPath, uint64_t offset, uint64_t count,
                       torch::DType dtype)
    {
        Source s;
        s.file = std::move(file), s.tensorPath = std::move(tensorPath);
        s.offset = offset, s.count = count, s.dtype = dtype;
        return s;
    }
    // The whole tensor at `tensorPath`, the block of the parameter at `offsets` of shape `shape`.
    static Source chunk(SharedText file, SharedText tensorPath, torch::DType dtype,
                        std::vector<int64_t> offsets, std::vector<int64_t> shape)
    {
        Source s = flat(std::move(file), std::move(tensorPath), 0, 0, dtype);
        s.chunkOffsets = std::move(offsets), s.chunkShape = std::move(shape);
        return s;
    }
    // A region of that tensor as the block (see regionStrides).
    static Source region(SharedText file, SharedText tensorPath, torch::DType dtype,
                         std::vector<int64_t> offsets, std::vector<int64_t> shape, int64_t regionOffset,
                         std::vector<int64_t> regionStrides)
    {
        Source s = chunk(std::move(file), std::move(tensorPath), dtype, std::move(offsets), std::move(shape));
        s.regionOffset = regionOffset, s.regionStrides = std::move(regionStrides);
        return s;
    }
};

// One rank's share of a parameter.
struct RankSlice
{
    int rank = 0;
    uint64_t paramOffset = 0; // first element of the parameter this rank holds
    uint64_t length = 0;      // elements of the parameter held (padding excluded)
    uint64_t padding = 0;     // padding elements after it in this rank's partition
    // fp32 master copy: usually one source; two when a ZeRO-3 slice crosses sub-groups
    std::vector<Source> master;
};

// One tensor of a parameter's optimizer state, named as the optimizer names it ("exp_avg",
// "exp_avg_sq", SGD's and Muon's "momentum_buffer", "step"), whatever the family: the one place
// operations find it (diff's moments, the tree, Python's optimizer_state), so no operation knows
// where a family keeps it.
struct OptimizerState
{
    std::string name;
    std::vector<int64_t> shape;                 // the parameter's for a moment; [] for a step, a factor's own
    torch::DType dtype = torch::DType::Float32; // as stored
    // Its pieces (each slice's `master`), as a parameter's. `perSlice`: slices[i] holds the
    // state of the parameter's slices[i] (ZeRO's partitions), and is empty where that rank
    // saved none; otherwise the slices are the state's own (a tensor keyed by parameter name).
    std::vector<RankSlice> slices;
    bool perSlice = false;
    // A count, not values: the optimizer's step, stated so by whoever read it (torch's optimizers
    // keep it beside the moments under "step"), even where a scalar parameter's shape is its own.
    bool count = false;
    // One value per element of the parameter (a moment), as opposed to a factor or the step.
    bool elementwise(const std::vector<int64_t>& paramShape) const
    {
        return !count && (perSlice || shape == paramShape);
    }
    // Every element has its pieces (a rank holding only padding has none to hold).
    bool complete() const;
};

struct TensorParallel;

struct Parameter
{
    std::string name;
    std::vector<int64_t> shape;
    torch::DType dtype = torch::DType::Float32; // of the consolidated tensor
    enum class Kind { Trainable, Frozen, Buffer } kind = Kind::Trainable;
    std::string tiedTo; // non-empty: an alias of that parameter, no data of its own
    int group = -1;     // flat group (ZeRO-1/2) or sub-group (ZeRO-3)
    uint64_t groupOffset = 0;
    std::vector<RankSlice> slices; // in rank order; concatenated they give the tensor
    std::string unreadable;        // non-empty: shown, but its values cannot be read (why)
    // Its `/` path in the checkpoint's object tree ("state/model/fc.weight"), which --ignore
    // globs match as Composer's ignore_keys do; empty: the name is the path.
    std::string path;
    std::vector<OptimizerState> state; // its optimizer's state, in the order the optimizer keeps it
    // Where tensor-parallel ranks each hold a part of it: the other ranks' parts and how they
    // make the whole, as the family states it (null: no other rank holds any of it).
    std::shared_ptr<const TensorParallel> tensorParallel;
    uint64_t numel() const;
    const OptimizerState* stateNamed(std::string_view stateName) const;
    // Adds `pieces` of the per-slice state `name` to slice `slice` (the one about to be added
    // when it is p.slices.size()), making that state (of this parameter's shape) at first use.
    void addStatePieces(std::string_view stateName, size_t slice, std::vector<Source> pieces);
    // Gives every per-slice state one slice per parameter slice, with the parameter's ranges:
    // called once the parameter's slices are all there.
    void alignStates();
};

// What DeepSpeed's Universal files record of a merge (the keys merge_tp_slices writes beside
// 'param'), so that a conversion writes them back as ds_to_universal does.
struct UniversalMergeKeys
{
    int64_t catDim = -1;    // cat_dim; -1: not written (replicated, averaged, sub-parameters)
    int64_t subParams = 0;  // param_n_sub_params; 0: not written
    int subParamEntry = -1; // sub_param_shape: this entry of parameter_with_sub_params
    // ...with these sizes in its partition dimension where the save gave a count (empty: as saved)
    std::vector<int64_t> subParamSizes;
    bool vocab = false;                // vocab_tensor
    std::vector<std::string> patterns; // the save's patterns this parameter matched
};

// How the parts tensor-parallel ranks hold of one parameter make the whole, as the family
// states it (DeepSpeed: merge_tp_slices by the save's universal_checkpoint_info). Gather: for
// every index of the dimensions before `dim`, the whole is `blocks` one after another along
// `dim`, each `width` entries of one rank's part (viewed with `views[rank]`) from entry `start`.
// Replicated and averaged parts are each the whole, compared or averaged.
struct TensorParallel
{
    enum class Mode { Gather, Replicated, Average } mode = Mode::Gather;
    std::vector<int64_t> shape; // of the whole (a vocabulary's padding rows cut)
    size_t dim = 0;
    std::vector<std::vector<int64_t>> views; // per rank
    struct Block
    {
        size_t rank = 0;
        int64_t start = 0, width = 0;
    };
    std::vector<Block> blocks;
    std::vector<Parameter> parts; // ranks 1.. as each holds the parameter (rank 0's is the parameter)
    // Set: the parts cannot be merged, and why (naming the file), as the merge would refuse them.
    std::optional<Error> unmergeable;
    UniversalMergeKeys keys;
};

// The product of dimensions [from, to) of a shape (a tensor-parallel view's block sizes).
int64_t product(const std::vector<int64_t>& shape, size_t from, size_t to);

// One fact about a tag ("ZeRO stage" "2", "world size" "4", "model type" "llama"): each family
// states its own in its words (marked for translation), and the views list them without knowing
// the family. Facts are the one display channel: a fact `ckpt inspect --json` also keeps among a
// tag's badges (its contract, "model_type": "llama") carries that key and JSON value, from which
// the badges are written; nothing reads them back.
struct Fact
{
    Fact() = default;
    Fact(std::string l, std::string v) : label(std::move(l)), value(std::move(v)) {}
    Fact(std::string l, std::string v, std::string k, nlohmann::ordered_json j)
        : label(std::move(l)), value(std::move(v)), key(std::move(k)), json(std::move(j))
    {
    }
    std::string label, value;
    std::string key;             // the --json badge it also is; empty: a fact for people only
    nlohmann::ordered_json json; // the badge's value (key set)
};

// How a family spreads a tag's parameters over ranks (layout/sharding.h draws each).
enum class Sharding {
    WholeFiles,          // each tensor whole in one file: a file, a Hugging Face folder, Universal
    FlatPartitions,      // flat groups, each rank one contiguous share (ZeRO-1/2, BF16_Optimizer)
    ParameterPartitions, // each parameter flat over every rank (ZeRO-3)
    NdChunks,            // each rank an N-d block of a parameter (PyTorch DCP)
};

// One pipeline stage of a DeepSpeed PipelineModule's save: its model file, ranks and layers.
struct PipelineStage
{
    int stage = 0;
    std::string file;
    int firstRank = 0, ranks = 1;
    std::optional<std::pair<int, int>> layers; // first and last global layer index; none numbered
};

// A DeepSpeed MoE save's experts: the MoE layers' expert counts as saved, the expert files, and
// which experts each rank holds.
struct MoeExperts
{
    nlohmann::ordered_json numExperts;
    size_t expertFiles = 0;
    nlohmann::ordered_json byRank;
};

// What a DeepSpeed save says of a tag beyond the generic model: its optimizer, ZeRO stage and
// version, its pipeline stages and experts. Set by the families that read DeepSpeed's files
// (DeepSpeed, Universal, Composer's DeepSpeed tags); facts are written from it, and
// `ckpt inspect --json` keeps its keys for every tag (zero_stage -1, "" without it).
// A ZeRO save over several tensor-parallel ranks (Megatron-DeepSpeed's mp_rank_XX files), as the
// family read the ranks beyond the first: each parameter's parts are on the parameter
// (Parameter::tensorParallel); this is what holds for all of them.
struct TensorParallelSave
{
    int degree = 1;
    bool rulesSaved = false;           // the save holds universal_checkpoint_info
    std::vector<std::string> patterns; // every pattern of it (each must match some parameter)
    // Set: the other ranks' parts cannot be read or merged at all, and why (naming the file).
    std::optional<Error> error;
};

struct DeepSpeedTag
{
    std::string
        optimizer; // "zero", "bf16_optimizer", "fp16_unfused", "fp16_fused", "torch", "none", "universal"
    int zeroStage = -1;
    std::string version; // ds_version
    std::vector<PipelineStage> pipelineStages;
    std::optional<MoeExperts> experts;
    // A ZeRO 1-3 save with flat partitions: its tensor-parallel ranks and merge rules.
    std::optional<TensorParallelSave> tensorParallel;
    // A ZeRO 1-3 save with flat partitions the Universal conversion reads (no pipeline, no experts).
    bool zeroPartitions() const
    {
        return (optimizer == "zero" || optimizer == "bf16_optimizer") && zeroStage >= 1 && zeroStage <= 3;
    }
};

struct Tag
{
    std::string name;
    std::string dir;
    bool latest = false;
    std::optional<DeepSpeedTag> deepspeed;
    int worldSize = 0;   // ZeRO partition count
    int mpWorldSize = 1; // tensor-parallel ranks
    std::string dtype;   // "fp32", "bf16", "fp16"
    int64_t globalSteps = -1, globalSamples = -1, skippedSteps = -1;
    nlohmann::ordered_json config;      // ds_config
    nlohmann::ordered_json clientState; // keys DeepSpeed does not own, rendered
    nlohmann::ordered_json lrScheduler;
    std::vector<Fact> facts; // what the family says of the tag, for the overview and `inspect`
    Sharding sharding = Sharding::WholeFiles; // how the family spreads the parameters over ranks
    // What an export converts floating tensors to when the user does not say (DeepSpeed: fp32,
    // as zero_to_fp32 does); nullopt: as stored.
    std::optional<torch::DType> exportDtype;
    std::string notExportable; // non-empty: why this tag has no model to export (and what to do)
    // Non-empty: the tag's files could not be read, and why (naming the file); the tag then has
    // its name and folder and nothing else, and views say this instead of empty facts.
    std::string unreadable;
    // The same as the Error it was (its file and message apart): what a job on the tag throws.
    std::optional<Error> unreadableError;
    // A ZeRO 1-3 tag of a DeepSpeed folder, which `ckpt universal` / "Convert to Universal..."
    // take; set by the recognizer that knows, so callers do not test family ids.
    bool convertsToUniversal = false;
    // What the family's own in-memory loader gives for frozen parameters, where it differs from
    // the files its export writes (DeepSpeed's get_fp32_state_dict_from_zero_checkpoint keeps them
    // in their stored dtype, and at ZeRO-1, which saves no frozen_param_fragments, has none):
    // Python's state_dict follows it.
    enum class FrozenInMemory { AsExported, AsStored, Absent };
    FrozenInMemory frozenInMemory = FrozenInMemory::AsExported;
    std::vector<RankFile> files;
    std::vector<Parameter> params; // the model: what export writes (zero_to_fp32's order for ZeRO)
    // Tensors outside the model (optimizer state, RNG, ...) named by their `/` path: exported
    // only with --all, shown in the tree, compared by diff when asked.
    std::vector<Parameter> otherTensors;
    // Moments of the optimizer's state that no parameter carries: torch's own state dict keys
    // them by integer ids, which a checkpoint without the optimizer's parameter order cannot tie
    // to a name. Listed by their path ("optimizer/state/0/exp_avg"), beside the parameters' own.
    std::vector<Parameter> unownedMoments;
    // Small files an export writes beside the weights so the folder loads offline (config.json,
    // tokenizer files embedded in a Composer checkpoint): name -> content.
    std::vector<std::pair<std::string, std::string>> exportFiles;
    // Files an export copies beside the weights, read only then (a tokenizer.json may be tens of
    // MB, and opening a run reads every checkpoint): name in the output -> path to copy.
    std::vector<std::pair<std::string, std::string>> exportCopies;
    // Where `params` is another framework's names for the stored model (Megatron's tensors under
    // a Hugging Face class's), the stored tensors' names among otherTensors: `--raw` exports those.
    std::vector<std::string> rawModel;
    // Why the model has no such names (no Hugging Face class computes it): an export then writes
    // the stored names only when asked to (--raw), as nothing would load them as a model.
    std::string unmappedModel;
    // What the run logged of its training up to this tag (a Trainer's trainer_state.json), for
    // any family whose framework keeps one.
    std::optional<TrainingLog> trainingLog;
    std::vector<std::string> warnings;
};

// One state of a parameter as a parameter of its own named `name`, read as stored (its shape,
// dtype and pieces; the owner's kind and group), as diff and Python read it.
Parameter stateTensor(const Parameter& owner, const OptimizerState& state, std::string name);

// States a fact that is also a --json badge: `label` (a word marked for translation) with `value`
// as people read it (a list joined by commas, yes or no), and `key` -> `value` among the badges.
// A second statement under the same key replaces the first where it stood.
void stateBadge(Tag& tag, const char* key, const char* label, nlohmann::ordered_json value);

// The tag's DeepSpeed record, or an empty one (zero stage -1) for a tag that has none: what the
// --json contract and Python's TagInfo write for every tag.
const DeepSpeedTag& deepSpeedOrNone(const Tag& tag);

// Each parameter's element-wise optimizer state (its moments) as parameters of their own, named
// "<param>/<state>" (fc.weight/exp_avg), stored dtype, then the tag's unownedMoments: what diff
// --moments and the window's tree read. Aliases and unreadable parameters have none; a state some
// ranks lack is left out.
std::vector<Parameter> momentTensors(const Tag& tag);

// Optimizer state kept as tensors of its own, keyed by parameter name (".../state/<param>/exp_avg"
// in DCP, Composer, FSDP, a torch.save file): attached to the tag's parameter of that name as its
// state; moments keyed by id become the tag's unownedMoments. Every opened tag goes through it
// (layout::openedTag); a family that states its parameters' state itself (DeepSpeed) is left as
// it is.
void attachKeyedOptimizerState(Tag& tag);

// The tag's configuration as the training saved it (DeepSpeed's ds_config, the client state, the
// LR scheduler), as indented JSON text for people.
std::string configurationText(const Tag& tag);

struct Checkpoint
{
    std::string root;
    std::string opened;      // the path as given (a root, a tag folder, a file): what outputs stay out of
    std::string family;      // the recognizer's id: "deepspeed", "file", "hf", ...
    std::string familyName;  // ...and its display name: "DeepSpeed checkpoint"
    bool singleFile = false; // Family::singleFile()
    std::vector<Tag> tags;
    std::vector<std::string> warnings;
    std::vector<std::string> otherFiles; // TagList::otherFiles

    // The tag read when none is named: the one `latest` names, else the only one; nullptr when
    // neither (OpenedCheckpoint::chooseTag then lists the tags to choose from).
    const Tag* latest() const;
    const Tag* find(const std::string& name) const;
};

} // namespace ckpt::layout
