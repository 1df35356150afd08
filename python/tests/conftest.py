"""Shared helpers: where the committed fixtures are, and the hash the fixture generators record
(sha256 of the tensor's bytes, as tools/fixtures/*.py compute it with the real tools)."""
import hashlib
import json
import os
import pathlib
import shutil

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"


def ckpt_binary():
    """The `ckpt` command: CKPT_BINARY (ctest sets it to this tree's), else on PATH, else the newest
    one built in this repository."""
    if os.environ.get("CKPT_BINARY"):
        return os.environ["CKPT_BINARY"]
    if shutil.which("ckpt"):
        return shutil.which("ckpt")
    built = sorted(ROOT.glob("build/*/cli/ckpt"), key=lambda p: p.stat().st_mtime, reverse=True)
    if not built:
        raise AssertionError("no ckpt binary was found (set CKPT_BINARY)")
    return str(built[0])


def sha(t):
    """tools/fixtures' sha(): sha256 of a tensor's bytes (torch or numpy)."""
    import numpy as np
    if isinstance(t, np.ndarray):
        return hashlib.sha256(np.ascontiguousarray(t).view(np.uint8).tobytes() if t.size else b"").hexdigest()
    import torch
    return hashlib.sha256(t.contiguous().reshape(-1).view(torch.uint8).numpy().tobytes() if t.numel() else b"").hexdigest()


def dtype_name(t):
    return str(t.dtype).replace("torch.", "")


def expectations(folder):
    """(case path, expectation) for each <case>.expect.json in tests/data/<folder>."""
    out = []
    for f in sorted((DATA / folder).glob("*.expect.json")):
        case = f.with_name(f.name[: -len(".expect.json")])
        out.append((case, json.loads(f.read_text())))
    if not out:
        raise AssertionError(f"no fixtures in {DATA / folder}")
    return out


def ids(cases):
    return [c.name for c, _ in cases]


@pytest.fixture
def file_mappings():
    """{path: [(begin, end)]} of the files this process maps (from /proc/self/maps)."""
    def read():
        maps = {}
        for line in open("/proc/self/maps"):
            parts = line.split(maxsplit=5)
            if len(parts) == 6 and parts[5].startswith("/"):
                lo, hi = (int(x, 16) for x in parts[0].split("-"))
                maps.setdefault(parts[5].strip(), []).append((lo, hi))
        return maps
    return read
