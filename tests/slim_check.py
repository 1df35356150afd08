#!/usr/bin/env python3
"""`ckpt slim` through real PyTorch: every fixture in tests/data/bloat is slimmed and both files
are loaded with torch.load and compared object for object.

Usage:
  slim_check.py CKPT_BINARY [--no-inspect] [--allow-restride] [FIXTURE_DIR...]
                                               (default FIXTURE_DIR: tests/data/bloat/*)
  slim_check.py --self-test [FIXTURE_DIR...]   (no binary: checks this checker)

Per fixture (a .pt with its .expect.json, or a shard folder such as zero2_bf16_3303/):
- `CKPT slim PATH OUT` into a temporary folder (a folder is slimmed as a folder: same tree, every
  torch.save file slimmed, everything else copied byte for byte);
- torch.load(PATH) and torch.load(OUT) (weights_only=False) must be equal object for object: same
  types (dict/OrderedDict/list/tuple/torch.Size, Parameter vs Tensor), same keys in the same
  order, same non-tensor values, attributes of dict subclasses (a state dict's _metadata), the
  same object identities (a tensor or container met twice is met twice in both), tensors equal
  in dtype, shape, stride, requires_grad and values bit for bit;
- sharing: two tensors share a storage in OUT only if they did in PATH; views whose bytes overlap
  in PATH share one storage in OUT at the same relative byte offset, and writing through one is
  seen through the other exactly as in PATH; views that shared a storage without overlapping may
  be split, but if they still share they must still not overlap; zero-element views are free;
- torch.load(OUT, weights_only=True) works whenever torch.load(PATH, weights_only=True) does;
- a file that is not bloated (nothing to reclaim) is copied as is (byte-identical; a legacy file
  may instead come back as an equal zip); a bloated one comes back as a torch.save zip no larger
  than the union of its views' extents + its pickle + 4 KiB per storage + 4 KiB, with no storage
  byte outside every view's extent (a slim that keeps strides cannot drop the gaps inside one
  view: `every other row` keeps its odd rows; "used" bytes, the union of the bytes the views
  reach, are printed beside it);
- --allow-restride: a view that overlaps no other view may come back with other strides
  (compacted to the bytes it reaches; values, shape and dtype still equal); one that overlaps
  another must keep its strides. The size bound is unchanged: compacting is allowed, not required.
- unless --no-inspect: `CKPT inspect PATH --json` has a "bloat" object whose file_bytes,
  storage_bytes, used_bytes, reclaimable_bytes (and overhead_bytes = file - storages, if present)
  and per-storage key, nbytes, used_bytes and tensor paths are those the generator recorded (a
  tensor object met twice may be listed under both paths or the first only) (reported after the slim checks; --no-inspect skips).
Files this PyTorch cannot load (dtypes newer than 1.13) are read with the generator's raw reader
instead (make_bloat_fixtures.read_file_refs): same comparison, without the write test.

--self-test: every fixture compared with itself must pass; deliberately altered copies (a value,
a stride, a broken tie, a new overlap, a container type, a Parameter, a non-tensor value) must
fail; and a reference slim written here in Python (span union per storage, offsets remapped)
must pass every check, size bound included.

Prints one line per fixture and ends with `slim_check: N passed, M failed`; exit 1 on failure.
Runs with Debian's python3-torch (1.13) and numpy.
"""
import argparse
import filecmp
import glob
import json
import math
import os
import pathlib
import shutil
import subprocess
import sys
import tempfile
import zipfile

import numpy as np
import torch

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools" / "fixtures"))
from make_bloat_fixtures import TRef, read_file_refs, reach_mask, runs, span_mask, walk_refs  # noqa: E402
from make_torch_fixtures import dtype_name, storage_of, values_bytes, walk  # noqa: E402

PER_STORAGE = 4096
FIXED = 4096
# --allow-restride: a view that overlaps no other view may come back with other strides (compacted
# to the bytes it reaches); the size bound stays the extents' union, so compacting is allowed, not
# required, and restriding that grows a view (an expanded view made contiguous) still fails.
ALLOW_RESTRIDE = False


class Mismatch(Exception):
    pass


