#!/usr/bin/env python3
"""The Python way of comparing two saves, for bench/compare.sh: load the two consolidated models
that zero_to_fp32 wrote (safetensors folders) and compute what `ckpt diff` reports per tensor, as
a user would with torch: max |a-b|, relative L2, cosine, bitwise-equal count, mean and std of
both sides. Prints one JSON object name -> metrics.

Usage: compare_python.py DIR_A DIR_B
"""
import glob
import json
import sys

import torch
from safetensors.torch import load_file


def load(folder):
    out = {}
    for f in sorted(glob.glob(folder + "/*.safetensors")):
        out.update(load_file(f))
    return out


a, b = load(sys.argv[1]), load(sys.argv[2])
result = {}
for name in sorted(a.keys() & b.keys()):
    x, y = a[name].flatten(), b[name].flatten()
    # bitwise: every byte of an element equal, whatever its dtype
    bitwise = int((x.view(torch.uint8).view(-1, x.element_size()) ==
                   y.view(torch.uint8).view(-1, y.element_size())).all(dim=1).sum().item())
    # In float64, as ckpt accumulates: in float32 torch's cosine of two nearby 5e7-element
    # tensors comes out as 1.0008 (measured), which would make the check below meaningless.
    x, y = x.double(), y.double()
    d = x - y
    result[name] = {
        "max_abs_diff": d.abs().max().item(),
        "rel_l2": (d.norm() / x.norm()).item() if x.norm() > 0 else 0.0,
        "cosine": torch.nn.functional.cosine_similarity(x, y, dim=0).item(),
        "bitwise_equal": bitwise,
        "mean_a": x.mean().item(), "std_a": x.std().item(),
        "mean_b": y.mean().item(), "std_b": y.std().item(),
    }
json.dump(result, sys.stdout)
