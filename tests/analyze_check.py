#!/usr/bin/env python3
"""`ckpt stats` and `ckpt diff` against values PyTorch computes itself (Debian's python3-torch),
in float64, on the committed fixtures: torch.save files, and the two tags of every DeepSpeed
fixture with `--moments` (masters and Adam moments put together here from the rank files, as
zero_to_fp32 does). Usage: analyze_check.py CKPT_BINARY; exits 1 on mismatch.
"""
import glob
import importlib.abc
import importlib.machinery
import json
import math
import os
import re
import subprocess
import sys
import types

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "torch")
DEEPSPEED = os.path.join(HERE, "data", "deepspeed")
MOMENTS = ("exp_avg", "exp_avg_sq")
sys.path.insert(0, os.path.join(HERE, "..", "tools", "fixtures"))
from make_torch_fixtures import TinyNet, walk  # noqa: E402
sys.modules["__main__"].TinyNet = TinyNet

failures = 0


def close(a, b, rel=1e-9):
    if isinstance(a, str) or isinstance(b, str) or a is None or b is None:
        return str(a) == str(b) or (a is None and (b is None or (isinstance(b, float) and math.isnan(b))))
    if math.isinf(b) or math.isinf(a):
        return a == b
    return abs(a - b) <= rel * max(1.0, abs(b))


def fail(msg):
    global failures
    failures += 1
    print("FAIL", msg)


def torch_tensors(path):
    found = []
    walk(torch.load(path), "", found, set())
    out = {}
    for p, t in found:
        out.setdefault(p, t)
    return out


