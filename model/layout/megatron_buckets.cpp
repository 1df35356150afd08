// The distributed optimizer's state in its bucket layout, as each parameter's state.
//
// Megatron-Core's DDP puts each model-parallel rank's trainable parameters into one gradient
// buffer per dtype, in the reverse of model.parameters() (roughly the order backprop reaches
// them), each parameter's start aligned to 64 elements, cut into buckets (a bucket's unpadded end
// is where its last parameter ends; a parameter shared between the first and last pipeline stage
// gets a bucket of its own). The distributed optimizer keeps its fp32 master ("param"), exp_avg
// and exp_avg_sq in that layout, and dp_reshardable saves them so: one 1-D tensor per
// (dp_group_idx = tp + TP * pp, buffer, bucket, state), numel_unpadded long, each data-parallel
// rank writing its share of the bucket as one chunk per parameter piece and per gap. The legacy
// distrib_optim.pt holds a buffer's buckets concatenated without their end padding.
//
// Nothing in the checkpoint names which parameter lies where, so this file rebuilds the layout
// DDP built (param_and_grad_buffer.py) from the model's own sharded tensors and the args, and
// accepts it only when it accounts for every saved bucket's length and every chunk boundary;
// otherwise the buckets stay listed as saved, with the reason.
#include "layout/megatron_buckets.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <tuple>

