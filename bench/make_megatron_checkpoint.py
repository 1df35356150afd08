#!/usr/bin/env python3
"""Helper of bench/megatron.sh: a multi-GB Megatron-Core torch_dist checkpoint, and megatron-core's own
path from it to Hugging Face safetensors (the reference `ckpt export` is timed against).

    make RUN [--layers N]        4 gloo processes on CPU (TP2 PP2) build a Llama-shaped GPTModel with
                                 megatron-core and save it with dist_checkpointing (torch_dist) as
                                 Megatron-LM lays a run out: RUN/latest_checkpointed_iteration.txt and
                                 RUN/iter_0000001/, the state dict shaped as Megatron-LM's
                                 generate_state_dict (args Namespace, checkpoint_version, iteration, model).
    reference RUN OUT            one process: a TP1 PP1 GPTModel, dist_checkpointing.load of the latest
                                 iteration into it (megatron-core reshards TP2 PP2 -> TP1 PP1 on load),
                                 the Megatron -> Hugging Face mapping of tools/fixtures/make_megatron_fixtures.py
                                 (unstack layers, split QKV per query group, fc1 into gate/up, trim the
                                 vocabulary), safetensors save_file of one model.safetensors + config.json.
                                 Prints the phases' seconds on stderr.
    bridge RUN OUT               Megatron-Bridge 0.3.1's export (run it with .venv-bridge): see cmd_bridge.
    compare A B                  both folders hold the same tensor names, dtypes, shapes and bytes
                                 (sha256 per tensor, read one tensor at a time).

The CPU monkeypatches (torch.cuda.synchronize, current_device, the causal mask, the CUDA RNG tracker) and
the args Namespace are the fixture generator's, imported from tools/fixtures/make_megatron_fixtures.py with
its shape constants replaced by the benchmark's. Weights: megatron-core's model is built with
perform_initialization=False and every parameter then filled with seeded N(0, 0.02) (norms 1 + N(0, 0.2)),
different on every TP and PP rank, which is much faster on 2 cores than Megatron's CPU init (it draws every
TP layer's full master weight on every rank) and as good for a conversion benchmark.
"""
import argparse
import glob
import hashlib
import json
import os
import sys
import time
import zlib
from pathlib import Path

T0 = time.time()
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tools" / "fixtures"))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import make_megatron_fixtures as F  # noqa: E402  (apply_cpu_patches, megatron_args, CONTENT_METADATA)

TP, PP = 2, 2
ITER = 1


def shape(layers):
    return dict(num_layers=layers, hidden_size=2048, num_attention_heads=16, num_query_groups=4,
                ffn_hidden_size=5632, kv_channels=128, max_position_embeddings=4096, rotary_base=10000,
                norm_epsilon=1e-5)


VOCAB = 32000  # a multiple of 128 * TP: Megatron pads nothing, the HF export trims nothing


def configure(layers):
    """The fixture generator's module-level shape, replaced (in every process: mp.spawn re-imports)."""
    F.BASE.clear()
    F.BASE.update(shape(layers))
    F.VOCAB = VOCAB
    F.SEQ = 4096


V = dict(tp=TP, pp=PP, ep=1, dtype="fp32")


def make_config(tp, pp):
    import torch.nn.functional as Fn
    from megatron.core.transformer.transformer_config import TransformerConfig
    B = F.BASE
    return TransformerConfig(
        num_layers=B["num_layers"], hidden_size=B["hidden_size"], num_attention_heads=B["num_attention_heads"],
        num_query_groups=B["num_query_groups"], ffn_hidden_size=B["ffn_hidden_size"], kv_channels=B["kv_channels"],
        normalization="RMSNorm", layernorm_epsilon=B["norm_epsilon"], gated_linear_unit=True,
        activation_func=Fn.silu, add_bias_linear=False, add_qkv_bias=False,
        hidden_dropout=0.0, attention_dropout=0.0, init_method_std=0.02,
        use_cpu_initialization=True, perform_initialization=False,
        params_dtype=torch.float32, bf16=False, pipeline_dtype=torch.float32,
        tensor_model_parallel_size=tp, pipeline_model_parallel_size=pp, expert_model_parallel_size=1,
        sequence_parallel=False, masked_softmax_fusion=False, bias_activation_fusion=False,
        bias_dropout_fusion=False, apply_rope_fusion=False, gradient_accumulation_fusion=False,
        persist_layer_norm=False)


