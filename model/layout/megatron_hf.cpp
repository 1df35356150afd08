// A Megatron-Core model under the Hugging Face names of the architecture its args describe
// (LlamaForCausalLM, Qwen2ForCausalLM with QKV biases, MixtralForCausalLM with experts,
// GPT2LMHeadModel for the plain local spec: its Conv1D weights transposed regions), each
// Hugging Face tensor stated as regions of Megatron's stored ones: one layer of a stacked
// decoder.layers.* tensor, the q, k or v rows of each query group of the fused linear_qkv (Megatron
// keeps a group's q heads, then its k, then its v), the gate or up half of linear_fc1, one expert
// of the grouped experts, the vocabulary without Megatron's padding rows. The regions read the
// DCP chunks they cross, so nothing is gathered or copied before an export streams them; the
// arithmetic is Megatron-Bridge's mapping, written from what the format stores.
#include "layout/megatron_hf.h"

#include "layout/words.h"

#include <algorithm>
#include <map>

namespace ckpt::layout {

namespace {

// The box [off, off + size) of the global tensor `g` (a parameter whose pieces are whole stored
// tensors or N-d chunks of it, as the DCP family states them), its first `drop` dimensions (a
// layer, an expert: size 1) dropped, placed at `dest` in `out` (`dest` in g's order of dimensions;
// with `transpose`, `out` holds the box with its last two dimensions swapped).
void addBox(Parameter& out, const Parameter& g, const std::vector<int64_t>& off,
            const std::vector<int64_t>& size, size_t drop, const std::vector<int64_t>& dest,
            bool transpose = false)
{
    const size_t rank = g.shape.size();
    for (const RankSlice& s : g.slices)
        for (const Source& src : s.master) {
            std::vector<int64_t> co(rank, 0), cs = g.shape;
            if (!src.chunkOffsets.empty()) co = src.chunkOffsets, cs = src.chunkShape;
            // The chunk's element (i0, ...) in its stored tensor: row-major over the chunk, or the
            // region the source already is (a half of a legacy rank's fused linear_fc1).
            std::vector<int64_t> lo(rank), hi(rank);
            bool empty = false;
            for (size_t k = 0; k < rank; ++k) {
                lo[k] = std::max(off[k], co[k]);
                hi[k] = std::min(off[k] + size[k], co[k] + cs[k]);
                empty = empty || lo[k] >= hi[k];
            }
            if (empty) continue;
            std::vector<int64_t> strides(rank, 1);
            for (size_t k = rank - 1; k > 0; --k)
                strides[k - 1] = strides[k] * cs[k];
            if (!src.regionStrides.empty()) strides = src.regionStrides;
            int64_t regionOffset = src.regionOffset;
            for (size_t k = 0; k < rank; ++k)
                regionOffset += (lo[k] - co[k]) * strides[k];
            std::vector<int64_t> at, shape, regionStrides;
            for (size_t k = drop; k < rank; ++k) {
                at.push_back(dest[k - drop] + lo[k] - off[k]);
                shape.push_back(hi[k] - lo[k]);
                regionStrides.push_back(strides[k]);
            }
            if (transpose && at.size() >= 2)
                for (auto* v : {&at, &shape, &regionStrides})
                    std::swap((*v)[v->size() - 2], (*v)[v->size() - 1]);
            RankSlice piece;
            piece.rank = s.rank;
            piece.length = 1;
            for (int64_t x : shape)
                piece.length *= uint64_t(x);
            for (size_t i = 0, stride = 1; i < at.size(); ++i) {
                const size_t d = at.size() - 1 - i;
                piece.paramOffset += uint64_t(at[d]) * stride;
                stride *= size_t(out.shape[d]);
            }
            piece.master.push_back(
                Source::region(src.file, src.tensorPath, src.dtype, at, shape, regionOffset, regionStrides));
            out.slices.push_back(std::move(piece));
        }
}

class Mapper
{
public:
    Mapper(const std::vector<Parameter>& stored, const MegatronShape& m) : m_m(m)
    {
        for (const Parameter& p : stored)
            m_stored[p.name] = &p;
    }

    bool has(const std::string& key) const { return m_stored.count(key) > 0; }
    const Parameter& at(const std::string& key) const
    {
        const auto it = m_stored.find(key);
        if (it == m_stored.end()) throw Error("no '" + key + "' among the saved tensors");
        return *it->second;
    }

