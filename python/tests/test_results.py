"""Every result the operations return has, as Python attributes, exactly the keys of the
`ckpt ... --json` document of the same run, at every level (tensors, files, histograms, totals):
both come from the one list of fields each result type names (model/ops/describe.h), so a script
moves between the command and the package without renaming a key."""
import json
import os
import subprocess

import pytest

import checkpoint_studio as cs
from conftest import DATA, ckpt_binary

ZERO2 = DATA / "deepspeed" / "zero2_fp32_w2"  # two tags, a tied parameter
BLOAT = DATA / "bloat" / "torch-2.x"

# Keys `ckpt slim` and `ckpt universal` add to the result's document (what they read and wrote,
# how long it took): not the result's own.
ADDED_BY_SLIM = {"input", "output", "dry_run"}
ADDED_BY_UNIVERSAL = {"input", "seconds"}
# Each side's mean and std, which only Python and the window ask for (diff(side_stats=True)).
SIDE_STATS = {"mean_a", "std_a", "mean_b", "std_b"}


def ckpt_json(*args, quiet=True, exit_code=0):
    # ckpt under ASan links its own sanitizer runtime: it refuses the one preloaded for Python.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    args = [*args, "-q"] if quiet else list(args)  # inspect and scan draw no progress
    done = subprocess.run([ckpt_binary(), *args, "--json"], capture_output=True, text=True, env=env)
    assert done.returncode == exit_code, done.stderr
    return json.loads(done.stdout)


def merged(shapes):
    """The union of the keys of several objects (a list's items), recursively."""
    out = None
    for s in shapes:
        if isinstance(s, dict):
            out = {} if out is None else out
            for k, v in s.items():
                out[k] = merged([out.get(k), v])
    return out


def json_keys(value):
    """{key: the keys below it} of a JSON value; a list gives the union over its items."""
    if isinstance(value, dict):
        return {k: json_keys(v) for k, v in value.items()}
    if isinstance(value, list):
        return merged(json_keys(v) for v in value)
    return None


def attribute_keys(value):
    """The same of a result: its attributes (`_fields`), and theirs."""
    if hasattr(type(value), "_fields"):
        return {k: attribute_keys(getattr(value, k)) for k in type(value)._fields}
    if isinstance(value, list):
        return merged(attribute_keys(v) for v in value)
    return None


def assert_same_keys(attrs, keys, where="result"):
    assert set(attrs) == set(keys), (
        f"{where}: attributes not in --json {sorted(set(attrs) - set(keys))}, "
        f"--json keys not attributes {sorted(set(keys) - set(attrs))}")
    for k, below in keys.items():
        if below is not None or attrs[k] is not None:
            assert below is not None and attrs[k] is not None, f"{where}.{k}: an object on one side only"
            assert_same_keys(attrs[k], below, f"{where}.{k}")


def without(keys, names):
    return {k: v for k, v in keys.items() if k not in names}


def test_stats():
    doc = ckpt_json("stats", "--histogram", "4", "--device", "cpu", str(ZERO2))
    r = cs.stats(ZERO2, histogram=4, device="cpu")
    assert any("alias_of" in t for t in doc["tensors"]), "the fixture has no tied alias row to check"
    assert_same_keys(attribute_keys(r), json_keys(doc))


def test_diff_of_two_tags():
    doc = ckpt_json("diff", "--moments", "--device", "cpu", "--tag-a", "global_step2", "--tag-b", "global_step4",
                    str(ZERO2), str(ZERO2))
    ck = cs.open(ZERO2)
    r = cs.diff(ck.tag("global_step2"), ck.tag("global_step4"), moments=True, device="cpu")
    attrs = attribute_keys(r)
    attrs["tensors"] = without(attrs["tensors"], SIDE_STATS)
    assert_same_keys(attrs, json_keys(doc))
    assert [t.name for t in r.tensors] == [t["name"] for t in doc["tensors"]]


def test_diff_of_files_that_differ(tmp_path):
    # Names only one side has, a dtype and a shape that changed, infinities: every key diff has.
    import torch
    a, b = tmp_path / "a.pt", tmp_path / "b.pt"
    torch.save({"w": torch.ones(4, 3), "x": torch.ones(2), "only_a": torch.zeros(1),
                "n": torch.tensor([float("nan"), float("inf"), 1.0])}, a)
    torch.save({"w": torch.ones(4, 3).bfloat16(), "x": torch.ones(3), "only_b": torch.zeros(2),
                "n": torch.tensor([float("nan"), -float("inf"), 2.0])}, b)
    doc = ckpt_json("diff", "--device", "cpu", str(a), str(b))
    r = cs.diff(a, b, device="cpu")
    assert doc["only_a"] and doc["changed"] and doc["tensors"]
    attrs = attribute_keys(r)
    attrs["tensors"] = without(attrs["tensors"], SIDE_STATS)
    assert_same_keys(attrs, json_keys(doc))
    assert r["n"].max_abs_diff == float("inf") and doc["tensors"][1]["max_abs_diff"] == "inf"