def build_model(tp, pp):
    from megatron.core import parallel_state as ps
    from megatron.core.models.gpt import GPTModel
    from megatron.core.models.gpt.gpt_layer_specs import get_gpt_layer_local_spec
    spec = get_gpt_layer_local_spec(normalization="RMSNorm")
    return GPTModel(config=make_config(tp, pp), transformer_layer_spec=spec, vocab_size=F.padded_vocab(tp),
                    max_sequence_length=F.BASE["max_position_embeddings"],
                    pre_process=ps.is_pipeline_first_stage(), post_process=ps.is_pipeline_last_stage(),
                    parallel_output=True, share_embeddings_and_output_weights=False,
                    position_embedding_type="rope", rotary_base=F.BASE["rotary_base"])


# ----------------------------------------------------------------------------------------------------------
def save_worker(rank, world, run, layers, port):
    configure(layers)
    F.init_dist(rank, world, port)
    F.apply_cpu_patches()
    from megatron.core import dist_checkpointing, parallel_state as ps
    ps.initialize_model_parallel(tensor_model_parallel_size=TP, pipeline_model_parallel_size=PP)
    model = build_model(TP, PP)
    tpr, ppr = ps.get_tensor_model_parallel_rank(), ps.get_pipeline_model_parallel_rank()
    with torch.no_grad():
        for name, p in model.named_parameters():
            g = torch.Generator().manual_seed(zlib.crc32(f"{name}:tp{tpr}:pp{ppr}".encode()))
            if "norm" in name:
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:
                p.normal_(0.0, 0.02, generator=g)
    run = Path(run)
    d = run / f"iter_{ITER:07d}"
    if rank == 0:
        d.mkdir(parents=True, exist_ok=True)
    dist.barrier()
    state = {"args": F.megatron_args(V, ITER), "checkpoint_version": 3.0, "iteration": ITER,
             "model": model.sharded_state_dict(metadata=dict(F.CONTENT_METADATA))}
    dist_checkpointing.save(state, str(d), content_metadata=dict(F.CONTENT_METADATA))
    dist.barrier()
    if rank == 0:
        (run / "latest_checkpointed_iteration.txt").write_text(str(ITER))
    dist.barrier()
    ps.destroy_model_parallel()
    dist.destroy_process_group()


def cmd_make(a):
    configure(a.layers)
    mp.spawn(save_worker, args=(TP * PP, a.run, a.layers, 29711), nprocs=TP * PP, join=True)
    print(f"saved {a.run} in {time.time() - T0:.1f} s", flush=True)


# ----------------------------------------------------------------------------------------------------------
def to_hf(sd):
    """The generator's to_hf (stacked=False: a TP1 PP1 model's own state_dict names), one layer at a time."""
    B = F.BASE
    L, H = B["num_layers"], B["hidden_size"]
    nq, ng, d, Fh = B["num_attention_heads"], B["num_query_groups"], B["kv_channels"], B["ffn_hidden_size"]
    per = nq // ng
    hf = {"model.embed_tokens.weight": sd["embedding.word_embeddings.weight"][:VOCAB],
          "lm_head.weight": sd["output_layer.weight"][:VOCAB],
          "model.norm.weight": sd["decoder.final_layernorm.weight"]}
    for l in range(L):
        m, p = f"decoder.layers.{l}.", f"model.layers.{l}."
        qkv = sd[m + "self_attention.linear_qkv.weight"].reshape(ng, per + 2, d, H)
        hf[p + "self_attn.q_proj.weight"] = qkv[:, :per].reshape(nq * d, H)
        hf[p + "self_attn.k_proj.weight"] = qkv[:, per].reshape(ng * d, H)
        hf[p + "self_attn.v_proj.weight"] = qkv[:, per + 1].reshape(ng * d, H)
        hf[p + "self_attn.o_proj.weight"] = sd[m + "self_attention.linear_proj.weight"]
        hf[p + "input_layernorm.weight"] = sd[m + "input_layernorm.weight"]
        hf[p + "post_attention_layernorm.weight"] = sd[m + "pre_mlp_layernorm.weight"]
        fc1 = sd[m + "mlp.linear_fc1.weight"]
        hf[p + "mlp.gate_proj.weight"] = fc1[:Fh]
        hf[p + "mlp.up_proj.weight"] = fc1[Fh:]
        hf[p + "mlp.down_proj.weight"] = sd[m + "mlp.linear_fc2.weight"]
    return {k: t.contiguous() for k, t in hf.items()}