namespace ckpt::layout {

namespace {

// One saved bucket-space tensor, as its key names it.
struct BucketKey
{
    int group = 0;  // dp_group_idx: the model-parallel rank, tp + TP * pp
    int buffer = 0; // gbuf_idx
    torch::DType paramDtype = torch::DType::Float32;
    int bucket = -1; // -1: the buffer's buckets concatenated, unpadded (distrib_optim.pt)
    std::string state;
};

// "(torch.bfloat16, torch.float32)" (Python's str of (param_dtype, grad_dtype)): the first.
std::optional<torch::DType> parameterDtype(std::string_view pair)
{
    constexpr std::string_view kOpen = "(torch.";
    const size_t comma = pair.find(',');
    if (!pair.starts_with(kOpen) || !pair.ends_with(')') || comma == std::string_view::npos)
        return std::nullopt;
    return torch::fromName(pair.substr(kOpen.size(), comma - kOpen.size()));
}

// Reads `word` then a number from the front of `s`.
bool take(std::string_view& s, std::string_view word, int& n)
{
    if (!s.starts_with(word)) return false;
    s.remove_prefix(word.size());
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (ec != std::errc() || end == s.data() || n < 0) return false;
    s.remove_prefix(size_t(end - s.data()));
    return true;
}

// A state's name: what is left, one word.
bool stateName(std::string_view s, BucketKey& k)
{
    if (s.empty() || s.find_first_of("./") != std::string_view::npos) return false;
    k.state = std::string(s);
    return true;
}

// torch_dist: "[chained_0.]optimizer.distributed.dp_group_idx_G.gbuf_idx_B.dtype_(P,
// G).bucket_idx_K.<state>".
std::optional<BucketKey> distKey(std::string key)
{
    std::replace(key.begin(), key.end(), '/', '.'); // where a planner split the key into a path
    std::string_view s = key;
    if (s.starts_with("chained_0.")) s.remove_prefix(10); // one optimizer, chained
    BucketKey k;
    if (!take(s, "optimizer.distributed.dp_group_idx_", k.group) || !take(s, ".gbuf_idx_", k.buffer) ||
        !s.starts_with(".dtype_"))
        return std::nullopt;
    const size_t close = s.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    const auto dtype = parameterDtype(s.substr(7, close - 6));
    s.remove_prefix(close + 1);
    if (!dtype || !take(s, ".bucket_idx_", k.bucket) || !s.starts_with('.') || !stateName(s.substr(1), k))
        return std::nullopt;
    k.paramDtype = *dtype;
    return k;
}

// The legacy format's, as the family lists them: "mp_rank_TT[_PPP]/distrib_optim.pt:B/(P, G)/<state>"
// (buckets coalesced; "B/(P, G)/K/<state>" where they are not).
std::optional<BucketKey> legacyKey(const std::string& name, int tpSize)
{
    int tp = -1, pp = 0;
    if (std::sscanf(name.c_str(), "mp_rank_%d_%d", &tp, &pp) < 1 || tp < 0 || pp < 0) return std::nullopt;
    const size_t colon = name.find("/distrib_optim.pt:");
    if (colon == std::string::npos) return std::nullopt;
    std::string_view s = std::string_view(name).substr(colon + 18);
    BucketKey k;
    k.group = tp + tpSize * pp;
    if (!take(s, "", k.buffer) || !s.starts_with("/(")) return std::nullopt;
    const size_t close = s.find(')');
    if (close == std::string_view::npos) return std::nullopt;
    const auto dtype = parameterDtype(s.substr(1, close));
    s.remove_prefix(close + 1);
    if (!dtype || !s.starts_with('/')) return std::nullopt;
    s.remove_prefix(1);
    if (const size_t slash = s.find('/'); slash != std::string_view::npos)
        if (!take(s, "", k.bucket) || !s.starts_with('/')) return std::nullopt;
    if (s.starts_with('/')) s.remove_prefix(1);
    if (!stateName(s, k)) return std::nullopt;
    k.paramDtype = *dtype;
    return k;
}

// A block of a tensor, without its layer axis.
struct Block
{
    std::vector<int64_t> offset, shape;
    bool operator==(const Block&) const = default;
};

// What one model-parallel rank holds of a stored tensor (at one layer): its parts of the global
// tensor, one after another along `dim`, make the rank's local tensor.
struct Local
{
    Parameter* param = nullptr;
    int64_t layer = -1; // on the stacked layer axis; -1 outside the layers
    bool copy = false;  // another rank's state of it is the one attached (a replicated norm, the tied output)
    size_t dim = 0;
    std::vector<Block> parts;
    std::vector<int64_t> shape;
    int64_t numel = 1;
};

// Rank `tp`'s part of `p` (at `layer`), from the blocks the save states for it: the blocks lie
// along one dimension, and rank tp holds the tp-th of every `tpSize` of them (one; two for
// SwiGLU's fused linear_fc1, its share of the gate half and of the up half). One block: every
// rank holds all of it (rank 0's state is the one attached).
std::optional<Local> localPart(Parameter& p, int64_t layer, int tp, int tpSize)
{
    const size_t lead = layer >= 0 ? 1 : 0;
    std::vector<Block> blocks;
    for (const RankSlice& s : p.slices)
        for (const Source& src : s.master) {
            Block b{src.chunkOffsets, src.chunkShape};
            if (b.offset.empty()) b.offset.assign(p.shape.size(), 0), b.shape = p.shape;
            if (b.offset.size() != p.shape.size() || b.shape.size() != p.shape.size() ||
                p.shape.size() < lead)
                return std::nullopt;
            if (lead) {
                if (layer < b.offset[0] || layer >= b.offset[0] + b.shape[0]) continue;
                b.offset.erase(b.offset.begin()), b.shape.erase(b.shape.begin());
            }
            if (std::find(blocks.begin(), blocks.end(), b) == blocks.end()) blocks.push_back(std::move(b));
        }
    if (blocks.empty()) return std::nullopt;
    Local l;
    l.param = &p, l.layer = layer;
    if (blocks.size() == 1) {
        l.parts = blocks, l.copy = tp != 0;
    } else {
        std::optional<size_t> along;
        for (const Block& b : blocks)
            for (size_t k = 0; k < b.offset.size(); ++k)
                if (b.offset[k] != blocks[0].offset[k]) {
                    if (along && *along != k) return std::nullopt;
                    along = k;
                }
        if (!along || blocks.size() % size_t(tpSize)) return std::nullopt;
        l.dim = *along;
        std::sort(blocks.begin(), blocks.end(),
                  [&](const Block& a, const Block& b) { return a.offset[l.dim] < b.offset[l.dim]; });
        for (size_t j = 0; j < blocks.size() / size_t(tpSize); ++j)
            l.parts.push_back(blocks[j * size_t(tpSize) + size_t(tp)]);
    }
    l.shape = l.parts[0].shape;
    for (size_t j = 1; j < l.parts.size(); ++j) {
        for (size_t k = 0; k < l.shape.size(); ++k)
            if (k != l.dim && l.parts[j].shape[k] != l.shape[k]) return std::nullopt;
        l.shape[l.dim] += l.parts[j].shape[l.dim];
    }
    l.numel = product(l.shape, 0, l.shape.size());
    return l;
}

// The order model.parameters() gives a layer's tensors in, by their dist keys, as Transformer
// Engine's spec builds the layer: linear_proj (made by Attention) before linear_qkv (made by
// SelfAttention after it), each norm fused into the linear module it feeds.
constexpr const char* kLayerOrder[] = {
    "self_attention.linear_proj.weight",
    "self_attention.linear_proj.bias",
    "self_attention.linear_qkv.layer_norm_weight",
    "self_attention.linear_qkv.layer_norm_bias",
    "self_attention.linear_qkv.weight",
    "self_attention.linear_qkv.bias",
    "self_attention.q_layernorm.weight",
    "self_attention.q_layernorm.bias",
    "self_attention.k_layernorm.weight",
    "self_attention.k_layernorm.bias",
    "mlp.linear_fc1.layer_norm_weight",
    "mlp.linear_fc1.layer_norm_bias",
    "mlp.linear_fc1.weight",
    "mlp.linear_fc1.bias",
    "mlp.linear_fc2.weight",
    "mlp.linear_fc2.bias",
};
// The local spec's input_layernorm is a module of its own, made first (its dist keys are
// linear_qkv's layer_norm_*): those two come before linear_proj. Its pre_mlp_layernorm already
// comes right before linear_fc1.
std::vector<const char*> layerOrder(BucketRun::Spec spec)
{
    std::vector<const char*> order(std::begin(kLayerOrder), std::end(kLayerOrder));
    if (spec == BucketRun::Spec::Local) std::rotate(order.begin(), order.begin() + 2, order.begin() + 4);
    return order;
}
constexpr const char* kFirstStage[] = {"embedding.word_embeddings.weight",
                                       "embedding.position_embeddings.weight"};
constexpr const char* kLastStage[] = {"decoder.final_layernorm.weight", "decoder.final_layernorm.bias",
                                      "output_layer.weight"};
constexpr std::string_view kLayers = "decoder.layers.";

// A layout that does not hold, and why.
struct Refused
{
    std::string why;
};

// Model-parallel rank (tp, pp)'s parameters in model.parameters() order, as local parts.
std::vector<Local> stageParameters(std::map<std::string, Parameter*>& byKey, int tp, int pp,
                                   const BucketRun& run, std::span<const char* const> layerOrder)
{
    std::vector<Local> out;
    const auto add = [&](const std::string& key, int64_t layer) {
        const auto it = byKey.find(key);
        if (it == byKey.end()) return;
        auto l = localPart(*it->second, layer, tp, run.tp);
        if (!l)
            throw Refused{"'" + key +
                          "' is not split over the tensor-parallel ranks as one dimension's blocks"};
        out.push_back(std::move(*l));
    };
    if (pp == 0)
        for (const char* k : kFirstStage)
            add(k, -1);
    const int64_t per = run.layers / run.pp;
    const bool stacked =
        std::any_of(byKey.begin(), byKey.end(), [](const auto& kv) { return kv.first.starts_with(kLayers); });
    for (int64_t layer = pp * per; stacked && layer < (pp + 1) * per; ++layer)
        for (const char* k : layerOrder)
            add(std::string(kLayers) + k, layer);
    if (pp == run.pp - 1) {
        for (const char* k : kLastStage)
            add(k, -1);
        // Tied embeddings over several stages: the last stage's output weight is the embedding's
        // copy (saved once, by the first stage), in a bucket of its own.
        if (run.pp > 1 && !byKey.count("output_layer.weight") && byKey.count(kFirstStage[0])) {
            add(kFirstStage[0], -1);
            out.back().copy = true;
        }
    }
    return out;
}

// One run of a saved tensor's elements: [begin, end) of the (1-D) tensor the pieces make are
// stored elements from `at` of `src`'s tensor.
struct StoredRun
{
    int64_t begin = 0, end = 0, at = 0;
    const Source* src = nullptr;
    int rank = 0;
};

std::vector<StoredRun> storedRuns(const Parameter& t)
{
    std::vector<StoredRun> runs;
    for (const RankSlice& s : t.slices) {
        int64_t next = int64_t(s.paramOffset);
        for (const Source& src : s.master) {
            if (!src.regionStrides.empty()) throw Refused{"'" + t.name + "' is stored as a region"};
            if (!src.chunkOffsets.empty()) {
                if (src.chunkOffsets.size() != 1) throw Refused{"'" + t.name + "' is not one-dimensional"};
                runs.push_back(
                    {src.chunkOffsets[0], src.chunkOffsets[0] + src.chunkShape[0], 0, &src, s.rank});
            } else {
                runs.push_back({next, next + int64_t(src.count), int64_t(src.offset), &src, s.rank});
                next += int64_t(src.count);
            }
        }
    }
    std::sort(runs.begin(), runs.end(),
              [](const StoredRun& a, const StoredRun& b) { return a.begin < b.begin; });
    return runs;
}

// A parameter's place in one bucket.
struct Placed
{
    const Local* local = nullptr;
    int bucket = 0;
    int64_t start = 0;
};

int64_t roundUp(int64_t n, int64_t to)
{
    return (n + to - 1) / to * to;
}

// DDP's walk over a buffer's parameters (param_and_grad_buffer.py): each start aligned to 64
// elements; a bucket ends where the saved one does (at its last parameter's end, or at the
// aligned start of a parameter that needs a bucket of its own), the next parameter starting the
// next bucket. `lengths`: each saved bucket's numel_unpadded, or the one length of a buffer's
// buckets concatenated without their end padding (distrib_optim.pt), which this walk accounts for
// only where no bucket ends unaligned: one bucket, as without --overlap-grad-reduce.
std::vector<Placed> placeBuffer(const std::vector<const Local*>& order, const std::vector<int64_t>& lengths,
                                const std::string& where)
{
    std::vector<Placed> placed;
    size_t k = 0;
    int64_t at = 0;
    bool any = false;
    for (const Local* l : order) {
        int64_t start = roundUp(at, 64);
        if (any && (at == lengths[k] || start == lengths[k])) {
            if (++k == lengths.size()) throw Refused{where + ": its buckets end before its last parameter"};
            at = start = 0, any = false;
        }
        if (start + l->numel > lengths[k])
            throw Refused{where + ": a parameter crosses the end of bucket " + std::to_string(k)};
        placed.push_back({l, int(k), start});
        at = start + l->numel, any = true;
    }
    if (k + 1 != lengths.size() || at != lengths[k])
        throw Refused{where + ": its parameters fill " + std::to_string(at) + " of bucket " +
                      std::to_string(k) + "'s " + std::to_string(lengths[k]) + " elements"};
    return placed;
}

// Every boundary between the saved chunks of a bucket is a parameter's start or end, or where the
// bucket (padded as DDP pads it for this data-parallel size) is split over the data-parallel ranks.
void checkChunks(const std::vector<StoredRun>& runs, const std::vector<Placed>& placed, int bucket,
                 int64_t length, int64_t dataParallel, const std::string& where)
{
    std::set<int64_t> ends;
    for (const Placed& p : placed)
        if (p.bucket == bucket) ends.insert(p.start), ends.insert(p.start + p.local->numel);
    std::vector<int64_t> cuts;
    for (const StoredRun& r : runs)
        for (int64_t x : {r.begin, r.end})
            if (x > 0 && x < length && !ends.count(x)) cuts.push_back(x);
    if (cuts.empty()) return;
    if (dataParallel > 1)
        for (int64_t divisor :
             {std::lcm(dataParallel, int64_t(128)), std::lcm(dataParallel, int64_t(128) << 9)}) {
            const int64_t share = roundUp(length, divisor) / dataParallel;
            if (std::all_of(cuts.begin(), cuts.end(), [&](int64_t x) { return x % share == 0; })) return;
        }
    throw Refused{where + ": a saved chunk begins at element " + std::to_string(cuts.front()) +
                  ", inside a parameter and at no data-parallel split"};
}

// The boxes (offset, size, in `shape`) that make its row-major elements [from, to), in order.
struct Box
{
    std::vector<int64_t> offset, size;
};
void boxesOf(const std::vector<int64_t>& shape, std::vector<int64_t> at, int64_t from, int64_t to,
             std::vector<Box>& out)
{
    const size_t k = at.size();
    if (from >= to) return;
    const auto box = [&](std::vector<int64_t> offset, int64_t rows) {
        std::vector<int64_t> size(k, 1);
        size.push_back(rows);
        for (size_t d = offset.size(); d < shape.size(); ++d)
            offset.push_back(0), size.push_back(shape[d]);
        out.push_back({std::move(offset), std::move(size)});
    };
    if (k == shape.size()) { // a scalar
        out.push_back({at, {}});
        return;
    }
    const int64_t inner = product(shape, k + 1, shape.size());
    int64_t first = from / inner;
    const int64_t last = to / inner, head = from % inner, tail = to % inner;
    const auto within = [&](int64_t row, int64_t a, int64_t b) {
        std::vector<int64_t> x = at;
        x.push_back(row);
        boxesOf(shape, std::move(x), a, b, out);
    };
    if (first == last) return within(first, head, tail);
    if (head) within(first++, head, inner);
    if (last > first) {
        std::vector<int64_t> x = at;
        x.push_back(first);
        box(std::move(x), last - first);
    }
    if (tail) within(last, 0, tail);
}

// The pieces of the state (one saved bucket tensor) of a placed parameter, as regions of the
// tensor's stored runs placed in the parameter's global tensor.
void addPieces(std::vector<RankSlice>& out, const Placed& p, const std::vector<StoredRun>& runs)
{
    const Local& l = *p.local;
    const std::vector<int64_t>& global = l.param->shape;
    const size_t lead = l.layer >= 0 ? 1 : 0;
    std::vector<int64_t> localStrides(l.shape.size(), 1);
    for (size_t k = l.shape.size(); k-- > 1;)
        localStrides[k - 1] = localStrides[k] * l.shape[k];
    for (const StoredRun& r : runs) {
        const int64_t from = std::max(r.begin, p.start), to = std::min(r.end, p.start + l.numel);
        if (from >= to) continue;
        std::vector<Box> boxes;
        boxesOf(l.shape, {}, from - p.start, to - p.start, boxes);
        for (const Box& b : boxes) {
            int64_t partStart = 0;
            for (const Block& part : l.parts) {
                const int64_t partRows = l.shape.empty() ? 1 : part.shape[l.dim];
                // The box's rows along dim that lie in this part.
                int64_t lo = 0, hi = 1;
                if (!l.shape.empty())
                    lo = std::max(b.offset[l.dim], partStart),
                    hi = std::min(b.offset[l.dim] + b.size[l.dim], partStart + partRows);
                if (lo < hi) {
                    std::vector<int64_t> at, size, strides;
                    int64_t element = r.at + (p.start - r.begin);
                    if (lead) at.push_back(l.layer), size.push_back(1), strides.push_back(l.numel);
                    for (size_t k = 0; k < l.shape.size(); ++k) {
                        const int64_t localAt = k == l.dim ? lo : b.offset[k];
                        at.push_back(part.offset[k] + (k == l.dim ? lo - partStart : b.offset[k]));
                        size.push_back(k == l.dim ? hi - lo : b.size[k]);
                        strides.push_back(localStrides[k]);
                        element += localAt * localStrides[k];
                    }
                    RankSlice piece;
                    piece.rank = r.rank;
                    piece.length = uint64_t(product(size, 0, size.size()));
                    for (size_t i = 0, stride = 1; i < at.size(); ++i) {
                        const size_t d = at.size() - 1 - i;
                        piece.paramOffset += uint64_t(at[d]) * stride;
                        stride *= size_t(global[d]);
                    }
                    piece.master.push_back(Source::region(r.src->file, r.src->tensorPath, r.src->dtype, at,
                                                          size, element, strides));
                    out.push_back(std::move(piece));
                }
                partStart += partRows;
            }
        }
    }
}

// A saved bucket tensor, by what its key says.
struct Saved
{
    BucketKey key;
    size_t index = 0; // in tag.otherTensors
};

// The state of every parameter for one layer order, and where each parameter was placed (group,
// buffer, bucket, name, layer, start): throws Refused where the layout fails.
using Where = std::tuple<int, int, int, std::string, int64_t, int64_t>;
struct Rebuilt
{
    std::map<Parameter*, std::map<std::string, std::vector<RankSlice>>> state;
    std::vector<Where> places;
};
Rebuilt rebuild(Tag& tag, const BucketRun& run, const std::vector<Saved>& saved,
                std::span<const char* const> layerOrder)
{
    std::map<std::string, Parameter*> byKey;
    for (Parameter& p : tag.params) {
        byKey[p.name] = &p;
        if (p.name.starts_with(kLayers) && (p.shape.empty() || p.shape[0] != run.layers))
            throw Refused{"'" + p.name + "' stacks " + (p.shape.empty() ? "no" : std::to_string(p.shape[0])) +
                          " layers where the args say " + std::to_string(run.layers)};
    }
    // group -> buffer -> bucket -> state -> tensor
    std::map<int, std::map<int, std::map<int, std::map<std::string, const Parameter*>>>> tensors;
    std::map<std::pair<int, int>, torch::DType> dtypes;
    for (const Saved& s : saved) {
        tensors[s.key.group][s.key.buffer][s.key.bucket][s.key.state] = &tag.otherTensors[s.index];
        dtypes[{s.key.group, s.key.buffer}] = s.key.paramDtype;
    }
    Rebuilt out;
    auto& state = out.state;
    std::set<const Parameter*> placedAnywhere;
    std::vector<std::vector<Local>> stages; // kept: the placements point into them
    for (const auto& [group, buffers] : tensors) {
        const int tp = group % run.tp, pp = group / run.tp;
        if (pp >= run.pp) throw Refused{"dp_group_idx_" + std::to_string(group) + " is beyond TP x PP"};
        stages.push_back(stageParameters(byKey, tp, pp, run, layerOrder));
        const std::vector<Local>& locals = stages.back();
        std::set<const Local*> unplaced;
        for (const Local& l : locals)
            unplaced.insert(&l);
        for (const auto& [buffer, buckets] : buffers) {
            const std::string where =
                "dp_group_idx_" + std::to_string(group) + " gbuf_idx_" + std::to_string(buffer);
            std::vector<const Local*> order;
            for (auto it = locals.rbegin(); it != locals.rend(); ++it)
                if (it->param->dtype == dtypes.at({group, buffer}))
                    order.push_back(&*it), unplaced.erase(&*it);
            std::vector<int64_t> lengths;
            std::set<std::string> states;
            const int firstBucket = buckets.begin()->first; // -1: one, coalesced
            for (const auto& [bucket, byState] : buckets) {
                if (bucket != (firstBucket < 0 ? -1 : 0) + int(lengths.size()))
                    throw Refused{where + ": its buckets are not numbered 0, 1, ..."};
                const Parameter* first = byState.begin()->second;
                if (first->shape.size() != 1 || first->shape[0] <= 0)
                    throw Refused{where + ": a bucket tensor is not one-dimensional, or empty"};
                lengths.push_back(first->shape[0]);
                for (const auto& [name, t] : byState) {
                    if (t->shape != first->shape) throw Refused{where + ": its states differ in length"};
                    states.insert(name);
                }
            }
            for (const auto& [bucket, byState] : buckets)
                if (byState.size() != states.size()) throw Refused{where + ": a bucket lacks a state"};
            const std::vector<Placed> placed = placeBuffer(order, lengths, where);
            for (const auto& [bucket, byState] : buckets) {
                const int k = bucket < 0 ? 0 : bucket;
                for (const auto& [name, t] : byState) {
                    const std::vector<StoredRun> runs = storedRuns(*t);
                    checkChunks(runs, placed, k, lengths[size_t(k)], run.dataParallel, where);
                    for (const Placed& p : placed)
                        if (p.bucket == k && !p.local->copy) addPieces(state[p.local->param][name], p, runs);
                }
            }
            for (const Placed& p : placed) {
                placedAnywhere.insert(p.local->param);
                out.places.emplace_back(group, buffer, p.bucket, p.local->param->name, p.local->layer,
                                        p.start);
            }
        }
        if (!unplaced.empty())
            throw Refused{"'" + (*unplaced.begin())->param->name + "' is in none of dp_group_idx_" +
                          std::to_string(group) + "'s buffers (no buffer of its dtype)"};
    }
    // Every stored tensor of the model, whole, in every state.
    for (Parameter& p : tag.params) {
        if (!placedAnywhere.count(&p)) throw Refused{"'" + p.name + "' is in no buffer this reader places"};
        const auto it = state.find(&p);
        if (it == state.end()) throw Refused{"'" + p.name + "' has no state in the buckets"};
        for (const auto& [name, slices] : it->second) {
            uint64_t n = 0;
            for (const RankSlice& s : slices)
                n += s.length;
            if (n != p.numel())
                throw Refused{"the buckets hold " + std::to_string(n) + " of '" + p.name + "''s " +
                              std::to_string(p.numel()) + " elements of " + name};
        }
    }
    return out;
}

} // namespace

BucketOutcome attachBucketState(Tag& tag, const BucketRun& run)
{
    BucketOutcome outcome;
    // The DCP family lists every tensor it reads; the buckets are no tensors of the model.
    std::erase_if(tag.params, [&](Parameter& t) {
        if (!distKey(t.path.empty() ? t.name : t.path)) return false;
        tag.otherTensors.push_back(std::move(t));
        return true;
    });
    std::vector<Saved> saved;
    for (size_t i = 0; i < tag.otherTensors.size(); ++i) {
        const Parameter& t = tag.otherTensors[i];
        auto key = distKey(t.path.empty() ? t.name : t.path);
        if (!key && run.tp > 0) key = legacyKey(t.name, run.tp);
        if (key)
            saved.push_back({std::move(*key), i});
        else if (t.name.find("optimizer.distributed.") != std::string::npos ||
                 t.name.find("/distrib_optim.pt:") != std::string::npos)
            outcome.found = true,
            outcome.unplaced = "'" + t.name + "' is not a bucket tensor this reader knows";
    }
    outcome.found = outcome.found || !saved.empty();
    if (!outcome.found || !outcome.unplaced.empty()) return outcome;
    if (run.tp <= 0 || run.pp <= 0 || run.layers <= 0 || run.layers % run.pp)
        return outcome.unplaced =
                   "the saved args do not give the tensor- and pipeline-parallel sizes and layers",
               outcome;
    if (!run.layersEvenlySplit)
        return outcome.unplaced = "its pipeline stages hold uneven or virtual shares of the layers", outcome;
    if (run.experts) return outcome.unplaced = "its experts' buffers are not placed yet", outcome;
    std::vector<std::vector<const char*>> orders;
    for (BucketRun::Spec spec : {BucketRun::Spec::Local, BucketRun::Spec::TransformerEngine})
        if (run.spec == BucketRun::Spec::Unknown || run.spec == spec) orders.push_back(layerOrder(spec));
    // Both orders may hold where they place alike (a bf16 run's norms in a buffer of their own).
    std::optional<Rebuilt> found;
    for (const std::vector<const char*>& order : orders) {
        try {
            Rebuilt r = rebuild(tag, run, saved, order);
            if (found && found->places != r.places) {
                outcome.unplaced =
                    "its layer order (local or Transformer Engine spec) is told neither by the "
                    "args nor by the saved chunks";
                return outcome;
            }
            if (!found) found = std::move(r);
        } catch (const Refused& r) {
            if (outcome.unplaced.empty()) outcome.unplaced = r.why;
        }
    }
    if (!found) return outcome;
    outcome.unplaced.clear();
    // Each state with its stored dtype, by name (the order the per-parameter formats' keys sort in).
    std::map<std::string, torch::DType> states;
    for (const Saved& s : saved)
        states[s.key.state] = tag.otherTensors[s.index].dtype;
    for (auto& [param, byName] : found->state)
        for (const auto& [name, dtype] : states) {
            std::vector<RankSlice>& slices = byName[name];
            std::sort(slices.begin(), slices.end(),
                      [](const RankSlice& a, const RankSlice& b) { return a.paramOffset < b.paramOffset; });
            param->state.push_back(OptimizerState{name, param->shape, dtype, std::move(slices)});
        }
    std::set<size_t> consumed;
    for (const Saved& s : saved)
        consumed.insert(s.index);
    for (auto it = consumed.rbegin(); it != consumed.rend(); ++it)
        tag.otherTensors.erase(tag.otherTensors.begin() + long(*it));
    return outcome;
}

} // namespace ckpt::layout
