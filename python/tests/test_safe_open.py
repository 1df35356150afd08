"""checkpoint_studio.safe_open / load_file: safetensors' reading API. On safetensors files the
names (in safe_open's sorted order), metadata and values are what the real safetensors
safe_open gave when the fixtures were made (tools/fixtures/make_hf_fixtures.py records them);
on other families the same calls read the checkpoint as checkpoint_studio.open does."""
import numpy as np
import pytest
import torch

import checkpoint_studio as cs
from checkpoint_studio import deepspeed
from conftest import DATA, dtype_name, expectations, sha

SAFETENSORS = [(c, e, f) for c, e in expectations("hf") if e.get("safetensors_metadata")
               for f in e["weight_files"]]


@pytest.mark.parametrize("case,exp,file", SAFETENSORS, ids=[f"{c.name}/{f}" for c, _, f in SAFETENSORS])
def test_a_safetensors_file_reads_as_safetensors_read_it(case, exp, file):
    want = [t for t in exp["tensors"] if t["file"] == file]
    with cs.safe_open(case / file, framework="pt") as f:
        assert f.keys() == [t["name"] for t in want]  # safetensors' order: sorted
        assert sorted(f.offset_keys()) == f.keys()
        assert f.metadata() == exp["safetensors_metadata"][file]
        for t in want:
            got = f.get_tensor(t["name"])
            assert (dtype_name(got), list(got.shape), sha(got)) == (t["dtype"], t["shape"], t["sha256"])
            assert f.get_slice(t["name"]).get_shape() == t["shape"]


def test_load_file_of_a_deepspeed_folder_is_zero_to_fp32s_dict():
    folder = DATA / "deepspeed" / "zero3_bf16_w4"
    want = deepspeed.get_fp32_state_dict_from_zero_checkpoint(folder)
    got = cs.load_file(folder)
    assert list(got) == list(cs.open(folder).tag().keys())
    for name, t in got.items():
        # The model as export writes it: zero_to_fp32's fp32 masters (frozen ones too).
        if name in want:
            assert torch.equal(t, want[name].to(t.dtype)), name
    with cs.safe_open(folder, "pt") as f:
        assert f.metadata() is None
        assert f.keys() == sorted(got)
        rows = f.get_slice("embed.weight")[2:5]
        assert torch.equal(rows, got["embed.weight"][2:5])


def test_tied_names_load_as_one_tensor():
    folder = DATA / "deepspeed" / "zero2_fp32_w2"
    tied = cs.open(folder).tag().state_dict().tied()
    assert tied, "the fixture ties a weight"
    got = cs.load_file(folder)
    for alias, target in tied.items():
        assert got[alias] is got[target]


def test_numpy_and_devices():
    path = DATA / "hf" / "safetensors" / "model.safetensors"
    with cs.safe_open(path, framework="np") as f:
        name = f.keys()[0]
        a = f.get_tensor(name)
        assert isinstance(a, np.ndarray)
    with cs.safe_open(path, framework="pt", device="meta") as f:
        t = f.get_tensor(name)
        assert t.device.type == "meta" and list(t.shape) == list(a.shape)
    with pytest.raises(ValueError, match="CPU"):
        cs.safe_open(path, framework="np", device="cuda")
    with pytest.raises(ValueError, match="framework"):
        cs.safe_open(path, framework="tf")


def test_a_missing_name_is_a_key_error_naming_the_file():
    path = DATA / "hf" / "safetensors" / "model.safetensors"
    with cs.safe_open(path, "pt") as f, pytest.raises(KeyError, match="model.safetensors"):
        f.get_tensor("no.such.weight")


def test_a_file_that_is_not_a_checkpoint_is_a_checkpoint_error(tmp_path):
    bad = tmp_path / "model.safetensors"
    bad.write_bytes(b"\xff" * 64)
    with pytest.raises(cs.CheckpointError, match="model.safetensors"):
        cs.safe_open(bad, "pt")