def reference_worker(rank, world, run, out, port, fsync=False):
    t = {"start (imports)": time.time() - T0}
    tick = time.time()
    run = Path(run)
    it = int((run / "latest_checkpointed_iteration.txt").read_text().strip())
    d = run / f"iter_{it:07d}"
    F.init_dist(rank, world, port)
    F.apply_cpu_patches()
    from megatron.core import dist_checkpointing, parallel_state as ps
    from safetensors.torch import save_file
    common = dist_checkpointing.load_common_state_dict(str(d))
    ma = common["args"]
    configure(ma.num_layers)
    ps.initialize_model_parallel(1, 1)
    model = build_model(1, 1)
    t["init + build TP1 PP1 model"] = time.time() - tick
    tick = time.time()
    sharded = {"model": model.sharded_state_dict(metadata=dict(F.CONTENT_METADATA))}
    loaded = dist_checkpointing.load(sharded, str(d))
    model.load_state_dict(loaded["model"])
    del loaded, sharded
    t["dist_checkpointing.load (reshard)"] = time.time() - tick
    tick = time.time()
    hf = to_hf(model.state_dict())
    t["HF mapping"] = time.time() - tick
    tick = time.time()
    os.makedirs(out, exist_ok=True)
    B = F.BASE
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": VOCAB,
           "hidden_size": B["hidden_size"], "intermediate_size": B["ffn_hidden_size"],
           "num_hidden_layers": B["num_layers"], "num_attention_heads": B["num_attention_heads"],
           "num_key_value_heads": B["num_query_groups"], "head_dim": B["kv_channels"],
           "max_position_embeddings": B["max_position_embeddings"], "rms_norm_eps": B["norm_epsilon"],
           "rope_theta": float(B["rotary_base"]), "hidden_act": "silu", "tie_word_embeddings": False,
           "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32"}
    Path(out, "config.json").write_text(json.dumps(cfg, indent=1))
    save_file(hf, str(Path(out, "model.safetensors")), metadata={"format": "pt"})
    t["safetensors save_file"] = time.time() - tick
    if fsync:  # the output made durable, as ckpt export makes its own (fsync of each file)
        tick = time.time()
        for name in ("model.safetensors", "config.json"):
            fd = os.open(str(Path(out, name)), os.O_RDONLY)
            os.fsync(fd)
            os.close(fd)
        t["fsync"] = time.time() - tick
    print("reference phases (s): " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()), file=sys.stderr, flush=True)
    ps.destroy_model_parallel()
    dist.destroy_process_group()


def cmd_reference(a):
    # World size 1 in this very process (no spawn): dist_checkpointing needs a process group.
    reference_worker(0, 1, a.run, a.out, 29733, fsync=a.fsync)


# ----------------------------------------------------------------------------------------------------------
def llama_hf_config(ma):
    """config.json of the matching LlamaForCausalLM, from the checkpoint's Megatron-LM args (the mapping of
    tools/fixtures/make_megatron_fixtures.hf_config; the reference writes the same values)."""
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": ma.vocab_size,
            "hidden_size": ma.hidden_size, "intermediate_size": ma.ffn_hidden_size,
            "num_hidden_layers": ma.num_layers, "num_attention_heads": ma.num_attention_heads,
            "num_key_value_heads": ma.num_query_groups, "head_dim": ma.kv_channels,
            "max_position_embeddings": ma.max_position_embeddings, "rms_norm_eps": ma.norm_epsilon,
            "rope_theta": float(ma.rotary_base), "hidden_act": "silu",
            "tie_word_embeddings": not ma.untie_embeddings_and_output_weights,
            "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32"}


