"""checkpoint_studio.deepspeed against what DeepSpeed's own zero_to_fp32 functions returned and
wrote for the committed fixtures (tools/fixtures/make_deepspeed_fixtures.py ran the real
DeepSpeed 0.19.8 on CPU and recorded, per tag, get_fp32_state_dict_from_zero_checkpoint's keys,
dtypes and sha256, and convert_zero_checkpoint_to_fp32_state_dict's files, index text and
tensors in four variants)."""
import json
import struct
import sys

import pytest
import torch

from checkpoint_studio import CheckpointError, LazyTensor
from checkpoint_studio import deepspeed as ds
from conftest import DATA, ROOT, dtype_name, expectations, ids, sha

CASES = expectations("deepspeed")
# make_deepspeed_fixtures.py's VARIANTS: name, safe_serialization, max_shard_size
VARIANTS = [("safetensors", True, "10GB"), ("safetensors_sharded", True, "2KB"), ("bin", False, "10GB"),
            ("bin_sharded", False, "2KB")]
FROZEN = {"frozen.weight", "frozen.bias"}  # the fixture model's frozen layer


def tags(cases):
    return [(c, e, t) for c, e in cases for t in e["tags"]]


TAGS = tags(CASES)


def tag_ids(rows):
    return [f"{c.name}/{t}" for c, _, t in rows]


def tied(exp_tag):
    """The fixture's tied cases: DeepSpeed's safetensors variant refused them for sharing memory."""
    return "share memory" in json.dumps(exp_tag["safetensors"].get("error", ""))


@pytest.mark.parametrize("case,exp,tag", TAGS, ids=tag_ids(TAGS))
def test_state_dict_matches_deepspeed(case, exp, tag):
    want = exp["tags"][tag]
    sd = ds.get_fp32_state_dict_from_zero_checkpoint(str(case), tag)
    assert list(sd) == want["order"]
    for e in want["state_dict"]:
        t = sd[e["name"]]
        assert isinstance(t, torch.Tensor)
        assert (dtype_name(t), list(t.shape), sha(t)) == (e["dtype"], e["shape"], e["sha256"]), e["name"]
    if tied(want):
        assert sd["head.weight"] is sd["embed.weight"]  # one object, as DeepSpeed's dict has


@pytest.mark.parametrize("case,exp", CASES, ids=ids(CASES))
def test_latest_is_the_default_tag(case, exp):
    sd = ds.get_fp32_state_dict_from_zero_checkpoint(case)  # a PathLike works too
    want = exp["tags"][exp["latest"]]
    assert [sha(sd[e["name"]]) for e in want["state_dict"]] == [e["sha256"] for e in want["state_dict"]]


@pytest.mark.parametrize("case,exp", CASES, ids=ids(CASES))
def test_lazy_mode(case, exp):
    want = exp["tags"][exp["latest"]]
    sd = ds.get_fp32_state_dict_from_zero_checkpoint(str(case), lazy_mode=True)
    assert list(sd) == want["order"]
    for e in want["state_dict"]:
        lazy = sd[e["name"]]
        assert isinstance(lazy, LazyTensor)
        assert list(lazy.shape) == e["shape"] and dtype_name(lazy) == e["dtype"]
        # Read twice: a lazy dict must still hold the data after a first pass (DeepSpeed #6791).
        assert sha(lazy.contiguous()) == e["sha256"] == sha(lazy.contiguous()), e["name"]
    if tied(want):
        assert sd["head.weight"] is sd["embed.weight"]


@pytest.mark.parametrize("case,exp", CASES, ids=ids(CASES))
def test_exclude_frozen_parameters(case, exp):
    want = exp["tags"][exp["latest"]]
    sd = ds.get_fp32_state_dict_from_zero_checkpoint(str(case), exclude_frozen_parameters=True)
    assert list(sd) == [n for n in want["order"] if n not in FROZEN]
    by_name = {e["name"]: e["sha256"] for e in want["state_dict"]}
    assert all(sha(t) == by_name[n] for n, t in sd.items())


def read_safetensors(path):
    """name -> (dtype, shape, sha256), metadata; parsed here, independently of the engine."""
    import hashlib
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    meta = header.pop("__metadata__", None)
    names = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "I64": "int64", "F64": "float64"}
    out = {}
    for name, h in header.items():
        lo, hi = h["data_offsets"]
        out[name] = (names[h["dtype"]], h["shape"], hashlib.sha256(raw[8 + n + lo:8 + n + hi]).hexdigest())
    return out, meta


def written(out_dir, files):
    """name -> (dtype, shape, sha256, file) of every tensor in the written files."""
    got = {}
    for f in files:
        p = out_dir / f
        if f.endswith(".safetensors"):
            for name, v in read_safetensors(p)[0].items():
                got[name] = v + (f,)
        elif f.endswith(".bin"):
            sd = torch.load(p, map_location="cpu", weights_only=True)
            for name, t in sd.items():
                got[name] = (dtype_name(t), list(t.shape), sha(t), f)
    return got


CONVERT = [(c, e, v) for c, e in CASES for v in VARIANTS]


