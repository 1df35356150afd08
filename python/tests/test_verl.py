"""verl's FSDP checkpoints from Python (issue 40): a run's steps are its tags, each parameter the
whole tensor assembled from the ranks' DTensor shards (FSDP1, FSDP2, a 2-D HSDP mesh), equal to
FSDP's own full state dict; FSDP2's moments readable per parameter; nothing in the package knows
the family."""
import json

import pytest

import checkpoint_studio as cs
from conftest import DATA, sha


@pytest.mark.parametrize("run", ["fsdp1_w2", "fsdp2_w2", "hsdp_fsdp1_w4"])
def test_tensors_are_the_whole_model(run):
    expect = json.loads((DATA / "verl" / f"{run}.expect.json").read_text())
    truth = expect["final_model_truth_fp32"]
    with cs.open(DATA / "verl" / run) as ck:
        assert ck.family == "verl"
        tag = ck.tag()
        assert tag.name == "global_step_" + expect["latest_checkpointed_iteration"]
        assert sorted(tag.keys()) == sorted(truth)
        for name, w in truth.items():
            t = tag.get_tensor(name)
            assert list(t.shape) == w["shape"] and sha(t) == w["sha256"], name
        rows = tag.get_slice("model.embed_tokens.weight")[30:34]  # across the two ranks' shards
        assert bool((rows == tag.get_tensor("model.embed_tokens.weight")[30:34]).all())


def test_fsdp2_moments():
    with cs.open(DATA / "verl" / "fsdp2_w2") as ck:
        state = ck.tag().optimizer_state("lm_head.weight")
        assert set(state) >= {"exp_avg", "exp_avg_sq"}
        assert list(state["exp_avg"].shape) == [64, 16]