def ckpt(binary, *args):
    r = subprocess.run([binary, *args, "--json", "-q"], capture_output=True, text=True)
    if r.returncode != 0:
        fail(f"ckpt {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
        return None
    return json.loads(r.stdout)


def check_stats(binary, path):
    doc = ckpt(binary, "stats", path)
    if doc is None:
        return 0
    ref = torch_tensors(path)
    n = 0
    for t in doc["tensors"]:
        if "alias_of" in t:
            continue
        x = ref[t["name"]].detach().reshape(-1)
        if x.is_complex() or x.is_quantized:
            continue
        x = x.to(torch.float64)
        nan = torch.isnan(x)
        v = x[~nan]
        want = {"count": x.numel(), "nans": int(nan.sum()), "infs": int(torch.isinf(x).sum()), "zeros": int((x == 0).sum())}
        for k, w in want.items():
            if t[k] != w:
                fail(f"{path} {t['name']}: {k} {t[k]} != {w}")
        if v.numel():
            finite = bool(torch.isfinite(v).all())
            for k, w in (("min", v.min().item()), ("max", v.max().item()), ("absmax", v.abs().max().item())):
                if not close(t[k], w, 0):
                    fail(f"{path} {t['name']}: {k} {t[k]} != {w}")
            if finite:
                for k, w in (("mean", v.mean().item()), ("l2", v.norm().item())):
                    if not close(t[k], w):
                        fail(f"{path} {t['name']}: {k} {t[k]} != {w}")
                if v.numel() > 1 and not close(t["std"], v.std().item()):
                    fail(f"{path} {t['name']}: std {t['std']} != {v.std().item()}")
        n += 1
    return n


class _DeepSpeedStub(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """DeepSpeed's pickles name its classes (loss scalers, enums); no DeepSpeed is installed here,
    so any `deepspeed.*` global loads as an empty object. Tensors are all this script reads."""

    class Obj:
        def __init__(self, *args, **kwargs):
            pass

        def __setstate__(self, state):
            self.__dict__["state"] = state

    def find_spec(self, name, path, target=None):
        if name == "deepspeed" or name.startswith("deepspeed."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec):
        m = types.ModuleType(spec.name)
        m.__path__ = []

        def attr(name):
            if name.startswith("__"):
                raise AttributeError(name)
            return type(name, (_DeepSpeedStub.Obj,), {})

        m.__getattr__ = attr
        return m

    def exec_module(self, module):
        pass


def zero_tensors(tag_dir):
    """The trainable parameters' fp32 masters and their Adam moments ("<param>/exp_avg") of a
    ZeRO 1/2/3 tag folder, put together from the rank files as zero_to_fp32 does the masters:
    ZeRO-1/2 concatenate each group's rank partitions and cut it in param_shapes order; ZeRO-3
    gives each parameter ceil(n/W) elements of every rank's concatenated sub-groups."""
    def rank(path):
        return int(re.search(r"zero_pp_rank_(\d+)_", path).group(1))

    optim = [torch.load(f, map_location="cpu")["optimizer_state_dict"]
             for f in sorted(glob.glob(os.path.join(tag_dir, "*optim_states.pt")), key=rank)]
    model = torch.load(sorted(glob.glob(os.path.join(tag_dir, "*model_states.pt")))[0], map_location="cpu")
    out = {}
    if "fp32_flat_groups" not in optim[0]:  # ZeRO-1/2 and BF16_Optimizer
        for g, shapes in enumerate(model["param_shapes"]):
            flats = {"": torch.cat([o["single_partition_of_fp32_groups"][g] for o in optim])}
            state = [o["base_optimizer_state"]["state"].get(g, {}) for o in optim]
            for st in MOMENTS:
                if all(st in s for s in state):
                    flats["/" + st] = torch.cat([s[st] for s in state])
            off = 0
            for name, shape in shapes.items():
                for suffix, flat in flats.items():
                    out[name + suffix] = flat[off:off + shape.numel()].view(shape)
                off += shape.numel()
        return out
    world = len(optim)
    per_rank = {"": [torch.cat(list(o["fp32_flat_groups"])) for o in optim]}
    for st in MOMENTS:
        state = [o["optimizer_state_dict"]["state"] for o in optim]
        if all(s and all(st in v for v in s.values()) for s in state):
            per_rank["/" + st] = [torch.cat([s[k][st] for k in sorted(s)]) for s in state]
    off = 0
    for shapes in model["param_shapes"]:
        for name, shape in shapes.items():
            n = shape.numel()
            per = -(-n // world)
            for suffix, flats in per_rank.items():
                out[name + suffix] = torch.cat([f[off:off + per] for f in flats])[:n].view(shape)
            off += per
    return out


def check_zero_diff(binary, root):
    """`ckpt diff --moments` of a DeepSpeed fixture's two tags against torch on what this script
    puts together: every moment it finds must be in the diff, with the same numbers."""
    doc = ckpt(binary, "diff", root, root, "--moments", "--tag-a", "global_step2", "--tag-b", "global_step4")
    if doc is None:
        return 0
    ta, tb = zero_tensors(os.path.join(root, "global_step2")), zero_tensors(os.path.join(root, "global_step4"))
    rows = {t["name"]: t for t in doc["tensors"]}
    for name in ta:
        if "/" in name and name not in rows:
            fail(f"{root}: diff --moments has no {name}")
    return check_rows(root, [t for t in doc["tensors"] if t["name"] in ta], ta, tb)


def check_diff(binary, a, b):
    doc = ckpt(binary, "diff", a, b)
    if doc is None:
        return 0
    return check_rows(a, doc["tensors"], torch_tensors(a), torch_tensors(b))


def check_rows(where, rows, ta, tb):
    n = 0
    for t in rows:
        x, y = ta[t["name"]].detach().contiguous().reshape(-1), tb[t["name"]].detach().contiguous().reshape(-1)
        eq = int((x.view(torch.uint8).reshape(x.numel(), -1) == y.view(torch.uint8).reshape(y.numel(), -1)).all(1).sum()) \
            if x.dtype == y.dtype and x.numel() else 0
        x, y = x.to(torch.float64), y.to(torch.float64)
        d = x - y
        want = {"max_abs_diff": d.abs().max().item() if d.numel() else 0.0, "l2_diff": d.norm().item()}
        if x.norm() > 0 and y.norm() > 0:
            want["cosine"] = (x @ y / (x.norm() * y.norm())).item()
            want["rel_l2"] = (d.norm() / x.norm()).item()
        for k, w in want.items():
            if not close(t[k], w):
                fail(f"diff {where} {t['name']}: {k} {t[k]} != {w}")
        if x.numel() and t["bitwise_equal"] != eq:
            fail(f"diff {where} {t['name']}: bitwise_equal {t['bitwise_equal']} != {eq}")
        n += 1
    return n


def main():
    binary = sys.argv[1]
    n = 0
    for name in ("state_dict.pt", "views.pt", "params.pt", "state_dict_legacy.pt", "dtypes.pt", "nested.pt"):
        n += check_stats(binary, os.path.join(DATA, "torch-1.13", name))
    d = check_diff(binary, os.path.join(DATA, "torch-1.13", "state_dict.pt"), os.path.join(DATA, "torch-2.x", "state_dict.pt"))
    d += check_diff(binary, os.path.join(DATA, "torch-1.13", "views.pt"), os.path.join(DATA, "torch-1.13", "views_legacy.pt"))
    sys.meta_path.insert(0, _DeepSpeedStub())
    z = 0
    for root in sorted(glob.glob(os.path.join(DEEPSPEED, "zero*"))):
        if os.path.isdir(os.path.join(root, "global_step2")) and os.path.isdir(os.path.join(root, "global_step4")):
            z += check_zero_diff(binary, root)
    print(f"stats/diff vs torch {torch.__version__}: {n} tensors' statistics, {d} tensor diffs, "
          f"{z} DeepSpeed tensor and moment diffs, {failures} failures")
    return 1 if failures or not n or not d or not z else 0


if __name__ == "__main__":
    sys.exit(main())
