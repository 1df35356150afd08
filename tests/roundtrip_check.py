#!/usr/bin/env python3
"""Round trip through real PyTorch: every fixture is exported with `ckpt export` and the
safetensors output is compared with what torch.load gives for the same file.

Uses Debian's python3-torch (1.13) and numpy only: the safetensors file is parsed here by hand
(8-byte length, JSON header, raw little-endian data), which also checks our header layout. Files
that this PyTorch cannot load (saved by a newer PyTorch with newer dtypes) are compared with the
sha256 expectations their generator recorded instead, and reported as such.

Usage: roundtrip_check.py CKPT_BINARY FIXTURE_DIR... ; exits non-zero on any mismatch.
"""
import glob
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

# Pickled modules in the fixtures were saved from the generator's __main__.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tools", "fixtures"))
from make_torch_fixtures import TinyNet, walk  # noqa: E402
sys.modules["__main__"].TinyNet = TinyNet


def read_safetensors(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    assert header.get("__metadata__", {}).get("format") == "pt", "missing format=pt metadata"
    base = 8 + n
    out = {}
    end = 0
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        out[name] = (info["dtype"], info["shape"], data[base + b:base + e])
        end = max(end, e)
    assert base + end == len(data), "trailing or missing bytes"
    return out, header.get("__metadata__", {})


def torch_bytes(t):
    t = t.detach().contiguous().reshape(-1)
    if t.numel() == 0:
        return b""
    return t.view(torch.uint8).numpy().tobytes()


def tensors_of(obj):
    """path -> tensor, walked exactly as the expectations were (first occurrence wins)."""
    found = []
    walk(obj, "", found, set())
    out = {}
    for path, t in found:
        out.setdefault(path, t)
    return out


def main():
    ckpt = sys.argv[1]
    failures = 0
    checked = {"torch.load": 0, "sha256": 0}
    tmp = tempfile.mkdtemp(prefix="ckpt-roundtrip-")
    for d in sys.argv[2:]:
        for exp_path in sorted(glob.glob(os.path.join(d, "*.expect.json"))):
            exp = json.load(open(exp_path))
            src = os.path.join(d, exp["file"])
            if exp["dangerous"]:
                continue
            out = os.path.join(tmp, os.path.basename(d) + "-" + exp["file"] + ".safetensors")
            extra = [] if exp["exportable"] else ["--skip-unsupported"]
            r = subprocess.run([ckpt, "export", "-q", *extra, src, out], capture_output=True, text=True)
            if r.returncode != 0:
                print(f"FAIL {src}: ckpt export exited {r.returncode}: {r.stderr.strip()}")
                failures += 1
                continue
            tensors, meta = read_safetensors(out)
            try:
                loaded = torch.load(src)
                reference = tensors_of(loaded)
                how = "torch.load"
            except Exception as e:  # newer dtypes or classes this PyTorch lacks
                reference = None
                how = "sha256"
                reason = str(e).splitlines()[0][:80]
            if reference is not None:
                for name, t in reference.items():
                    if name in meta and name not in tensors:
                        name = meta[name]  # alias written once
                    if name not in tensors and not exp["exportable"]:
                        continue  # left out by --skip-unsupported; the C++ tests check which
                    if name not in tensors:
                        print(f"FAIL {src}: tensor {name} missing from export")
                        failures += 1
                        continue
                    dt, shape, data = tensors[name]
                    if list(t.shape) != shape or torch_bytes(t) != data:
                        print(f"FAIL {src}: tensor {name} differs from torch.load ({dt} {shape})")
                        failures += 1
            else:
                for t in exp["tensors"]:
                    if t["path"] not in tensors and t["path"] not in meta and not exp["exportable"]:
                        continue
                    name = meta.get(t["path"], t["path"]) if t["path"] not in tensors else t["path"]
                    if name not in tensors or hashlib.sha256(tensors[name][2]).hexdigest() != t["sha256"]:
                        print(f"FAIL {src}: tensor {t['path']} differs from its expectation")
                        failures += 1
            checked[how] += 1
            print(f"ok   {src}: {len(tensors)} tensors, checked against {how}"
                  + ("" if how == "torch.load" else f" (torch {torch.__version__} cannot load it: {reason})"))
    # DeepSpeed consolidation to .bin: every shard must load with torch.load(weights_only=True)
    # and hold exactly what zero_to_fp32 wrote.
    ds = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "deepspeed")
    shards_loaded = 0
    for name in ("zero2_bf16_w2", "zero3_fp32_w4"):
        exp = json.load(open(os.path.join(ds, name + ".expect.json")))
        ref = {t["name"]: t for t in exp["tags"]["global_step4"]["bin_sharded"]["tensors"]}
        out = os.path.join(tmp, name)
        r = subprocess.run([ckpt, "export", "-q", "--format", "bin", "--max-shard-size", "2KB",
                            os.path.join(ds, name), out], capture_output=True, text=True)
        if r.returncode != 0:
            print(f"FAIL {name}: ckpt export exited {r.returncode}: {r.stderr.strip()}")
            failures += 1
            continue
        got = {}
        for f in sorted(os.listdir(out)):
            if f.endswith(".bin"):
                got.update(torch.load(os.path.join(out, f), weights_only=True))
                shards_loaded += 1
        for k, t in ref.items():
            if k not in got or hashlib.sha256(torch_bytes(got[k])).hexdigest() != t["sha256"]:
                print(f"FAIL {name}: {k} differs from zero_to_fp32's output after torch.load(weights_only=True)")
                failures += 1
    print(f"ok   {shards_loaded} consolidated .bin shards load with torch.load(weights_only=True)")
    print(f"roundtrip: {checked['torch.load']} files against torch.load {torch.__version__}, "
          f"{checked['sha256']} against recorded sha256, {failures} failures")
    return 1 if failures or not checked["torch.load"] else 0


if __name__ == "__main__":
    sys.exit(main())
