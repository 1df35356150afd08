"""checkpoint_studio.open() over every committed family, against what the real tools recorded:
Hugging Face folders (save_pretrained), PyTorch DCP (dcp_to_torch_save's model tensors),
Composer files, tarballs and compressed files (Trainer.save_checkpoint), plain torch.save files,
DeepSpeed tags (zero_to_fp32's written tensors) and the optimizer moments ds_to_universal wrote."""
import gc
import hashlib
import json

import numpy as np
import pytest
import torch

import checkpoint_studio as cs
from conftest import DATA, dtype_name, expectations, ids, sha


def check_tensors(tag, want):
    """Every expected tensor: the same name order, dtype, shape and sha256."""
    assert tag.keys() == [e["name"] for e in want]
    for e in want:
        t = tag.get_tensor(e["name"])
        assert (dtype_name(t), list(t.shape), sha(t)) == (e["dtype"], e["shape"], e["sha256"]), e["name"]


HF = [(c, e) for c, e in expectations("hf") if "model_state_dict" in e and c.name != "damaged_index"]


@pytest.mark.parametrize("case,exp", HF, ids=ids(HF))
def test_hugging_face_folders(case, exp):
    with cs.open(case) as ck:
        assert ck.family == "hf"
        want = exp["model_state_dict"]
        tag = ck.tag()
        got = {n: tag.get_tensor(n) for n in tag.keys()}
        by_name = {e["name"]: e for e in want}
        # save_pretrained drops the tied lm_head; the folder holds the others, in file order
        assert set(got) <= set(by_name) and len(got) >= len(by_name) - 1
        for n, t in got.items():
            assert (dtype_name(t), list(t.shape), sha(t)) == (by_name[n]["dtype"], by_name[n]["shape"],
                                                              by_name[n]["sha256"]), n


DCP = expectations("dcp")


@pytest.mark.parametrize("case,exp", DCP, ids=ids(DCP))
def test_dcp_folders(case, exp):
    ck = cs.open(case)
    assert ck.family == "dcp"
    check_tensors(ck.tag(), exp["export"]["tensors"])


# lzop needs an external program, which the engine never runs (the next test).
COMPOSER = [(c, e) for c, e in expectations("composer") if "export" in e and not c.name.endswith(".lzo")]


@pytest.mark.parametrize("case,exp", COMPOSER, ids=ids(COMPOSER))
def test_composer_files_tarballs_and_compressed(case, exp):
    check_tensors(cs.open(case).tag(), exp["export"]["tensors"])


def test_lzop_is_refused_naming_the_file():
    path = DATA / "composer" / "classifier.pt.lzo"
    with pytest.raises(cs.CheckpointError, match="lzop") as e:
        cs.open(path).tag().keys()
    assert e.value.file == str(path) and str(e.value).startswith(str(path))


def test_composer_run_folder_tags():
    exp = json.loads((DATA / "composer" / "run.expect.json").read_text())
    ck = cs.open(DATA / "composer" / "run")
    assert len(ck.tags) == len(exp["checkpoints_in_training_order"])
    for name, c in zip(ck.tags, exp["checkpoints"]):
        check_tensors(ck.tag(name), c["export"]["tensors"])


TORCH = sorted((DATA / "torch" / "torch-2.x").glob("state_dict*.expect.json")) + \
        sorted((DATA / "torch" / "torch-2.x").glob("params.expect.json"))


@pytest.mark.parametrize("expect", TORCH, ids=[p.name for p in TORCH])
def test_torch_save_files(expect):
    exp = json.loads(expect.read_text())
    ck = cs.open(expect.with_name(exp["file"]))
    tag = ck.tag()
    for e in exp["tensors"]:
        t = tag.get_tensor(e["path"])
        assert (dtype_name(t), list(t.shape), sha(t)) == (e["dtype"], e["shape"], e["sha256"]), e["path"]