# ---------------------------------------------------------------------------------------------
# Loading: torch.load, or the raw reader when this PyTorch cannot.

def torch_load(path, weights_only=False):
    if "weights_only" in torch.load.__code__.co_varnames:
        return torch.load(path, map_location="cpu", weights_only=weights_only)
    if weights_only:
        raise RuntimeError("this PyTorch has no weights_only")
    return torch.load(path, map_location="cpu")


def loads_weights_only(path):
    try:
        torch_load(path, True)
        return True
    except Exception:
        return False


class Loaded:
    """A loaded file: the object and how tensors are seen ("torch" or "raw")."""

    def __init__(self, path):
        self.path = path
        try:
            self.obj = torch_load(path)
            self.kind = "torch"
        except Exception as e:
            self.obj = read_file_refs(path)[0]
            self.kind = "raw"
            self.why = f"{type(e).__name__}"

    def is_tensor(self, x):
        return isinstance(x, TRef) if self.kind == "raw" else isinstance(x, torch.Tensor)

    def tensors(self):
        out = []
        (walk_refs if self.kind == "raw" else walk)(self.obj, "", out, set())
        return out


class View:
    """What the sharing checks need of a tensor, torch or raw."""

    def __init__(self, t, kind):
        if kind == "raw":
            self.dtype, self.shape, self.stride = t.dtype, t.shape, t.stride
            self.numel, self.esize, self.offset = t.numel, t.esize, t.offset
            self.sid, self.snbytes = id(t.storage), t.storage.nbytes
        else:
            self.dtype, self.shape, self.stride = dtype_name(t.dtype), tuple(t.shape), tuple(t.stride())
            self.numel, self.esize, self.offset = t.numel(), t.element_size(), t.storage_offset()
            ptr, self.snbytes = storage_of(t)
            self.sid = ptr if self.snbytes else None
        self._mask = None

    @property
    def byte_offset(self):
        return self.offset * self.esize

    def mask(self):
        if self._mask is None:
            self._mask = reach_mask(self.snbytes, self.offset, self.shape, self.stride, self.esize)
        return self._mask


def tensor_values(t, kind):
    return t.values() if kind == "raw" else values_bytes(t)


def tensor_desc(t, kind):
    if kind == "raw":
        return (t.dtype, list(t.shape), list(t.stride), t.requires_grad, t.parameter)
    return (dtype_name(t.dtype), list(t.shape), list(t.stride()), bool(t.requires_grad),
            type(t).__name__)


# ---------------------------------------------------------------------------------------------
# Object-for-object comparison.

def same_scalar(a, b):
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def compare_obj(A, B, restrided=None):
    """Raises Mismatch on the first difference. Returns the list of (path, ta, tb) tensor pairs.
    With `restrided` (a list), a stride difference is recorded there instead of raised."""
    ida, idb = {}, {}
    pairs = []

    def identity(a, b, path):
        """True when a was met before (don't descend again)."""
        ka, kb = id(a), id(b)
        if ka in ida or kb in idb:
            if ida.get(ka) != kb or idb.get(kb) != ka:
                raise Mismatch(f"{path or '/'}: object identity differs (an object met twice in one "
                               f"file is not the same object twice in the other)")
            return True
        ida[ka], idb[kb] = kb, ka
        return False

    def rec(a, b, path):
        ta, tb = A.is_tensor(a), B.is_tensor(b)
        if ta or tb:
            if not (ta and tb):
                raise Mismatch(f"{path}: tensor vs {type(b if ta else a).__name__}")
            if identity(a, b, path):
                return
            da, db = tensor_desc(a, A.kind), tensor_desc(b, B.kind)
            names = ("dtype", "shape", "stride", "requires_grad", "type")
            for n, x, y in zip(names, da, db):
                if A.kind == B.kind or n != "type":
                    if x != y and n == "stride" and restrided is not None:
                        restrided.append(path)
                    elif x != y:
                        raise Mismatch(f"{path}: {n} {x} vs {y}")
            if tensor_values(a, A.kind) != tensor_values(b, B.kind):
                raise Mismatch(f"{path}: values differ")
            pairs.append((path, a, b))
            return
        if type(a) is not type(b):
            raise Mismatch(f"{path or '/'}: {type(a).__name__} vs {type(b).__name__}")
        join = (lambda k: f"{path}/{k}" if path else str(k))
        if isinstance(a, (dict, list)) or (isinstance(a, tuple) and len(a)) or \
                (hasattr(a, "__dict__") and not isinstance(a, type)):
            if identity(a, b, path):
                return
        if isinstance(a, dict):
            ka, kb = list(a.keys()), list(b.keys())
            if len(ka) != len(kb) or any(type(x) is not type(y) or x != y for x, y in zip(ka, kb)):
                raise Mismatch(f"{path or '/'}: keys {ka[:8]} vs {kb[:8]}")
            for k in ka:
                rec(a[k], b[k], join(k))
            if hasattr(a, "__dict__"):
                rec(vars(a), vars(b), join("__dict__"))
        elif isinstance(a, (list, tuple)):
            if len(a) != len(b):
                raise Mismatch(f"{path or '/'}: length {len(a)} vs {len(b)}")
            for i, (x, y) in enumerate(zip(a, b)):
                rec(x, y, join(i))
        elif hasattr(a, "__dict__") and not isinstance(a, type):
            rec(vars(a), vars(b), join("__dict__"))
        elif not same_scalar(a, b):
            raise Mismatch(f"{path or '/'}: {a!r} vs {b!r}")

    rec(A.obj, B.obj, "")
    return pairs


