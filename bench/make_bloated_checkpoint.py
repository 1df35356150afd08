#!/usr/bin/env python3
"""Writes a large checkpoint bloated the way DeepSpeed issue #3303 bloats them, for bench/slim.sh,
without training: a bf16 model (LLaMA-like shapes, bench/make_large_checkpoint.big_groups) whose
parameters are views into one flat bf16 buffer per parameter group, exactly as ZeRO-1/2 leaves
them (`param.data = flat.narrow(...)`: bench/make_large_checkpoint.build_stage2's lp buffers,
padded to 2 x world size elements), so `engine.module.state_dict()` is a dict of views; that
state dict is split by size into N parts and each part saved with torch.save as transformers'
save_pretrained did (pytorch_model-0000k-of-0000N.bin + pytorch_model.bin.index.json), so every
shard holds the whole flat buffers. tests/data/bloat/torch-2.x/zero2_bf16_3303 is the same layout
made by DeepSpeed itself.

Usage: make_bloated_checkpoint.py OUT [--params 1.1e9] [--shards 3] [--world 1]
Prints one JSON line: parameters, model bytes (what the shards' tensors hold), file bytes.
"""
import argparse
import collections
import json
import math
import pathlib
import sys

import torch

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from make_large_checkpoint import big_groups  # noqa: E402


def model_order(groups):
    """Module registration order (what state_dict() gives): embed, then each layer, then norm."""
    names = [n for g in groups for n in g]

    def key(n):
        if n.startswith("model.layers."):
            i = int(n.split(".")[2])
            sub = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj",
                   "input_layernorm", "post_attention_layernorm"]
            return (1, i, next(k for k, s in enumerate(sub) if f".{s}." in n))
        return (0 if "embed" in n else 2, 0, 0)
    return sorted(names, key=key)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--params", type=float, default=1.1e9)
    ap.add_argument("--shards", type=int, default=3)
    ap.add_argument("--world", type=int, default=1, help="data-parallel size (only the padding)")
    args = ap.parse_args()
    if args.params >= 5e8:
        groups = big_groups(args.params)
    else:  # a small model for smoke tests: narrower, same structure
        groups = big_groups(args.params, hidden=512, ffn=1376, vocab=8000)
    shapes = {n: s for g in groups for n, s in g.items()}
    module = {}
    g = torch.Generator().manual_seed(0)
    for gi, group in enumerate(groups):
        numels = [math.prod(s) for s in group.values()]
        n = sum(numels)
        align = 2 * args.world
        flat = torch.empty((n + align - 1) // align * align, dtype=torch.bfloat16)
        flat[n:] = 0
        chunk = 1 << 26
        for a in range(0, n, chunk):  # values: N(0, 0.02), made in chunks to bound memory
            b = min(n, a + chunk)
            flat[a:b] = (torch.randn(b - a, generator=g) * 0.02).to(torch.bfloat16)
        off = 0
        for (name, shape), k in zip(group.items(), numels):
            module[name] = flat.narrow(0, off, k).view(shape)  # ZeRO's param.data
            off += k
    sd = collections.OrderedDict((k, module[k].detach()) for k in model_order(groups))

    sizes = [t.numel() * t.element_size() for t in sd.values()]
    limit = sum(sizes) / args.shards
    parts, cur, acc = [], collections.OrderedDict(), 0
    for (k, t), s in zip(sd.items(), sizes):
        if cur and acc + s > limit and len(parts) < args.shards - 1:
            parts.append(cur)
            cur, acc = collections.OrderedDict(), 0
        cur[k] = t
        acc += s
    parts.append(cur)
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    weight_map = {}
    files = 0
    for i, part in enumerate(parts):
        name = f"pytorch_model-{i + 1:05d}-of-{len(parts):05d}.bin"
        torch.save(part, out / name)
        files += (out / name).stat().st_size
        weight_map.update({k: name for k in part})
    (out / "pytorch_model.bin.index.json").write_text(json.dumps(
        {"metadata": {"total_size": sum(sizes)}, "weight_map": weight_map}, indent=2, sort_keys=True) + "\n")
    (out / "config.json").write_text(json.dumps({"model_type": "llama", "torch_dtype": "bfloat16",
                                                 "num_hidden_layers": sum(1 for n in shapes if n.endswith("q_proj.weight"))},
                                                indent=2) + "\n")
    print(json.dumps({"parameters": sum(t.numel() for t in sd.values()), "model_bytes": sum(sizes),
                      "file_bytes": files, "shards": len(parts)}))


if __name__ == "__main__":
    main()
