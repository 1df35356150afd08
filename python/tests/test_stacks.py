"""Lightning checkpoints and DCP over safetensors from Python (issue 40): the families' tags, their
tensors equal to the stacks' own models, moments per parameter; nothing in the package knows them."""
import json

import checkpoint_studio as cs
from conftest import DATA, sha


def test_lightning_ckpt_file():
    expect = json.loads((DATA / "lightning" / "single.expect.json").read_text())
    ref = expect["reference"]["last.ckpt"]
    with cs.open(DATA / "lightning" / "single" / "last.ckpt") as ck:
        assert ck.family == "lightning"
        tag = ck.tag()
        assert sorted(tag.keys()) == sorted(k[len("model."):] for k in ref)
        for name, w in ref.items():
            assert sha(tag.get_tensor(name[len("model."):])) == w["sha256"], name
        assert set(tag.optimizer_state("layer.weight")) >= {"exp_avg", "exp_avg_sq"}


def test_dcp_over_safetensors_fp8():
    expect = json.loads((DATA / "dcp-safetensors" / "fp8_w2.expect.json").read_text())
    with cs.open(DATA / "dcp-safetensors" / "fp8_w2" / "sharded") as ck:
        assert ck.family == "dcp-safetensors"
        tag = ck.tag()
        for name, w in expect["saved_truth"].items():
            if w["dtype"].startswith("float8"):
                continue  # numpy has no FP8: compared bit for bit by tst_dcp
            assert sha(tag.get_tensor(name)) == w["sha256"], name


def test_accelerate_moments_are_the_saved_ones():
    for run in ["safe_false", "fsdp"]:
        expect = json.loads((DATA / "accelerate" / f"{run}.expect.json").read_text())
        saved = expect["optimizer"]["."]
        saved = saved["state"] if "state" in saved else saved["optimizer.bin"]
        with cs.open(DATA / "accelerate" / run) as ck:
            assert ck.family == "accelerate"
            tag = ck.tag()
            for name, moments in saved.items():
                if name in ("param_groups", "function", "top_level_keys"):
                    continue
                state = tag.optimizer_state(name)
                for m in ("exp_avg", "exp_avg_sq"):
                    assert sha(state[m]) == moments[m]["sha256"], (run, name, m)