def compare_sharing(pairs, A, B, restrided=()):
    """The sharing rules; returns (number of shared-but-disjoint pairs that were split,
    overlapping pairs)."""
    items = [(p, View(a, A.kind), View(b, B.kind), a, b) for p, a, b in pairs]
    items = [x for x in items if x[1].numel > 0]
    restrided = set(restrided)
    split = 0
    overlapping = []
    for i in range(len(items)):
        pi, ai, bi = items[i][:3]
        for j in range(i + 1, len(items)):
            pj, aj, bj = items[j][:3]
            sa, sb = ai.sid == aj.sid, bi.sid == bj.sid
            if sb and not sa:
                raise Mismatch(f"{pi} and {pj} share a storage in OUT but not in PATH")
            if not sa:
                continue
            oa = bool((ai.mask() & aj.mask()).any())
            if oa and (pi in restrided or pj in restrided) and ai is not aj:
                raise Mismatch(f"{pi if pi in restrided else pj}: stride changed, but it overlaps "
                               f"{pj if pi in restrided else pi} in PATH")
            if not sb:
                if oa:
                    raise Mismatch(f"{pi} and {pj} overlap in PATH but no longer share a storage in OUT")
                split += 1
                continue
            ob = bool((bi.mask() & bj.mask()).any())
            if oa != ob:
                raise Mismatch(f"{pi} and {pj}: {'overlapping' if oa else 'disjoint'} in PATH, "
                               f"{'overlapping' if ob else 'disjoint'} in OUT")
            if oa:
                da, db = ai.byte_offset - aj.byte_offset, bi.byte_offset - bj.byte_offset
                if da != db:
                    raise Mismatch(f"{pi} and {pj}: {da} bytes apart in PATH, {db} in OUT")
                overlapping.append((pi, pj))
    return split, overlapping


def write_test(path_a, path_b, overlapping):
    """Writing through one overlapping view is seen through the other exactly as in PATH."""
    if not overlapping:
        return 0
    A, B = Loaded(path_a), Loaded(path_b)
    ta, tb = dict(A.tensors()), dict(B.tensors())
    for k, (pi, pj) in enumerate(overlapping):
        for t in (ta[pi], tb[pi]):
            with torch.no_grad():
                v = True if t.dtype == torch.bool else (k % 97) + 1
                t.detach().fill_(v)
        if values_bytes(ta[pj]) != values_bytes(tb[pj]):
            raise Mismatch(f"writing through {pi} changes {pj} differently in OUT than in PATH")
        if values_bytes(ta[pi]) != values_bytes(tb[pi]):
            raise Mismatch(f"writing through {pi} reads back differently in OUT than in PATH")
    return len(overlapping)


