"""Megatron-Core checkpoints from Python (issue 38): a run's iterations are its tags, and a tag's
tensors are the Hugging Face model, each equal to the fixture generator's own mapping (checked there
against Megatron's logits through transformers), from torch_dist and from the legacy format's TP
shards alike; slices read only their rows."""
import json

import pytest

import checkpoint_studio as cs
from conftest import DATA, sha

RUNS = ["gpt_tp2pp2_fp32", "moe_tp1pp1_ep2_fp32", "legacy_tp2pp1_fp32", "gpt2_tp2pp1_fp32",
        "legacy_tp2pp2_tied_fp32"]


@pytest.mark.parametrize("run", RUNS)
def test_tensors_are_the_hugging_face_model(run):
    expect = json.loads((DATA / "megatron" / f"{run}.expect.json").read_text())
    latest = str(expect["latest_checkpointed_iteration"])
    want = expect["iterations"][latest]["hf"]
    with cs.open(DATA / "megatron" / run) as ck:
        assert ck.family == "megatron"
        tag = ck.tag()
        assert tag.name == "iter_%07d" % int(latest)
        assert sorted(tag.keys()) == sorted(want)
        for name, w in want.items():
            t = tag.get_tensor(name)
            assert list(t.shape) == w["shape"] and sha(t) == w["sha256"], name
        if run.startswith("gpt2"):  # a Conv1D weight: a transposed region, sliced by rows
            c = tag.get_slice("transformer.h.1.mlp.c_fc.weight")[8:24]
            assert c.shape[0] == 16 and bool((c == tag.get_tensor("transformer.h.1.mlp.c_fc.weight")[8:24]).all())
        else:
            q = tag.get_slice("model.layers.1.self_attn.q_proj.weight")[8:24]
            assert q.shape[0] == 16 and bool(
                (q == tag.get_tensor("model.layers.1.self_attn.q_proj.weight")[8:24]).all())


def test_raw_export_keeps_megatrons_names(tmp_path):
    """export(raw=True): the stored tensors under Megatron's keys, no config.json of the class."""
    run = DATA / "megatron" / "gpt2_tp2pp1_fp32"
    keys = json.loads((DATA / "megatron" / "gpt2_tp2pp1_fp32.expect.json").read_text())["iterations"]["20"]["keys"]
    r = cs.export(run, tmp_path / "raw", raw=True)
    assert r.tensors == sum(1 for k in keys.values() if "shape" in k)
    assert not (tmp_path / "raw" / "config.json").exists()


@pytest.mark.parametrize("run", ["gpt_tp1pp1_dp2_distopt_fully_bf16", "gpt_tp1pp1_adam_fp32",
                                 "gpt_tp1pp1_dp2_distopt_dp_bf16", "gpt_tp2pp1_dp2_distopt_dp_fp32",
                                 "gpt_tp1pp2_dp2_distopt_dp_fp32", "legacy_tp1pp1_dp2_distopt_fp32",
                                 "gpt_tp2pp2_dp2_distopt_dp_tied_fp32", "gpt2_tp2pp1_dp2_distopt_dp_fp32",
                                 "legacy_tp2pp1_dp2_distopt_fp32"])
def test_optimizer_state_of_a_hugging_face_tensor(run):
    """optimizer_state(name) of a Hugging Face tensor: its moments, mapped from Megatron's saved per
    parameter or in the distributed optimizer's bucket layout, and as "fp32" the optimizer's own master where it saved one (the bf16 weights are that
    master rounded, not the other way round), else the weights."""
    import torch
    with cs.open(DATA / "megatron" / run) as ck:
        tag = ck.tag()
        finer = 0
        for name in tag.keys():
            state = tag.optimizer_state(name)
            w = tag.get_tensor(name)
            assert {"fp32", "exp_avg", "exp_avg_sq"} <= set(state), name
            for key in ("fp32", "exp_avg", "exp_avg_sq"):
                assert list(state[key].shape) == list(w.shape) and state[key].dtype == torch.float32, name
            assert torch.equal(state["fp32"].to(w.dtype), w), name
            finer += not torch.equal(state["fp32"], w.float())
        # bf16 matrices: the master keeps what rounding to bf16 dropped; Adam in fp32 saved none
        assert (finer > 0) == run.endswith("bf16"), finer