def test_tags_latest_and_info():
    ck = cs.open(DATA / "deepspeed" / "zero3_bf16_w4")
    assert ck.family == "deepspeed"
    assert ck.tags == ["global_step2", "global_step4"]
    assert ck.latest == "global_step4"
    info = ck.tag().info
    assert (info.name, info.zero_stage, info.world_size, info.dtype) == ("global_step4", 3, 4, "bf16")
    assert (info.ds_version, info.global_steps) == ("0.19.8", 4)
    # The facts' labels are words for people (the window's); their values are the checkpoint's.
    assert info.facts and all(isinstance(k, str) and isinstance(v, str) for k, v in info.facts.items())
    assert "0.19.8" in info.facts.values()
    earlier = ck.tag("global_step2").info
    assert earlier.global_steps == 2 and earlier.facts != info.facts  # the step is among them
    with pytest.raises(cs.CheckpointError, match="nope"):
        ck.tag("nope")


def test_model_state_dict_is_export_s_and_lazy():
    """The tag's own state_dict is what `ckpt export` writes: zero_to_fp32's files (frozen fp32)."""
    case = DATA / "deepspeed" / "zero2_bf16_w2"
    exp = json.loads((DATA / "deepspeed" / "zero2_bf16_w2.expect.json").read_text())
    want = {t["name"]: t for t in exp["tags"]["global_step4"]["bin"]["tensors"]}
    sd = cs.open(case).tag().state_dict()
    assert isinstance(sd, cs.LazyStateDict) and len(sd) == len(want)
    assert sd.lazy("frozen.weight").dtype == torch.float32
    for n in sd:
        assert sha(sd[n]) == want[n]["sha256"], n
    eager = cs.open(case).tag().state_dict(lazy=False)
    assert eager["head.weight"] is eager["embed.weight"]
    bf16 = cs.open(case).tag().state_dict(dtype=torch.bfloat16)
    assert torch.equal(bf16["fc1.weight"], sd["fc1.weight"].to(torch.bfloat16))
    assert bf16["counter"].dtype == torch.int64  # integers keep theirs


def test_numpy_framework():
    tag = cs.open(DATA / "hf" / "safetensors").tag()
    name = tag.keys()[0]
    a = tag.get_tensor(name, framework="np")
    assert isinstance(a, np.ndarray)
    assert np.array_equal(a, tag.get_tensor(name).numpy())


def test_get_slice_reads_rows():
    tag = cs.open(DATA / "deepspeed" / "zero3_fp32_w4").tag()  # gathered from 4 ranks
    whole = tag.get_tensor("embed.weight")
    sl = tag.get_slice("embed.weight")
    assert sl.get_shape() == [37, 12] and sl.get_dtype() == "float32"
    assert torch.equal(sl[3:20], whole[3:20])
    assert torch.equal(sl[-1], whole[-1])
    assert torch.equal(sl[5:9, 2:4], whole[5:9, 2:4])
    assert torch.equal(sl[::2], whole[::2])


def owning_file(address, maps):
    for path, ranges in maps.items():
        if any(lo <= address < hi for lo, hi in ranges):
            return path
    return None


def test_zero_copy_views_map_the_file_privately(file_mappings, tmp_path):
    path = DATA / "hf" / "safetensors" / "model.safetensors"
    before = hashlib.sha256(path.read_bytes()).hexdigest()
    ck = cs.open(path)
    tag = ck.tag()
    name = tag.keys()[0]
    lazy = tag.state_dict().lazy(name)
    assert lazy.zero_copy
    t = tag.get_tensor(name)
    assert owning_file(t.data_ptr(), file_mappings()) == str(path)  # no copy: the file's map
    original = t.clone()
    t.add_(1.0)  # a private copy-on-write map: writable, and the file never changes
    del ck, tag, lazy
    gc.collect()
    assert torch.equal(t, original + 1.0)  # the view outlives the checkpoint
    assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    assert torch.equal(cs.open(path).tag().get_tensor(name), original)


