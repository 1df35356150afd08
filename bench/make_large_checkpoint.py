#!/usr/bin/env python3
"""Writes a large DeepSpeed ZeRO-2 or ZeRO-3 checkpoint (bf16 model, fp32 masters, W ranks) for
the consolidation benchmark, without training a billion-parameter model on CPU.

Every file is built from a real DeepSpeed checkpoint used as a template (tests/data/deepspeed,
made by DeepSpeed itself): its dicts are copied and only the parameter-dependent parts are
recomputed with DeepSpeed's partition math (spec section 5). `--mimic` proves this writer is
faithful: it rebuilds the template from the template's own shapes and values and compares every
file with the original, object for object and tensor for tensor (dtype, shape, values,
requires_grad, storage size). bench/consolidate.sh runs it before generating anything.

Usage:
  make_large_checkpoint.py --stage 2 --mimic            # compatibility check, exit 1 on a difference
  make_large_checkpoint.py --stage 2 --params 1.1e9 OUT # ~4.4 GB of fp32 master weights, W=4
  make_large_checkpoint.py --stage 3 --params 5e8 --tag global_step8 --seed 1 OUT
        # a second tag of OUT: the first one's values after a small update (bench/compare.sh)
  make_large_checkpoint.py --stage 3 --params 1e9 --world 64 OUT   # the scale run (64 ranks)
  make_large_checkpoint.py --stage 3 --params 1e9 --world 64 --hidden 256 --ffn 688 OUT  # 11,000 parameters
"""
import argparse
import collections
import copy
import math
import os
import pathlib
import sys

import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
TEMPLATES = {2: ROOT / "tests/data/deepspeed/zero2_bf16_w4", 3: ROOT / "tests/data/deepspeed/zero3_bf16_w4"}
TAG = "global_step4"


def load(p):
    return torch.load(p, weights_only=False)


class Values:
    """Per-parameter full fp32 master, exp_avg, exp_avg_sq and lp value, flattened."""

    def __init__(self, get):
        self.get = get


def random_values(seed=0):
    import zlib

    def get(name, n):
        # seeded by name: the same values whenever a rank asks again (ZeRO-3 is built rank by rank)
        g = torch.Generator().manual_seed(zlib.crc32(name.encode()))
        master = torch.randn(n, generator=g, dtype=torch.float32) * 0.02
        if seed:  # a later step: the same weights after a small update, as two saves of one run
            g.manual_seed(seed * 1000003 + zlib.crc32(name.encode()))
            master += torch.randn(n, generator=g, dtype=torch.float32) * 1e-4
        return {"master": master, "exp_avg": master * 0.1, "exp_avg_sq": master * master, "lp": master.to(torch.bfloat16)}
    return get


def constant_values():
    """One value per parameter (from its name): for runs where only the layout matters (the 64-rank
    scale run), since ZeRO-3 is built rank by rank and random values would be drawn W times."""
    import zlib

    def get(name, n):
        c = (zlib.crc32(name.encode()) % 1000 - 500) * 1e-5
        master = torch.full((n,), c, dtype=torch.float32)
        return {"master": master, "exp_avg": master * 0.1, "exp_avg_sq": master * master, "lp": master.to(torch.bfloat16)}
    return get


def fragment_address(numel, start):
    from deepspeed.utils.tensor_fragment import fragment_address as fa
    return fa(numel=numel, start=start)