def compare_files(path, out):
    """Raises Mismatch; returns a short note."""
    A, B = Loaded(path), Loaded(out)
    restrided = [] if ALLOW_RESTRIDE else None
    pairs = compare_obj(A, B, restrided)
    split, overlapping = compare_sharing(pairs, A, B, restrided or ())
    note = []
    if restrided:
        note.append(f"{len(restrided)} views restrided")
    if A.kind == "torch" and B.kind == "torch":
        n = write_test(path, out, overlapping)
        if n:
            note.append(f"{n} overlaps written through")
    else:
        note.append(f"raw reader ({getattr(A, 'why', '') or getattr(B, 'why', '')})")
        if A.kind != B.kind:
            raise Mismatch(f"PATH loads with {A.kind}, OUT with {B.kind}")
    if A.kind == "torch" and loads_weights_only(path):
        if not loads_weights_only(out):
            raise Mismatch("PATH loads with weights_only=True, OUT does not")
        note.append("weights_only")
    if split:
        note.append(f"{split} disjoint pairs split")
    return ", ".join(note)


# ---------------------------------------------------------------------------------------------
# Size and the inspect "bloat" object.

def out_stats(out):
    _, storages, fmt, pkl = read_file_refs(out)
    return fmt, len(storages), sum(s.nbytes for s in storages.values()), pkl


def check_size(path, out, exp):
    size_in, size_out = os.path.getsize(path), os.path.getsize(out)
    if not exp["bloated"]:
        if filecmp.cmp(path, out, shallow=False):
            return f"{size_in} bytes, copied as is"
        if exp["format"] == "legacy":
            fmt, n, sbytes, pkl = out_stats(out)
            if fmt == "zip" and sbytes == exp["storage_bytes"]:
                return f"{size_in} -> {size_out} bytes (legacy rewritten as zip)"
        raise Mismatch("not bloated, but OUT is not a byte copy of PATH")
    with open(out, "rb") as f:
        if f.read(4) != b"PK\x03\x04":
            raise Mismatch("OUT is not a torch.save zip file")
    fmt, n, sbytes, pkl = out_stats(out)
    need = exp["span_bytes"]
    bound = need + pkl + PER_STORAGE * n + FIXED
    msg = (f"{size_in} -> {size_out} bytes (used {exp['used_bytes']}, span {need}, "
           f"storages {sbytes}, pickle {pkl})")
    if size_out > bound:
        raise Mismatch(f"{msg}: larger than span + pickle + {PER_STORAGE}/storage + {FIXED} = {bound}")
    if sbytes > need:
        raise Mismatch(f"{msg}: OUT's storages hold {sbytes - need} bytes more than its views' extents")
    return msg