def cmd_bridge(a):
    """Megatron-Bridge 0.3.1's export (run with .venv-bridge): AutoBridge.export_ckpt's own steps, with its
    load_model_config step replaced by an adapter.

    export_ckpt(run, out) cannot read a Megatron-LM run folder whose args Namespace is not Megatron-LM's
    complete argparse set: load_megatron_model -> load_model_config (training/model_load_save.py:229) ->
    mlm_compat/arguments.py:52 _transformer_config_from_args reads args.multi_latent_attention (and more
    of Megatron-LM's arguments) -> AttributeError (tried). Read, not tried: with complete args,
    AutoBridge.load_megatron_model (auto_bridge.py:679) passes no model_type and build_and_load_model asserts
    model_type in ("gpt", "mamba") (model_load_save.py:286). Bridge's own checkpoints carry run_config.yaml.

    Adapter (ours): a scratch HF folder in place of the HF model Bridge exports "to": config.json of
    LlamaForCausalLM from the checkpoint's args, and a model.safetensors.index.json (no weights) naming
    transformers' own LlamaForCausalLM parameters, all in model.safetensors; the provider's model-parallel reset that load_megatron_model does (TP/PP/CP/EP 1,
    perform_initialization False); CPU placement: the local (non-TE) layer spec -- the one the checkpoint
    was saved with; Transformer Engine is not installable without CUDA -- and the CUDA-only fusions off, the
    fixture generators' CPU patches and TE import stub.
    Bridge's own: AutoBridge.from_hf_pretrained, to_megatron_provider (HF config -> GPTModelProvider),
    temporary_distributed_context("gloo"), build_and_load_model (provide_distributed_model +
    _load_model_weights_from_checkpoint: dist_checkpointing.load, resharding TP2 PP2 -> TP1 PP1),
    save_hf_weights (stream_weights_megatron_to_hf -> the Llama mapping registry ->
    SafeTensorsStateSource.save_generator, which with no source index buffers every tensor and writes one
    model.safetensors with safetensors' save_file), and the HF config's save_pretrained as save_artifacts
    calls it. Not save_hf_pretrained: its save_artifacts also loads a tokenizer, and there is none
    (AutoTokenizer on a config-only folder raises in transformers' convert_slow_tokenizer, reached from
    causal_lm.py:213); ckpt's and the reference's outputs hold no tokenizer either.
    """
    import tempfile
    t = {"start (imports)": time.time() - T0}
    tick = time.time()
    F.apply_cpu_patches()
    import make_bridge_fixtures as BF  # the TE import stub (CPU)
    (ab, mls) = BF.import_with_te_stub("megatron.bridge.models.conversion.auto_bridge",
                                       "megatron.bridge.training.model_load_save")
    from megatron.bridge.models.gpt_provider import local_layer_spec
    from megatron.core import dist_checkpointing
    t["import megatron.bridge"] = time.time() - tick
    tick = time.time()
    run = Path(a.run)
    it = int((run / "latest_checkpointed_iteration.txt").read_text().strip())
    d = run / f"iter_{it:07d}"
    ma = dist_checkpointing.load_common_state_dict(str(d))["args"]
    hf_dir = tempfile.mkdtemp(prefix="bridge-hf-config-")
    Path(hf_dir, "config.json").write_text(json.dumps(llama_hf_config(ma), indent=1))
    # Bridge takes the HF tensor names (and their file) from the source HF folder's safetensors or index
    # (state.py get_all_keys / key_to_filename_map): an index naming transformers' own LlamaForCausalLM
    # parameters (built on the meta device: no memory, no values), all in model.safetensors.
    import transformers
    with torch.device("meta"):
        names = list(transformers.LlamaForCausalLM(transformers.LlamaConfig.from_pretrained(hf_dir)).state_dict())
    Path(hf_dir, "model.safetensors.index.json").write_text(
        json.dumps({"metadata": {}, "weight_map": {n: "model.safetensors" for n in names}}))
    bridge = ab.AutoBridge.from_hf_pretrained(hf_dir)
    provider = bridge.to_megatron_provider(load_weights=False)
    # as load_megatron_model (model_load_save.py:378): one process, TP1 PP1, no init
    for k, v in dict(tensor_model_parallel_size=1, pipeline_model_parallel_size=1, context_parallel_size=1,
                     expert_model_parallel_size=1, expert_tensor_parallel_size=1, sequence_parallel=False,
                     perform_initialization=False, virtual_pipeline_model_parallel_size=None,
                     num_layers_in_first_pipeline_stage=None, num_layers_in_last_pipeline_stage=None).items():
        setattr(provider, k, v)
    # CPU: no Transformer Engine (the checkpoint's own local spec), no CUDA fusions
    provider.transformer_layer_spec = local_layer_spec
    for k in ("bias_activation_fusion", "masked_softmax_fusion", "persist_layer_norm", "bias_dropout_fusion",
              "apply_rope_fusion", "gradient_accumulation_fusion", "cross_entropy_loss_fusion"):
        setattr(provider, k, False)
    t["HF config + provider"] = time.time() - tick
    tick = time.time()
    with mls.temporary_distributed_context(backend="gloo"):
        model = mls.build_and_load_model(str(d), provider, use_cpu_init=True, skip_temp_dist_context=True)
        t["build + load (reshard)"] = time.time() - tick
        tick = time.time()
        # save_hf_pretrained = save_artifacts (config.json, then the tokenizer) + save_hf_weights; this run
        # has no tokenizer (nor does the reference's or ckpt's output), and AutoTokenizer on a config-only
        # folder raises (causal_lm.py:213), so: the config as save_artifacts writes it, then save_hf_weights.
        bridge.hf_pretrained.config.save_pretrained(a.out)
        bridge.save_hf_weights(model, a.out, show_progress=False, strict=False)
        t["save_hf_weights"] = time.time() - tick
        if a.fsync:  # as the reference's --fsync
            tick = time.time()
            for f in sorted(Path(a.out).iterdir()):
                fd = os.open(str(f), os.O_RDONLY)
                os.fsync(fd)
                os.close(fd)
            t["fsync"] = time.time() - tick
    import shutil
    shutil.rmtree(hf_dir)
    print("bridge phases (s): " + ", ".join(f"{k} {v:.2f}" for k, v in t.items()), file=sys.stderr, flush=True)