def build_stage2(tpl_model, tpl_optims, groups, W, values, out_dir, shared):
    """groups: list of OrderedDict name -> shape (param_shapes)."""
    model = copy.copy(tpl_model)
    module = collections.OrderedDict()
    for k in tpl_model["buffer_names"]:
        module[k] = tpl_model["module"][k]
    for k, v in tpl_model["frozen_param_fragments"].items():
        module[k] = v
    per_group = []
    for shapes in groups:
        names = list(shapes)
        numels = [math.prod(s) for s in shapes.values()]
        N = sum(numels)
        A = 2 * W
        Na = (N + A - 1) // A * A
        P = Na // W
        lp_flat = torch.zeros(Na, dtype=torch.bfloat16)
        master = torch.zeros(Na, dtype=torch.float32)
        m1 = torch.zeros(Na, dtype=torch.float32)
        m2 = torch.zeros(Na, dtype=torch.float32)
        off = 0
        for name, n in zip(names, numels):
            v = values(name, n)
            lp_flat[off:off + n] = v["lp"]
            master[off:off + n] = v["master"]
            m1[off:off + n] = v["exp_avg"]
            m2[off:off + n] = v["exp_avg_sq"]
            module[name] = lp_flat[off:off + n].view(shapes[name])
            off += n
        per_group.append((names, numels, N, P, master, m1, m2))
    for alias, target in shared.items():
        module[alias] = module[target]
    # keep the template's key order where it names the same parameters
    order = [k for k in tpl_model["module"] if k in module] + [k for k in module if k not in tpl_model["module"]]
    model["module"] = collections.OrderedDict((k, module[k]) for k in order)
    model["param_shapes"] = groups
    model["shared_params"] = dict(shared)
    torch.save(model, out_dir / "mp_rank_00_model_states.pt")

    for r in range(W):
        tpl = tpl_optims[min(r, len(tpl_optims) - 1)]
        o = copy.copy(tpl)
        osd = copy.copy(tpl["optimizer_state_dict"])
        base = copy.copy(osd["base_optimizer_state"])
        state = {}
        parts, paddings, mappings, align = [], [], [], []
        for g, (names, numels, N, P, master, m1, m2) in enumerate(per_group):
            lo, hi = r * P, min((r + 1) * P, N)
            saved = max(0, hi - lo)
            full = master[r * P:(r + 1) * P].clone()
            part = full.narrow(0, 0, saved).detach().requires_grad_(True)  # a view of the padded partition
            parts.append(part)
            paddings.append(P - saved)
            st = copy.copy(tpl["optimizer_state_dict"]["base_optimizer_state"]["state"][g])
            st["exp_avg"] = m1[r * P:(r + 1) * P].clone()
            st["exp_avg_sq"] = m2[r * P:(r + 1) * P].clone()
            state[g] = st
            mp = collections.OrderedDict()
            off = 0
            for name, n in zip(names, numels):
                a, b = max(off, r * P), min(off + n, (r + 1) * P)
                if a < b:
                    mp[name] = fragment_address(numel=b - a, start=a - r * P)
                off += n
            mappings.append(mp)
            align.append([0] * len(names))
        base["state"] = state
        osd["base_optimizer_state"] = base
        osd["single_partition_of_fp32_groups"] = parts
        osd["group_paddings"] = paddings
        osd["param_alignment_paddings"] = align
        osd["partition_count"] = [W] * len(per_group)
        osd["param_slice_mappings"] = mappings
        o["optimizer_state_dict"] = osd
        torch.save(o, out_dir / f"bf16_zero_pp_rank_{r}_mp_rank_00_optim_states.pt")


def build_stage3(tpl_models, tpl_optims, groups, W, values, out_dir, shared, param_order):
    ds_ids = []
    for shapes in groups:
        ids = [param_order.index(n) for n in shapes]
        ds_ids.append(f"{ids[0]}_{ids[-1]}")
    # Rank by rank, so memory holds one rank's partitions, not the whole model's.
    for r in range(W):
        flats, m1s, m2s = [], [], []
        for shapes in groups:
            pieces = ([], [], [])
            for name, shape in shapes.items():
                n = math.prod(shape)
                p = (n + W - 1) // W
                v = values(name, n)
                for key, dst in zip(("master", "exp_avg", "exp_avg_sq"), pieces):
                    part = torch.zeros(p, dtype=torch.float32)  # DeepSpeed's padding is undefined; ours is 0
                    lo, hi = min(r * p, n), min((r + 1) * p, n)
                    part[:hi - lo] = v[key][lo:hi]
                    dst.append(part)
                del v
            flats.append(torch.cat(pieces[0]))
            m1s.append(torch.cat(pieces[1]))
            m2s.append(torch.cat(pieces[2]))
            del pieces
        tm = tpl_models[min(r, len(tpl_models) - 1)]
        m = copy.copy(tm)
        module = collections.OrderedDict()
        for k, v in tm["module"].items():
            if k in tm["buffer_names"] or k in tm["frozen_param_fragments"]:
                module[k] = v
        for shapes in groups:
            for name in shapes:
                module[name] = torch.empty(0, dtype=torch.bfloat16)
        for alias in shared:
            module[alias] = torch.empty(0, dtype=torch.bfloat16)
        order = [k for k in tm["module"] if k in module] + [k for k in module if k not in tm["module"]]
        m["module"] = collections.OrderedDict((k, module[k]) for k in order)
        m["param_shapes"] = groups
        m["shared_params"] = dict(shared) if r == 0 else {}
        torch.save(m, out_dir / f"zero_pp_rank_{r}_mp_rank_00_model_states.pt")

        to = tpl_optims[min(r, len(tpl_optims) - 1)]
        o = copy.copy(to)
        osd = copy.copy(to["optimizer_state_dict"])
        inner = copy.copy(osd["optimizer_state_dict"])
        state = {}
        for s in range(len(groups)):
            st = copy.copy(to["optimizer_state_dict"]["optimizer_state_dict"]["state"][s])
            st["exp_avg"] = m1s[s]
            st["exp_avg_sq"] = m2s[s]
            state[s] = st
        inner["state"] = state
        osd["optimizer_state_dict"] = inner
        for s in range(len(groups)):
            flats[s].ds_id = ds_ids[s]
        osd["fp32_flat_groups"] = flats
        osd["partition_count"] = W
        o["optimizer_state_dict"] = osd
        torch.save(o, out_dir / f"bf16_zero_pp_rank_{r}_mp_rank_00_optim_states.pt")
        del flats, m1s, m2s, o, osd, inner, state


