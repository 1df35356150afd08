#!/usr/bin/env python3
"""`ckpt stats` and `ckpt diff` against values PyTorch computes itself (Debian's python3-torch),
in float64, on the committed fixtures. Usage: analyze_check.py CKPT_BINARY; exits 1 on mismatch.
"""
import json
import math
import os
import subprocess
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.join(HERE, "data", "torch")
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


def check_diff(binary, a, b):
    doc = ckpt(binary, "diff", a, b)
    if doc is None:
        return 0
    ta, tb = torch_tensors(a), torch_tensors(b)
    n = 0
    for t in doc["tensors"]:
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
                fail(f"diff {t['name']}: {k} {t[k]} != {w}")
        if x.numel() and t["bitwise_equal"] != eq:
            fail(f"diff {t['name']}: bitwise_equal {t['bitwise_equal']} != {eq}")
        n += 1
    return n


def main():
    binary = sys.argv[1]
    n = 0
    for name in ("state_dict.pt", "views.pt", "params.pt", "state_dict_legacy.pt", "dtypes.pt", "nested.pt"):
        n += check_stats(binary, os.path.join(DATA, "torch-1.13", name))
    d = check_diff(binary, os.path.join(DATA, "torch-1.13", "state_dict.pt"), os.path.join(DATA, "torch-2.x", "state_dict.pt"))
    d += check_diff(binary, os.path.join(DATA, "torch-1.13", "views.pt"), os.path.join(DATA, "torch-1.13", "views_legacy.pt"))
    print(f"stats/diff vs torch {torch.__version__}: {n} tensors' statistics, {d} tensor diffs, {failures} failures")
    return 1 if failures or not n or not d else 0


if __name__ == "__main__":
    sys.exit(main())