# ----------------------------------------------------------------------------------------------------------
def digests(folder):
    from safetensors import safe_open
    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        with safe_open(f, "pt") as s:
            for k in s.keys():
                t = s.get_tensor(k).contiguous()
                out[k] = (str(t.dtype), tuple(t.shape),
                          hashlib.sha256(t.reshape(-1).view(torch.uint8).numpy().data).hexdigest(), t.numel() * t.element_size())
                del t
    return out


def cmd_compare(a):
    A, B = digests(a.a), digests(a.b)
    if set(A) != set(B):
        print(f"DIFFERENT NAMES: only in {a.a}: {sorted(set(A) - set(B))[:5]}; only in {a.b}: "
              f"{sorted(set(B) - set(A))[:5]}")
        sys.exit(1)
    bad = [k for k in A if A[k][:3] != B[k][:3]]
    if bad:
        print(f"DIFFERENT TENSORS ({len(bad)}): {bad[:5]}")
        sys.exit(1)
    print(f"{len(A)} tensors, {sum(v[3] for v in A.values())} bytes: same names, dtypes, shapes and sha256")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("run")
    m.add_argument("--layers", type=int, default=10)
    r = sub.add_parser("reference")
    r.add_argument("run")
    r.add_argument("out")
    r.add_argument("--fsync", action="store_true", help="fsync the output files, as ckpt does")
    b = sub.add_parser("bridge")
    b.add_argument("run")
    b.add_argument("out")
    b.add_argument("--fsync", action="store_true", help="fsync the output files, as ckpt does")
    c = sub.add_parser("compare")
    c.add_argument("a")
    c.add_argument("b")
    a = ap.parse_args()
    {"make": cmd_make, "reference": cmd_reference, "bridge": cmd_bridge, "compare": cmd_compare}[a.cmd](a)


if __name__ == "__main__":
    main()
