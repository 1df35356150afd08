"""Megatron-Core checkpoints from Python (issue 38): a run's iterations are its tags, and a tag's
tensors are the Hugging Face model, each equal to the fixture generator's own mapping (checked there
against Megatron's logits through transformers), from torch_dist and from the legacy format's TP
shards alike; slices read only their rows."""
import json

import pytest

import checkpoint_studio as cs
from conftest import DATA, sha

RUNS = ["gpt_tp2pp2_fp32", "moe_tp1pp1_ep2_fp32", "legacy_tp2pp1_fp32"]


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
        q = tag.get_slice("model.layers.1.self_attn.q_proj.weight")[8:24]
        assert q.shape[0] == 16 and bool((q == tag.get_tensor("model.layers.1.self_attn.q_proj.weight")[8:24]).all())