def template(stage):
    d = TEMPLATES[stage] / TAG
    models = [load(p) for p in sorted(d.glob("*model_states.pt"))]
    optims = [load(p) for p in sorted(d.glob("*optim_states.pt"), key=lambda p: int(p.name.split("_rank_")[1].split("_")[0]))]
    return models, optims


def values_from_template(stage, models, optims, W):
    """The template's own values per parameter, reassembled with the partition math."""
    m0 = models[0]
    groups = m0["param_shapes"]
    out = {}
    for g, shapes in enumerate(groups):
        if stage == 2:
            osds = [o["optimizer_state_dict"] for o in optims]
            P = osds[0]["base_optimizer_state"]["state"][g]["exp_avg"].numel()
            master = torch.cat([torch.cat([o["single_partition_of_fp32_groups"][g],
                                           torch.zeros(P - o["single_partition_of_fp32_groups"][g].numel())]) for o in osds])
            m1 = torch.cat([o["base_optimizer_state"]["state"][g]["exp_avg"] for o in osds])
            m2 = torch.cat([o["base_optimizer_state"]["state"][g]["exp_avg_sq"] for o in osds])
            off = 0
            for name, shape in shapes.items():
                n = math.prod(shape)
                out[name] = {"master": master[off:off + n], "exp_avg": m1[off:off + n], "exp_avg_sq": m2[off:off + n],
                             "lp": m0["module"][name].reshape(-1)}
                off += n
        else:
            off = 0
            for name, shape in shapes.items():
                n = math.prod(shape)
                p = (n + W - 1) // W
                vals = {}
                for key, get in (("master", lambda o: o["optimizer_state_dict"]["fp32_flat_groups"][g]),
                                 ("exp_avg", lambda o: o["optimizer_state_dict"]["optimizer_state_dict"]["state"][g]["exp_avg"]),
                                 ("exp_avg_sq", lambda o: o["optimizer_state_dict"]["optimizer_state_dict"]["state"][g]["exp_avg_sq"])):
                    vals[key] = torch.cat([get(o)[off:off + p] for o in optims])[:n]
                vals["lp"] = None
                out[name] = vals
                off += p
    return lambda name, n: out[name]


def same(a, b, path, diffs):
    if isinstance(a, torch.Tensor) or isinstance(b, torch.Tensor):
        if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
            diffs.append(f"{path}: tensor vs {type(b).__name__}")
        elif a.dtype != b.dtype or a.shape != b.shape or a.requires_grad != b.requires_grad:
            diffs.append(f"{path}: {a.dtype}{list(a.shape)} rg={a.requires_grad} vs {b.dtype}{list(b.shape)} rg={b.requires_grad}")
        elif a.numel() and not torch.equal(a.float(), b.float()):
            diffs.append(f"{path}: values differ")
        elif a.untyped_storage().nbytes() != b.untyped_storage().nbytes():
            diffs.append(f"{path}: storage {a.untyped_storage().nbytes()} vs {b.untyped_storage().nbytes()} bytes")
        elif getattr(a, "ds_id", None) != getattr(b, "ds_id", None):
            diffs.append(f"{path}: ds_id {getattr(a, 'ds_id', None)} vs {getattr(b, 'ds_id', None)}")
        return
    if type(a) is not type(b):
        diffs.append(f"{path}: {type(a).__name__} vs {type(b).__name__}")
    elif isinstance(a, dict):
        if list(a.keys()) != list(b.keys()):
            diffs.append(f"{path}: keys {list(a.keys())} vs {list(b.keys())}")
        for k in a:
            if k in b:
                same(a[k], b[k], f"{path}/{k}", diffs)
    elif isinstance(a, (list, tuple)):
        if len(a) != len(b):
            diffs.append(f"{path}: length {len(a)} vs {len(b)}")
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{path}/{i}", diffs)
    elif hasattr(a, "__dict__") and not isinstance(a, type):
        same(vars(a), vars(b), path, diffs)
    elif a != b and not (isinstance(a, float) and math.isnan(a) and math.isnan(b)):
        diffs.append(f"{path}: {a!r} vs {b!r}")