    // The whole of `key` after its leading `index` coordinates, or rows [from, from + rows) of
    // its first remaining dimension; transposed (a Linear weight as GPT-2's Conv1D keeps it).
    Parameter transposed(const std::string& name, const std::string& key, std::vector<int64_t> index) const
    {
        return part(name, key, std::move(index), 0, -1, true);
    }
    Parameter part(const std::string& name, const std::string& key, std::vector<int64_t> index,
                   int64_t from = 0, int64_t rows = -1, bool transpose = false) const
    {
        const Parameter& g = at(key);
        Parameter p;
        p.name = name;
        p.dtype = g.dtype;
        const size_t drop = index.size();
        std::vector<int64_t> off = index, size(drop, 1);
        for (size_t k = drop; k < g.shape.size(); ++k) {
            const bool first = k == drop;
            off.push_back(first ? from : 0);
            size.push_back(first && rows >= 0 ? rows : g.shape[k] - (first ? from : 0));
        }
        p.shape.assign(size.begin() + long(drop), size.end());
        if (transpose) {
            if (p.shape.size() != 2) throw Error("'" + key + "' is not a matrix to transpose");
            std::swap(p.shape[0], p.shape[1]);
        }
        addBox(p, g, off, size, drop, std::vector<int64_t>(p.shape.size(), 0), transpose);
        return p;
    }

    // GPT-2's c_attn of layer `layer`: the q rows of every head, then every k, then every v
    // (Megatron keeps them per query group), the weight as Conv1D keeps it ([in, out]).
    Parameter fusedQkv(const std::string& name, const std::string& key, int64_t layer) const
    {
        const Parameter& g = at(key);
        const bool weight = g.shape.size() == 3;
        const int64_t hd = m_m.headDim, perGroup = m_m.heads / m_m.groups;
        const int64_t rows = (m_m.heads + 2 * m_m.groups) * hd;
        Parameter p;
        p.name = name;
        p.dtype = g.dtype;
        p.shape = weight ? std::vector<int64_t>{g.shape[2], rows} : std::vector<int64_t>{rows};
        const int64_t base[3] = {0, m_m.heads * hd, (m_m.heads + m_m.groups) * hd};
        for (int which = 0; which < 3; ++which) {
            const int64_t width = which == 0 ? perGroup * hd : hd;
            const int64_t start = which == 0 ? 0 : which == 1 ? perGroup * hd : (perGroup + 1) * hd;
            for (int64_t gr = 0; gr < m_m.groups; ++gr) {
                std::vector<int64_t> off{layer, gr * (perGroup + 2) * hd + start}, size{1, width},
                    dest{base[which] + gr * width};
                if (weight) off.push_back(0), size.push_back(g.shape[2]), dest.push_back(0);
                addBox(p, g, off, size, 1, dest, weight);
            }
        }
        return p;
    }