def check_inspect(ckpt, path, exp):
    r = subprocess.run([ckpt, "inspect", str(path), "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise Mismatch(f"inspect exit {r.returncode}: {r.stderr.strip()[:200]}")
    bloat = json.loads(r.stdout).get("bloat")
    if not isinstance(bloat, dict):
        raise Mismatch("inspect --json has no \"bloat\" object")
    for k in ("file_bytes", "storage_bytes", "used_bytes", "reclaimable_bytes"):
        if bloat.get(k) != exp[k]:
            raise Mismatch(f"inspect bloat.{k} = {bloat.get(k)}, expected {exp[k]}")
    got = {s.get("key"): s for s in bloat.get("storages", [])}
    want = {s["key"]: s for s in exp["storages"]}
    if set(got) != set(want):
        raise Mismatch(f"inspect bloat.storages keys {sorted(got)[:6]} vs {sorted(want)[:6]}")
    if "overhead_bytes" in bloat and bloat["overhead_bytes"] != exp["file_bytes"] - exp["storage_bytes"]:
        raise Mismatch(f"inspect bloat.overhead_bytes = {bloat['overhead_bytes']}, expected "
                       f"{exp['file_bytes'] - exp['storage_bytes']} (file - storages)")
    # a tensor object met a second time (pickle memo: `{"a": t, "b": t}`) may be listed or not
    refs, seen, memo_aliases = [], set(), set()
    walk_refs(read_file_refs(path)[0], "", refs, set())
    for p, r in refs:
        if id(r) in seen:
            memo_aliases.add(p)
        seen.add(id(r))
    for k, w in want.items():
        g = got[k]
        for f in ("nbytes", "used_bytes"):
            if g.get(f) != w[f]:
                raise Mismatch(f"inspect bloat storage {k}: {f} = {g.get(f)}, expected {w[f]}")
        listed = sorted(g.get("tensors", []))
        if listed != sorted(w["tensors"]) and listed != sorted(t for t in w["tensors"] if t not in memo_aliases):
            raise Mismatch(f"inspect bloat storage {k}: tensors {g.get('tensors')} vs {w['tensors']}")


# ---------------------------------------------------------------------------------------------
# Fixtures.

def fixtures(dirs):
    out = []
    for d in dirs:
        for e in sorted(glob.glob(os.path.join(d, "*.expect.json"))):
            exp = json.load(open(e))
            name = os.path.join(os.path.basename(d), exp.get("file") or exp["folder"])
            src = os.path.join(d, exp.get("file") or exp["folder"])
            out.append((name, src, exp))
    return out


def file_exps(src, exp):
    """[(relative name, expectation)] of the torch files of a fixture."""
    if "files" in exp:
        return list(exp["files"].items())
    return [("", exp)]


def check_fixture(ckpt, src, exp, out, inspect, size=True):
    notes = []
    if "files" in exp:
        want = sorted(str(p.relative_to(src)) for p in pathlib.Path(src).rglob("*") if p.is_file())
        got = sorted(str(p.relative_to(out)) for p in pathlib.Path(out).rglob("*") if p.is_file())
        if want != got:
            raise Mismatch(f"OUT folder holds {got}, expected {want}")
        for c in exp["copied"]:
            if not filecmp.cmp(os.path.join(src, c["file"]), os.path.join(out, c["file"]), shallow=False):
                raise Mismatch(f"{c['file']}: not copied as is")
    total_in = total_out = 0
    inspect_errors = []
    for rel, fe in file_exps(src, exp):
        p, o = (os.path.join(src, rel), os.path.join(out, rel)) if rel else (src, out)
        if inspect:  # reported after the slim checks, which are the point
            try:
                check_inspect(ckpt, p, fe)
            except Mismatch as e:
                inspect_errors.append(f"{rel + ': ' if rel else ''}{e}")
        try:
            note = compare_files(p, o)
            if size:
                note = check_size(p, o, fe) + (f"; {note}" if note else "")
        except Mismatch as e:
            raise Mismatch(f"{rel + ': ' if rel else ''}{e}" +
                           (f" [and {inspect_errors[0]}]" if inspect_errors else ""))
        total_in += os.path.getsize(p)
        total_out += os.path.getsize(o)
        notes.append(f"{rel + ': ' if rel else ''}{note}")
    if "files" in exp:
        notes.insert(0, f"{total_in} -> {total_out} bytes in {len(notes)} files")
    if inspect_errors:
        raise Mismatch(f"slim ok ({'; '.join(notes)}), but {inspect_errors[0]}")
    return "; ".join(notes)


def run_slim(ckpt, src, out):
    r = subprocess.run([ckpt, "slim", "-q", str(src), str(out)], capture_output=True, text=True)
    if r.returncode != 0:
        raise Mismatch(f"ckpt slim exit {r.returncode}: {(r.stderr.strip() or r.stdout.strip())[:300]}")


# ---------------------------------------------------------------------------------------------
# The reference slim (Python): what the checks accept, proven to be achievable.

def reference_slim_file(src, dst):
    obj = torch_load(src)
    found = []
    walk(obj, "", found, set())
    groups = {}
    for _, t in found:
        ptr, nbytes = storage_of(t)
        if nbytes:
            groups.setdefault(ptr, {})[id(t)] = t
    spans, reclaim = {}, False
    for ptr, ts in groups.items():
        any_t = next(iter(ts.values()))
        nbytes = storage_of(any_t)[1]
        m = np.zeros(nbytes, dtype=bool)
        for t in ts.values():
            m |= span_mask(nbytes, t.storage_offset(), tuple(t.shape), tuple(t.stride()), t.element_size())
        spans[ptr] = runs(m)
        reclaim |= int(m.sum()) < nbytes
    if not reclaim:
        shutil.copyfile(src, dst)
        return
    new = {}
    for ptr, ts in groups.items():
        any_t = next(iter(ts.values()))
        e, dt = any_t.element_size(), any_t.dtype
        nbytes = storage_of(any_t)[1]
        flat = torch.empty(0, dtype=dt).set_(any_t.storage(), 0, (nbytes // e,), (1,))
        pieces, starts, pos = [], [], 0
        for a, b in spans[ptr]:
            pieces.append(flat[a // e:b // e])
            starts.append((a, b, pos))
            pos += (b - a) // e
        kept = torch.cat(pieces) if pieces else torch.empty(0, dtype=dt)
        for t in ts.values():
            if t.numel() == 0:
                off = 0
            else:
                first = t.storage_offset() * e
                a, b, p = next(x for x in starts if x[0] <= first < x[1])
                off = p + (first - a) // e
            v = torch.empty(0, dtype=dt).set_(kept.storage(), off, tuple(t.shape), tuple(t.stride()))
            if isinstance(t, torch.nn.Parameter):
                v = torch.nn.Parameter(v, requires_grad=t.requires_grad)
            else:
                v.requires_grad_(t.requires_grad)
            new[id(t)] = v
    memo = {}

    def rebuild(x):
        if isinstance(x, torch.Tensor):
            return new.get(id(x), x)
        if id(x) in memo:
            return memo[id(x)]
        if isinstance(x, dict):
            y = type(x)()
            memo[id(x)] = y
            for k, v in x.items():
                y[k] = rebuild(v)
            if hasattr(x, "__dict__"):
                y.__dict__.update({k: rebuild(v) for k, v in vars(x).items()})
            return y
        if isinstance(x, list):
            y = []
            memo[id(x)] = y
            y.extend(rebuild(v) for v in x)
            return y
        if isinstance(x, tuple) and len(x):
            y = type(x)([rebuild(v) for v in x])
            memo[id(x)] = y
            return y
        return x
    torch.save(rebuild(obj), dst)


def is_torch_file(p):
    with open(p, "rb") as f:
        head = f.read(4)
    return head == b"PK\x03\x04" or head == b"\x80\x02\x8a\x0a"


def reference_slim(src, dst):
    if os.path.isdir(src):
        for p in sorted(pathlib.Path(src).rglob("*")):
            q = pathlib.Path(dst) / p.relative_to(src)
            if p.is_dir():
                q.mkdir(parents=True, exist_ok=True)
                continue
            q.parent.mkdir(parents=True, exist_ok=True)
            if is_torch_file(p):
                reference_slim_file(p, q)
            else:
                shutil.copyfile(p, q)
    else:
        reference_slim_file(src, dst)


# ---------------------------------------------------------------------------------------------
# Altered copies for --self-test: each must be caught.

def altered(tmp, fx):
    """[(label, fixture source, altered file or folder, what must be reported)]"""
    by = {name: (src, exp) for name, src, exp in fx}
    cases = []

    def pick(base):
        for name, (src, exp) in by.items():
            if os.path.basename(name) == base and Loaded(src).kind == "torch":
                return src
        return None

    def save_altered(label, base, change, expect):
        src = pick(base)
        if not src:
            return
        obj = torch_load(src)
        change(obj)
        dst = os.path.join(tmp, f"altered-{label}.pt")
        torch.save(obj, dst)
        cases.append((label, src, dst, expect))

    def flip_byte(label, base):
        """A byte of a used range flipped in the stored record: only the values differ."""
        src = pick(base)
        if not src:
            return
        exp = by[next(n for n in by if by[n][0] == src)][1]
        st = next(s for s in exp["storages"] if s["used_bytes"])
        at = st["used_ranges"][0][0] if st["used_ranges"] else 0
        dst = os.path.join(tmp, f"altered-{label}.pt")
        with zipfile.ZipFile(src) as zin, zipfile.ZipFile(dst, "w", zipfile.ZIP_STORED) as zout:
            for info in zin.infolist():
                data = zin.read(info.filename)
                if info.filename.endswith("/data/" + st["key"]):
                    data = data[:at] + bytes([data[at] ^ 0x40]) + data[at + 1:]
                zout.writestr(info, data)
        cases.append((label, src, dst, "values differ"))

    flip_byte("value", "gaps.pt")
    save_altered("stride", "gaps.pt", lambda o: o.__setitem__("every_other_row", o["every_other_row"].contiguous()),
                 "stride")
    # with --allow-restride: compacting a view that overlaps another is still wrong ...
    save_altered("restride-overlapping", "gaps.pt",
                 lambda o: o.__setitem__("every_other_row", o["every_other_row"].contiguous()), "restride:overlaps")
    # ... and compacting a lone view is fine (the "!" marks a case that must pass)
    save_altered("restride-alone", "gaps.pt",
                 lambda o: o.__setitem__("strided_slice", o["strided_slice"].contiguous()), "restride:!")
    save_altered("tie-broken", "tied.pt", lambda o: o.__setitem__("embed_detached", o["embed_detached"].clone()),
                 "no longer share")
    save_altered("same-object", "tied.pt", lambda o: o.__setitem__("lm_head", o["lm_head"].detach()),
                 "identity")
    save_altered("overlap-split", "overlapping.pt", lambda o: o.__setitem__("b", o["b"].clone()),
                 "no longer share")

    def duplicated(o):  # same values, but `inner` now reads a second copy of the buffer
        base = torch.empty(0, dtype=o["a"].dtype).set_(o["a"].storage(), 0, (o["a"].storage().size(),), (1,))
        n = base.numel()
        comb = torch.cat([base, base])
        for k, t in list(o.items()):
            o[k] = torch.empty(0, dtype=t.dtype).set_(comb.storage(), t.storage_offset() + (n if k == "inner" else 0),
                                                      t.shape, t.stride())
    save_altered("overlap-moved", "overlapping.pt", duplicated, "overlapping in PATH, disjoint in OUT")

    def merged(o):  # two storages become one: tensors that did not share now do
        m = o["every_other_row"]
        mb = torch.empty(0, dtype=m.dtype).set_(m.storage(), 0, (m.storage().size(),), (1,))
        v = o["strided_slice"]
        vb = torch.empty(0, dtype=v.dtype).set_(v.storage(), 0, (v.storage().size(),), (1,))
        comb = torch.cat([mb, vb])
        for k in ("every_other_row", "column_of_same"):
            o[k] = torch.empty(0, dtype=m.dtype).set_(comb.storage(), o[k].storage_offset(), o[k].shape, o[k].stride())
        o["strided_slice"] = torch.empty(0, dtype=m.dtype).set_(comb.storage(), mb.numel() + v.storage_offset(),
                                                                v.shape, v.stride())
    save_altered("storages-merged", "gaps.pt", merged, "but not in PATH")
    save_altered("ordereddict", "nested.pt", lambda o: o.__setitem__("model", dict(o["model"])), "OrderedDict vs dict")
    save_altered("size-to-tuple", "nested.pt", lambda o: o["meta"].__setitem__("shape", tuple(o["meta"]["shape"])),
                 "Size vs tuple")
    save_altered("scalar", "nested.pt", lambda o: o["meta"].__setitem__("step", 1201), "1200 vs 1201")
    save_altered("key-order", "nested.pt", lambda o: o.__setitem__("model", type(o["model"])(
        reversed(list(o["model"].items())))), "keys")
    save_altered("parameter", "parameters.pt", lambda o: o.__setitem__("p", o["p"].detach()), "requires_grad")
    save_altered("metadata", "module_tied.pt", lambda o: o._metadata.pop(""), "__dict__")
    return cases


def synthetic(tmp):
    """Pairs no fixture can give with equal values: [(label, PATH, OUT, what must be reported)]."""
    z = torch.zeros(100)
    cases = []

    def pair(label, a, b, expect, **kw):
        pa, pb = os.path.join(tmp, f"syn-{label}-a.pt"), os.path.join(tmp, f"syn-{label}-b.pt")
        torch.save(a, pa)
        torch.save(b, pb, **kw)
        cases.append((label, pa, pb, expect))
    pair("new-overlap", {"x": z[0:10], "y": z[50:60]}, {"x": z[0:10], "y": z[5:15]}, "disjoint in PATH")
    pair("overlap-delta", {"x": z[0:10], "y": z[5:15]}, {"x": z[0:10], "y": z[3:13]}, "apart")
    pair("weights-only-lost", {"x": z[0:10], "n": 3}, {"x": z[0:10], "n": 3}, "weights_only", pickle_protocol=4)
    return cases


def self_test(fx, tmp):
    passed = failed = 0

    def report(ok, line):
        nonlocal passed, failed
        print(("ok   " if ok else "FAIL ") + line, flush=True)
        passed, failed = passed + ok, failed + (not ok)

    for name, src, exp in fx:  # identity
        try:
            note = check_fixture(None, src, exp, src, inspect=False, size=False)
            report(True, f"identity {name}: {note}")
        except Mismatch as e:
            report(False, f"identity {name}: {e}")
    global ALLOW_RESTRIDE
    for label, src, dst, expect in altered(tmp, fx):
        exp = next(e for n, s, e in fx if s == src)
        ALLOW_RESTRIDE = expect.startswith("restride:")
        expect = expect.split(":", 1)[1] if ALLOW_RESTRIDE else expect
        try:
            note = check_fixture(None, src, exp, dst, inspect=False, size=False)
            report(expect == "!", f"altered {label}: " + (f"accepted: {note}" if expect == "!" else "not detected"))
        except Mismatch as e:
            report(expect in str(e), f"altered {label}: caught: {e}" + ("" if expect in str(e) else
                                                                        f" (expected '{expect}')"))
        finally:
            ALLOW_RESTRIDE = False
    for label, pa, pb, expect in synthetic(tmp):
        try:
            compare_files(pa, pb)
            report(False, f"altered {label}: not detected")
        except Mismatch as e:
            report(expect in str(e), f"altered {label}: caught: {e}" + ("" if expect in str(e) else
                                                                        f" (expected '{expect}')"))
    for name, src, exp in fx:  # the Python reference slim passes every check
        if Loaded(src if "files" not in exp else
                  os.path.join(src, next(iter(exp["files"])))).kind != "torch":
            continue
        out = os.path.join(tmp, "ref-" + name.replace("/", "-"))
        try:
            reference_slim(src, out)
            note = check_fixture(None, src, exp, out, inspect=False)
            report(True, f"reference slim {name}: {note}")
        except Mismatch as e:
            report(False, f"reference slim {name}: {e}")
    return passed, failed


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ckpt", nargs="?")
    ap.add_argument("dirs", nargs="*")
    ap.add_argument("--self-test", action="store_true")
    ap.add_argument("--no-inspect", action="store_true", help="don't check inspect --json's bloat object")
    ap.add_argument("--allow-restride", action="store_true",
                    help="views overlapping no other view may come back compacted (other strides)")
    args = ap.parse_args()
    global ALLOW_RESTRIDE
    ALLOW_RESTRIDE = args.allow_restride
    if args.self_test and args.ckpt:
        args.dirs.insert(0, args.ckpt)
        args.ckpt = None
    if not args.self_test and not args.ckpt:
        ap.error("CKPT_BINARY is required (or --self-test)")
    dirs = args.dirs or sorted(glob.glob(str(ROOT / "tests/data/bloat/*/")))
    fx = fixtures([d.rstrip("/") for d in dirs])
    tmp = tempfile.mkdtemp(prefix="ckpt-slim-check-")
    try:
        if args.self_test:
            passed, failed = self_test(fx, tmp)
        else:
            passed = failed = 0
            for name, src, exp in fx:
                out = os.path.join(tmp, name.replace("/", "-"))
                try:
                    run_slim(args.ckpt, src, out)
                    note = check_fixture(args.ckpt, src, exp, out, inspect=not args.no_inspect)
                    print(f"ok   {name}: {note}", flush=True)
                    passed += 1
                except Mismatch as e:
                    print(f"FAIL {name}: {e}", flush=True)
                    failed += 1
                except Exception as e:  # a crash in the check itself is a failure too
                    print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)
                    failed += 1
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print(f"slim_check: {passed} passed, {failed} failed")
    return 1 if failed or not passed else 0


if __name__ == "__main__":
    sys.exit(main())