@pytest.mark.parametrize("name", ["zero2_fp32_w4", "zero1_fp32_w2", "zero2_bf16_w5"])
def test_zero2_masters_inside_one_partition_are_views_of_its_rank_file(name, file_mappings):
    """A ZeRO-1/2 fp32 master lying wholly in one rank's flat partition is handed out as a view
    of that rank's optimizer file (no copy); one straddling two ranks is gathered into memory of
    its own. Either way the values are zero_to_fp32's (test_deepspeed checks the hashes)."""
    from checkpoint_studio import deepspeed
    folder = DATA / "deepspeed" / name
    optim = {str(p) for p in folder.rglob("*optim_states.pt")}
    lazy = deepspeed.get_lazy_state_dict(folder)
    sd = deepspeed.get_fp32_state_dict_from_zero_checkpoint(folder)
    maps = file_mappings()
    owners = {k: owning_file(v.data_ptr(), maps) for k, v in sd.items()}
    # What the engine says lies in place is exactly what was handed out as a view (of the
    # optimizer files for masters, of the model file for buffers); the rest owns its memory.
    assert {k for k, f in owners.items() if f} == {k for k in sd if lazy.lazy(k).zero_copy}
    views = {k for k, f in owners.items() if f in optim}
    assert views, "no master lies inside one partition"
    # A view is private: writing into it changes neither the file nor a second reading.
    first = sorted(views)[0]
    before = sd[first].clone()
    sd[first].add_(1.0)
    again = deepspeed.get_fp32_state_dict_from_zero_checkpoint(folder)
    assert torch.equal(again[first], before)


def test_tensors_leave_through_dlpack_without_a_copy(file_mappings):
    """Every tensor handed out (torch or numpy) speaks DLPack, so other frameworks (JAX, CuPy,
    TensorFlow) take it zero-copy: the consumer's array is the file's private map itself."""
    path = DATA / "hf" / "safetensors" / "model.safetensors"
    tag = cs.open(path).tag()
    name = tag.keys()[0]
    t = tag.get_tensor(name)
    a = tag.get_tensor(name, framework="np")
    for consumer in (np.from_dlpack(t), torch.from_dlpack(a)):
        address = consumer.ctypes.data if isinstance(consumer, np.ndarray) else consumer.data_ptr()
        assert owning_file(address, file_mappings()) == str(path)
    assert np.array_equal(np.from_dlpack(t), a)


def test_gathered_tensors_are_not_in_any_file_map(file_mappings):
    tag = cs.open(DATA / "deepspeed" / "zero3_fp32_w4").tag()
    lazy = tag.state_dict().lazy("embed.weight")
    assert not lazy.zero_copy
    t = lazy.contiguous()
    assert owning_file(t.data_ptr(), file_mappings()) is None


# ds_to_universal's outputs, recorded for DeepSpeed tags under tests/data/deepspeed and
# tests/data/universal (BF16_Optimizer, 11 ranks).
UNIVERSAL = [(c, e) for c, e in expectations("universal") if e.get("input")]


def universal_input(exp):
    """The DeepSpeed tag ds_to_universal converted: (checkpoint folder, tag)."""
    folder, tag = exp["input"].rsplit("/", 1)
    return DATA / folder, tag


def universal_moments(exp):
    """{param: {fp32|exp_avg|exp_avg_sq|step: sha256}} from ds_to_universal's files."""
    out = {}
    for f in exp["files"]:
        parts = f["path"].split("/")
        if len(parts) != 3 or parts[0] != "zero":
            continue
        s = f["summary"]
        tensor = s["tensor"] if "tensor" in s else dict(s["dict"])["param"]["tensor"]
        out.setdefault(parts[1], {})[parts[2][:-3]] = tensor
    return {k: v for k, v in out.items() if "exp_avg" in v}