    // q, k or v (which = 0, 1, 2) of layer `layer` of a fused linear_qkv (weight or bias): each
    // query group's rows of it, one after another.
    Parameter qkv(const std::string& name, const std::string& key, int64_t layer, int which) const
    {
        const Parameter& g = at(key);
        const int64_t hd = m_m.headDim, perGroup = m_m.heads / m_m.groups;
        const int64_t width = which == 0 ? perGroup * hd : hd; // rows per group
        const int64_t start = which == 0 ? 0 : which == 1 ? perGroup * hd : (perGroup + 1) * hd;
        Parameter p;
        p.name = name;
        p.dtype = g.dtype;
        p.shape.assign(g.shape.begin() + 1, g.shape.end());
        p.shape[0] = width * m_m.groups;
        for (int64_t gr = 0; gr < m_m.groups; ++gr) {
            std::vector<int64_t> off{layer, gr * (perGroup + 2) * hd + start}, size{1, width};
            for (size_t k = 2; k < g.shape.size(); ++k)
                off.push_back(0), size.push_back(g.shape[k]);
            std::vector<int64_t> dest(p.shape.size(), 0);
            dest[0] = gr * width;
            addBox(p, g, off, size, 1, dest);
        }
        return p;
    }

private:
    const MegatronShape& m_m;
    std::map<std::string, const Parameter*> m_stored;
};

} // namespace

std::string huggingFaceArchitecture(const MegatronShape& m)
{
    if (!m.unmapped.empty()) return {};
    // The plain local spec: LayerNorm, learned positions, GELU, biases, one k and v per head.
    if (!m.swiglu && m.normalization == "LayerNorm" && m.positionEmbedding == "learned_absolute" &&
        m.biasLinear && m.groups == m.heads && m.experts == 0 && m.headDim * m.heads == m.hidden)
        return "GPT2LMHeadModel";
    if (!m.swiglu || m.normalization != "RMSNorm" || m.positionEmbedding != "rope" || m.biasLinear) return {};
    if (m.experts > 0) return m.qkvBias ? std::string() : "MixtralForCausalLM";
    return m.qkvBias ? "Qwen2ForCausalLM" : "LlamaForCausalLM";
}

namespace {

// GPT2LMHeadModel's names; its Conv1D weights are the Linear ones transposed. The output layer is
// the embedding where it is tied (lm_head is not saved then), else lm_head.
std::vector<Parameter> gpt2Parameters(const Mapper& map, const MegatronShape& m)
{
    std::vector<Parameter> out;
    const std::string L = "decoder.layers.";
    out.push_back(map.part("transformer.wte.weight", "embedding.word_embeddings.weight", {}, 0, m.vocab));
    out.push_back(map.part("transformer.wpe.weight", "embedding.position_embeddings.weight", {}));
    for (int64_t i = 0; i < m.layers; ++i) {
        const std::string h = "transformer.h." + std::to_string(i) + ".";
        const std::string qkv = L + "self_attention.linear_qkv.", fc1 = L + "mlp.linear_fc1.";
        out.push_back(map.part(h + "ln_1.weight", qkv + "layer_norm_weight", {i}));
        out.push_back(map.part(h + "ln_1.bias", qkv + "layer_norm_bias", {i}));
        out.push_back(map.fusedQkv(h + "attn.c_attn.weight", qkv + "weight", i));
        out.push_back(map.fusedQkv(h + "attn.c_attn.bias", qkv + "bias", i));
        out.push_back(map.transposed(h + "attn.c_proj.weight", L + "self_attention.linear_proj.weight", {i}));
        out.push_back(map.part(h + "attn.c_proj.bias", L + "self_attention.linear_proj.bias", {i}));
        out.push_back(map.part(h + "ln_2.weight", fc1 + "layer_norm_weight", {i}));
        out.push_back(map.part(h + "ln_2.bias", fc1 + "layer_norm_bias", {i}));
        out.push_back(map.transposed(h + "mlp.c_fc.weight", fc1 + "weight", {i}));
        out.push_back(map.part(h + "mlp.c_fc.bias", fc1 + "bias", {i}));
        out.push_back(map.transposed(h + "mlp.c_proj.weight", L + "mlp.linear_fc2.weight", {i}));
        out.push_back(map.part(h + "mlp.c_proj.bias", L + "mlp.linear_fc2.bias", {i}));
    }
    out.push_back(map.part("transformer.ln_f.weight", "decoder.final_layernorm.weight", {}));
    out.push_back(map.part("transformer.ln_f.bias", "decoder.final_layernorm.bias", {}));
    if (m.untied) out.push_back(map.part("lm_head.weight", "output_layer.weight", {}, 0, m.vocab));
    return out;
}

} // namespace

std::vector<Parameter> huggingFaceParameters(const std::vector<Parameter>& stored, const MegatronShape& m)
{
    const std::string arch = huggingFaceArchitecture(m);
    if (arch.empty()) throw Error("no Hugging Face architecture matches this model");
    const Mapper map(stored, m);
    if (arch == "GPT2LMHeadModel") return gpt2Parameters(map, m);
    std::vector<Parameter> out;
    const std::string L = "decoder.layers.";
    out.push_back(map.part("model.embed_tokens.weight", "embedding.word_embeddings.weight", {}, 0, m.vocab));
    for (int64_t i = 0; i < m.layers; ++i) {
        const std::string h = "model.layers." + std::to_string(i) + ".";
        const char* qkvNames[] = {"q_proj", "k_proj", "v_proj"};
        for (int w = 0; w < 3; ++w)
            out.push_back(map.qkv(h + "self_attn." + qkvNames[w] + ".weight",
                                  L + "self_attention.linear_qkv.weight", i, w));
        if (m.qkvBias)
            for (int w = 0; w < 3; ++w)
                out.push_back(map.qkv(h + "self_attn." + qkvNames[w] + ".bias",
                                      L + "self_attention.linear_qkv.bias", i, w));
        out.push_back(map.part(h + "self_attn.o_proj.weight", L + "self_attention.linear_proj.weight", {i}));
        out.push_back(
            map.part(h + "input_layernorm.weight", L + "self_attention.linear_qkv.layer_norm_weight", {i}));
        out.push_back(
            map.part(h + "post_attention_layernorm.weight", L + "mlp.linear_fc1.layer_norm_weight", {i}));
        if (m.experts > 0) {
            out.push_back(map.part(h + "block_sparse_moe.gate.weight", L + "mlp.router.weight", {i}));
            const std::string fc1 = L + "mlp.experts.experts.linear_fc1.weight";
            const int64_t f = map.at(fc1).shape.at(2) / 2;
            for (int64_t e = 0; e < m.experts; ++e) {
                const std::string x = h + "block_sparse_moe.experts." + std::to_string(e) + ".";
                out.push_back(map.part(x + "w1.weight", fc1, {i, e}, 0, f));
                out.push_back(map.part(x + "w3.weight", fc1, {i, e}, f, f));
                out.push_back(map.part(x + "w2.weight", L + "mlp.experts.experts.linear_fc2.weight", {i, e}));
            }
        } else {
            const std::string fc1 = L + "mlp.linear_fc1.weight";
            const int64_t f = map.at(fc1).shape.at(1) / 2;
            out.push_back(map.part(h + "mlp.gate_proj.weight", fc1, {i}, 0, f));
            out.push_back(map.part(h + "mlp.up_proj.weight", fc1, {i}, f, f));
            out.push_back(map.part(h + "mlp.down_proj.weight", L + "mlp.linear_fc2.weight", {i}));
        }
    }
    out.push_back(map.part("model.norm.weight", "decoder.final_layernorm.weight", {}));
    if (m.untied) out.push_back(map.part("lm_head.weight", "output_layer.weight", {}, 0, m.vocab));
    return out;
}

nlohmann::ordered_json huggingFaceConfig(const MegatronShape& m, const std::string& dtype)
{
    const std::string arch = huggingFaceArchitecture(m);
    nlohmann::ordered_json c;
    if (arch == "GPT2LMHeadModel") {
        // Megatron's GELU is the exact one (erf): "gelu", not GPT-2's usual tanh "gelu_new";
        // --openai-gelu saves the tanh one.
        c["architectures"] = {arch};
        c["model_type"] = "gpt2";
        c["vocab_size"] = m.vocab;
        c["n_positions"] = m.maxPositions;
        c["n_embd"] = m.hidden;
        c["n_layer"] = m.layers;
        c["n_head"] = m.heads;
        c["n_inner"] = m.ffn;
        c["activation_function"] = m.tanhGelu ? "gelu_new" : "gelu";
        c["layer_norm_epsilon"] = m.normEpsilon;
        c["resid_pdrop"] = 0.0, c["embd_pdrop"] = 0.0, c["attn_pdrop"] = 0.0;
        c["scale_attn_weights"] = true;
        c["scale_attn_by_inverse_layer_idx"] = false;
        c["reorder_and_upcast_attn"] = false;
        c["tie_word_embeddings"] = !m.untied;
        // GPT-2's own 50256 may lie outside this vocabulary: no special tokens are invented.
        c["bos_token_id"] = nullptr, c["eos_token_id"] = nullptr;
        c["torch_dtype"] = dtype;
        return c;
    }
    c["architectures"] = {arch};
    c["model_type"] = arch == "MixtralForCausalLM" ? "mixtral"
                      : arch == "Qwen2ForCausalLM" ? "qwen2"
                                                   : "llama";
    c["vocab_size"] = m.vocab;
    c["hidden_size"] = m.hidden;
    c["intermediate_size"] = m.ffn;
    c["num_hidden_layers"] = m.layers;
    c["num_attention_heads"] = m.heads;
    c["num_key_value_heads"] = m.groups;
    c["head_dim"] = m.headDim;
    c["max_position_embeddings"] = m.maxPositions;
    c["rms_norm_eps"] = m.normEpsilon;
    c["rope_theta"] = m.ropeTheta;
    c["hidden_act"] = "silu";
    c["tie_word_embeddings"] = !m.untied;
    c["torch_dtype"] = dtype;
    if (arch == "LlamaForCausalLM") c["attention_bias"] = false, c["mlp_bias"] = false;
    if (arch == "Qwen2ForCausalLM") c["use_sliding_window"] = false;
    if (arch == "MixtralForCausalLM") {
        c["num_local_experts"] = m.experts, c["num_experts_per_tok"] = m.topk,
        c["intermediate_size"] = m.moeFfn;
        c["sliding_window"] = nullptr, c["output_router_logits"] = false;
    }
    return c;
}

} // namespace ckpt::layout