def test_diff_side_stats_are_the_only_attributes_the_command_never_writes():
    r = cs.diff(ZERO2, ZERO2, side_stats=True, device="cpu")
    assert set(cs.TensorDiff._fields) & SIDE_STATS == SIDE_STATS
    assert all(isinstance(getattr(t, k), float) for t in r.tensors for k in SIDE_STATS)


def test_slim(tmp_path):
    doc = ckpt_json("slim", "--dry-run", str(BLOAT), str(tmp_path / "a"))
    r = cs.slim(BLOAT, tmp_path / "b", dry_run=True)
    assert_same_keys(attribute_keys(r), without(json_keys(doc), ADDED_BY_SLIM))


def test_universal(tmp_path):
    src = DATA / "deepspeed" / "zero2_bf16_w2"
    doc = ckpt_json("universal", "--inject-missing-state", str(src), str(tmp_path / "a" / "out"))
    r = cs.to_universal(src, tmp_path / "b" / "out", inject_missing_state=True)
    assert_same_keys(attribute_keys(r), without(json_keys(doc), ADDED_BY_UNIVERSAL))


def test_results_are_read_only_and_print_their_fields():
    r = cs.stats(BLOAT / "tied.pt", device="cpu")
    with pytest.raises(AttributeError):
        r.source = "elsewhere"
    assert repr(r).startswith("StatsResult(source=") and "tensors=[TensorStats(name=" in repr(r)


def test_tag_info_starts_as_inspect_lists_a_tag():
    # TagInfo's own keys (dir, facts as a dict, file names, the number of parameters) are the
    # window's; the others it shares with `ckpt inspect --json`'s tag hold the same values.
    doc = ckpt_json("inspect", "--tag", "global_step2", str(ZERO2), quiet=False)
    info = cs.open(ZERO2).tag("global_step2").info
    tag = doc["tags"][0]
    own = {"facts", "files", "parameters"}
    shared = [k for k in type(info)._fields if k in tag and k not in own]
    assert shared[:3] == ["name", "latest", "optimizer"] and len(shared) >= 12
    assert {k: getattr(info, k) for k in shared} == {k: tag[k] for k in shared}
    assert info.parameters == len(tag["parameters"])
    assert info.facts == {f["label"]: f["value"] for f in tag["facts"]}
    assert info.files == [f["name"] for f in tag["files"]]


def test_scan():
    # A folder with dangerous globals (exit 3), files that could not be read to their end, and
    # files holding no pickle: every key a scan has.
    folder = DATA / "torch"
    doc = ckpt_json("scan", str(folder), quiet=False, exit_code=3)
    r = cs.scan(folder)
    assert r.dangerous and doc["skipped"] and any(f["globals"] for f in doc["files"])
    assert_same_keys(attribute_keys(r), json_keys(doc))
    one = BLOAT / "tied.pt"  # a single file: `ckpt scan --json` gives its report alone
    assert_same_keys(attribute_keys(cs.scan(one).files[0]), json_keys(ckpt_json("scan", str(one), quiet=False)))


def test_verify(tmp_path):
    # A whole checkpoint, then one with a flipped byte (exit 4): every key of the report.
    doc = ckpt_json("verify", str(ZERO2))
    r = cs.verify(ZERO2)
    assert r.whole and doc["whole"]
    assert_same_keys(attribute_keys(r), json_keys(doc))
    assert [f.name for f in r.files] == [f["name"] for f in doc["files"]]
    manifest = tmp_path / "m.json"
    written = cs.verify(ZERO2, all_tags=True, write_manifest=manifest)
    assert written.manifest_written == str(manifest) and all(len(f.sha256) == 64 for f in written.files)
    assert cs.verify(ZERO2, all_tags=True, manifest=manifest).whole
    # The manifest records each tensor's digest; an export's manifest proves the export whole.
    assert all(f.tensors for f in written.files) and all(len(d.xxh3) == 16 for d in written.files[0].tensors)
    out, em = tmp_path / "out", tmp_path / "export.json"
    r = cs.export(ZERO2, out, manifest_out=em)
    assert r.manifest == str(em)
    check = cs.verify(out, manifest=em)
    assert check.whole and sum(len(f.tensors) for f in check.files) == r.tensors