@pytest.mark.parametrize("case,exp", UNIVERSAL, ids=ids(UNIVERSAL))
def test_optimizer_state_is_what_ds_to_universal_wrote(case, exp):
    folder, tag = universal_input(exp)
    t = cs.open(folder).tag(tag)
    want = universal_moments(exp)  # none where fp16 never stepped (zero2_fp16_w2)
    assert set(t.optimizer_parameters()) == set(want)
    for name, files in want.items():
        state = t.optimizer_state(name)
        assert set(state) == set(files)
        shape = list(t.get_slice(name).get_shape())
        for key, e in files.items():
            got = state[key]
            # ds_to_universal writes ZeRO-3 moments flat; ours have the parameter's shape.
            assert list(got.shape) == (shape if key != "step" else []), f"{name}/{key}"
            assert got.numel() == np.prod(e["shape"], dtype=int), f"{name}/{key}"
            assert (dtype_name(got), sha(got)) == (e["dtype"], e["sha256"]), f"{name}/{key}"


def test_optimizer_state_of_a_frozen_parameter_is_an_error():
    t = cs.open(DATA / "deepspeed" / "zero2_fp32_w2").tag()
    with pytest.raises(cs.CheckpointError, match="frozen.weight"):
        t.optimizer_state("frozen.weight")


@pytest.mark.parametrize("case,exp", UNIVERSAL, ids=ids(UNIVERSAL))
def test_deepspeed_state_dict_is_ds_to_universal_s_fp32(case, exp):
    """The drop-in's trainable values are the fp32 masters ds_to_universal wrote (fp32.pt),
    BF16_Optimizer and 11-rank tags included."""
    from checkpoint_studio import deepspeed as ds
    folder, tag = universal_input(exp)
    sd = ds.get_fp32_state_dict_from_zero_checkpoint(folder, tag)
    want = universal_moments(exp)
    for name, files in want.items():
        e = files["fp32"]  # flat for ZeRO-3, as ds_to_universal writes it
        assert sd[name].numel() == np.prod(e["shape"], dtype=int), name
        assert (dtype_name(sd[name]), sha(sd[name])) == (e["dtype"], e["sha256"]), name


def test_numpy_bfloat16_needs_ml_dtypes():
    tag = cs.open(DATA / "deepspeed" / "zero2_bf16_w2").tag()
    lp = tag.state_dict(dtype="bf16")
    try:
        import ml_dtypes
    except ImportError:
        with pytest.raises(TypeError, match="ml_dtypes"):
            tag.state_dict(dtype="bf16", framework="np")["fc1.weight"]
        return
    a = tag.state_dict(dtype="bf16", framework="np")["fc1.weight"]
    assert a.dtype == np.dtype(ml_dtypes.bfloat16)
    assert np.array_equal(a.view(np.uint16), lp["fc1.weight"].view(torch.int16).numpy().view(np.uint16))


def test_an_unreadable_tag_raises_instead_of_reading_as_empty(tmp_path):
    """A run whose latest tag lost a rank file (issue 36, item 2): its keys, state dict, safe_open
    and load_file raised nothing and gave {}. Each raises the engine's error, saying what is
    missing; the readable tag beside it still reads."""
    import shutil
    run = tmp_path / "run"
    shutil.copytree(DATA / "deepspeed" / "zero2_bf16_w2", run)
    lost = "bf16_zero_pp_rank_1_mp_rank_00_optim_states.pt"
    (run / "global_step4" / lost).unlink()
    with cs.open(run) as ck:
        tag = ck.tag()
        assert tag.info.name == "global_step4" and tag.info.unreadable
        for read in (tag.keys, tag.state_dict, lambda: cs.load_file(run), lambda: cs.safe_open(run, "pt")):
            with pytest.raises(cs.CheckpointError, match="optimizer states of rank 1 are missing"):
                read()
        assert len(ck.tag("global_step2").keys()) > 0