def big_groups(params, hidden=2048, ffn=5504, vocab=32000):
    per_layer = 4 * hidden * hidden + 3 * hidden * ffn
    layers = max(1, round((params - vocab * hidden) / per_layer))
    decay, nodecay = collections.OrderedDict(), collections.OrderedDict()
    decay["model.embed_tokens.weight"] = torch.Size([vocab, hidden])
    for i in range(layers):
        p = f"model.layers.{i}."
        for k in ("q_proj", "k_proj", "v_proj", "o_proj"):
            decay[p + f"self_attn.{k}.weight"] = torch.Size([hidden, hidden])
        decay[p + "mlp.gate_proj.weight"] = torch.Size([ffn, hidden])
        decay[p + "mlp.up_proj.weight"] = torch.Size([ffn, hidden])
        decay[p + "mlp.down_proj.weight"] = torch.Size([hidden, ffn])
        nodecay[p + "input_layernorm.weight"] = torch.Size([hidden])
        nodecay[p + "post_attention_layernorm.weight"] = torch.Size([hidden])
    nodecay["model.norm.weight"] = torch.Size([hidden])
    return [decay, nodecay]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out", nargs="?")
    ap.add_argument("--stage", type=int, choices=(2, 3), required=True)
    ap.add_argument("--params", type=float, default=1.1e9)
    ap.add_argument("--mimic", action="store_true")
    ap.add_argument("--tag", default=TAG, help="tag folder to write (latest then names it)")
    ap.add_argument("--seed", type=int, default=0, help="0: the base values; n > 0: them after a small update")
    ap.add_argument("--world", type=int, default=4, help="data-parallel ranks W")
    ap.add_argument("--hidden", type=int, default=2048, help="hidden size (smaller: more, smaller parameters)")
    ap.add_argument("--ffn", type=int, default=5504, help="MLP size")
    ap.add_argument("--constant-values", action="store_true", help="one value per parameter (fast; layout-only runs)")
    args = ap.parse_args()
    models, optims = template(args.stage)
    W = 4 if args.mimic else args.world
    if args.mimic:
        import tempfile
        out = pathlib.Path(tempfile.mkdtemp()) / TAG
        out.mkdir(parents=True)
        groups = models[0]["param_shapes"]
        values = values_from_template(args.stage, models, optims, W)
        shared = models[0]["shared_params"]
        if args.stage == 2:
            build_stage2(models[0], optims, groups, W, values, out, shared)
        else:
            order = [k for k in models[0]["module"] if k not in models[0]["buffer_names"] and k not in shared]
            build_stage3(models, optims, groups, W, values, out, shared, order)
        diffs = []
        real = TEMPLATES[args.stage] / TAG
        for f in sorted(real.glob("*.pt")):
            same(load(f), load(out / f.name), f.name, diffs)
        for d in diffs:
            print("DIFF", d)
        print(f"mimic stage {args.stage}: {len(list(real.glob('*.pt')))} files compared, {len(diffs)} differences")
        return 1 if diffs else 0
    out = pathlib.Path(args.out)
    tagdir = out / args.tag
    tagdir.mkdir(parents=True, exist_ok=True)
    groups = big_groups(args.params, hidden=args.hidden, ffn=args.ffn)
    n = sum(math.prod(s) for g in groups for s in g.values())
    print(f"stage {args.stage}: {n / 1e9:.2f}B parameters, {n * 4 / 1e9:.1f} GB of fp32 master weights, W={W}", flush=True)
    values = constant_values() if args.constant_values else random_values(args.seed)
    if args.stage == 2:
        build_stage2(models[0], optims, groups, W, values, tagdir, {})
    else:
        order = [k for g in groups for k in g]
        build_stage3(models, optims, groups, W, values, tagdir, {}, order)
    (out / "latest").write_text(args.tag)  # last: a folder without `latest` is an unfinished one
    return 0


if __name__ == "__main__":
    sys.exit(main())