@pytest.mark.parametrize("case,exp,variant", CONVERT, ids=[f"{c.name}-{v[0]}" for c, _, v in CONVERT])
def test_convert_matches_zero_to_fp32(case, exp, variant, tmp_path):
    name, safe, shard = variant
    want = exp["tags"][exp["latest"]][name]
    out = tmp_path / "out"
    result = ds.convert_zero_checkpoint_to_fp32_state_dict(str(case), str(out), max_shard_size=shard,
                                                           safe_serialization=safe)
    if "error" in want:
        # DeepSpeed refused tied weights in safetensors; we write one copy and name the alias in
        # the metadata, so the tensors are the .bin variant's without the alias.
        ref = exp["tags"][exp["latest"]][name.replace("safetensors", "bin")]
        files = sorted(p.name for p in out.iterdir())
        got = written(out, files)
        expected = {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in ref["tensors"]}
        assert {k: v[:3] for k, v in got.items()} == {k: v for k, v in expected.items() if k in got}
        assert set(expected) - set(got) == {"head.weight"}
        return
    assert sorted(p.name for p in out.iterdir()) == sorted(want["files"])
    assert [f.rsplit("/", 1)[-1] for f in result.files] == want["files"]
    got = written(out, want["files"])
    assert got == {t["name"]: (t["dtype"], t["shape"], t["sha256"], t["file"]) for t in want["tensors"]}
    if "index_text" in want:
        index = [f for f in want["files"] if f.endswith(".index.json")][0]
        assert (out / index).read_text() == want["index_text"]
    if safe:
        for f in want["files"]:
            if f.endswith(".safetensors"):
                assert read_safetensors(out / f)[1] == want["metadata"][f]


def test_convert_into_an_earlier_conversion_replaces_it(tmp_path):
    case, exp = CASES[0]
    out = tmp_path / "out"
    ds.convert_zero_checkpoint_to_fp32_state_dict(str(case), str(out), max_shard_size="2KB")
    keep = out / "notes.txt"
    keep.write_text("mine")
    ds.convert_zero_checkpoint_to_fp32_state_dict(str(case), str(out))
    want = exp["tags"][exp["latest"]]["bin"]["files"]
    assert sorted(p.name for p in out.iterdir()) == sorted(want + ["notes.txt"])
    assert keep.read_text() == "mine"


def fixture_model(tied_weights=True):
    """The model the fixtures trained (tools/fixtures/make_deepspeed_fixtures.py's Net)."""
    sys.path.insert(0, str(ROOT / "tools" / "fixtures"))
    try:
        from make_deepspeed_fixtures import Net
    finally:
        sys.path.pop(0)
    return Net(tied=tied_weights)


@pytest.mark.parametrize("name", ["zero2_fp32_w2", "zero3_bf16_w4", "zero2_fp32_w2_untied"])
def test_load_state_dict_into_a_model(name):
    case = DATA / "deepspeed" / name
    exp = json.loads((DATA / "deepspeed" / f"{name}.expect.json").read_text())
    model = fixture_model(not name.endswith("_untied"))
    returned = ds.load_state_dict_from_zero_checkpoint(model, str(case))
    assert returned is model
    want = {e["name"]: e for e in exp["tags"][exp["latest"]]["state_dict"]}
    state = model.state_dict()
    for n, e in want.items():
        t = state[n]
        if e["dtype"] == "float32":
            assert sha(t) == e["sha256"], n
        else:  # a bf16 frozen weight loaded into the model's fp32 parameter: the same values
            assert torch.equal(t, t.to(getattr(torch, e["dtype"])).float()), n


def test_missing_directory_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError, match="doesn't exist"):
        ds.get_fp32_state_dict_from_zero_checkpoint(str(tmp_path / "nothing"))


def test_unknown_tag_is_a_checkpoint_error_naming_it():
    case, _ = CASES[0]
    with pytest.raises(CheckpointError, match="global_step999") as e:
        ds.get_fp32_state_dict_from_zero_checkpoint(str(case), "global_step999")
    assert isinstance(e.value, ValueError)  # DeepSpeed's callers catch ValueError
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("name", ["zero3_bf16_w4", "zero2_fp32_w2"])
def test_to_torch_tensor_and_clone_tensors_for_torch_save(name, tmp_path):
    case = DATA / "deepspeed" / name
    exp = json.loads((DATA / "deepspeed" / f"{name}.expect.json").read_text())
    want = exp["tags"][exp["latest"]]
    empty = ds.to_torch_tensor(ds.get_fp32_state_dict_from_zero_checkpoint(str(case), lazy_mode=True), True)
    assert [(n, dtype_name(t), list(t.shape)) for n, t in empty.items()] == \
           [(e["name"], e["dtype"], e["shape"]) for e in want["state_dict"]]
    sd = ds.to_torch_tensor(ds.get_fp32_state_dict_from_zero_checkpoint(str(case), lazy_mode=True))
    assert [sha(t) for t in sd.values()] == [e["sha256"] for e in want["state_dict"]]
    assert sd["head.weight"] is sd["embed.weight"]
    cloned = ds.clone_tensors_for_torch_save(sd)
    assert type(cloned) is type(sd) and list(cloned) == list(sd)
    torch.save(cloned, tmp_path / "sd.pt")
    back = torch.load(tmp_path / "sd.pt", weights_only=True)
    assert [sha(t) for t in back.values()] == [e["sha256"] for e in want["state_dict"]]
