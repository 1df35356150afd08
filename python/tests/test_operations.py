"""export, to_universal, slim, stats and diff from Python: typed results checked against the
reference tools' recorded outputs (ds_to_universal's files, Composer's model tensors) and real
PyTorch's own numbers; progress, cancel and Ctrl+C leaving nothing behind; memory bounded."""
import json
import pathlib
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest
import torch

import checkpoint_studio as cs
from conftest import DATA, dtype_name, sha
from test_deepspeed import read_safetensors


def test_export_composer_to_safetensors(tmp_path):
    exp = json.loads((DATA / "composer" / "classifier.pt.expect.json").read_text())
    r = cs.export(DATA / "composer" / "classifier.pt", tmp_path / "hf", progress=False)
    assert isinstance(r, cs.ExportResult)
    assert [os.path.basename(f) for f in r.files] == ["model.safetensors"]
    assert r.tensors == len(exp["export"]["tensors"])
    got, meta = read_safetensors(tmp_path / "hf" / "model.safetensors")
    assert got == {t["name"]: (t["dtype"], t["shape"], t["sha256"]) for t in exp["export"]["tensors"]}


def test_export_options_bf16_and_bin(tmp_path):
    src = DATA / "deepspeed" / "zero2_fp32_w2"
    r = cs.export(src, tmp_path / "o", safe_serialization=False, dtype="bf16", exclude_frozen_parameters=True,
                  ignore=["fc2.*"])
    sd = torch.load(tmp_path / "o" / "pytorch_model.bin", weights_only=True)
    assert r.tensors == len(sd)
    assert not any(n.startswith(("frozen.", "fc2.")) for n in sd)
    full = cs.open(src).tag().state_dict()
    assert sd["fc1.weight"].dtype == torch.bfloat16
    assert torch.equal(sd["fc1.weight"], full["fc1.weight"].to(torch.bfloat16))
    assert sd["counter"].dtype == torch.int64


def test_export_refuses_a_folder_holding_files(tmp_path):
    (tmp_path / "o").mkdir()
    (tmp_path / "o" / "x").write_text("x")
    with pytest.raises(cs.CheckpointError, match="o"):
        cs.export(DATA / "deepspeed" / "zero2_fp32_w2", tmp_path / "o")
    assert os.listdir(tmp_path / "o") == ["x"]


def written_files(folder):
    return [p for p in folder.rglob("*") if p.is_file()]


def test_to_universal_writes_ds_to_universal_s_files(tmp_path):
    exp = json.loads((DATA / "universal" / "zero2_bf16_w2.expect.json").read_text())
    out = tmp_path / "ckpt" / exp["latest_universal"]
    ck = cs.open(DATA / "deepspeed" / "zero2_bf16_w2")
    r = cs.to_universal(ck.tag(exp["tag"]), out, inject_missing_state=True)
    assert isinstance(r, cs.UniversalResult)
    assert (r.zero_stage, r.world_size, r.tag) == (2, 2, exp["tag"])
    # The result is `ckpt universal --json`'s document: the same keys for scripts of either.
    assert pathlib.Path(r.latest_universal) == out.parent / "latest_universal"
    assert (out.parent / "latest_universal").read_text().strip() == out.name
    assert r.output == str(out) and r.files == len(written_files(out)) + 1
    assert r.bytes_written == sum(p.stat().st_size for p in written_files(out)) + len(out.name)
    written = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert written == sorted(f["path"] for f in exp["files"])
    for f in exp["files"]:
        if not f["path"].startswith("zero/") or not f.get("weights_only"):
            continue  # what only torch.load(weights_only=False) would read is never loaded here
        obj = torch.load(out / f["path"], weights_only=True)
        want = f["summary"]["tensor"] if "tensor" in f["summary"] else dict(f["summary"]["dict"])["param"]["tensor"]
        t = obj if isinstance(obj, torch.Tensor) else obj["param"]
        assert (dtype_name(t), list(t.shape), sha(t)) == (want["dtype"], want["shape"], want["sha256"]), f["path"]


def test_slim(tmp_path):
    src = DATA / "bloat" / "torch-2.x" / "gaps.pt"
    dry = cs.slim(src, tmp_path / "dry.pt", dry_run=True)
    assert isinstance(dry, cs.SlimResult) and not (tmp_path / "dry.pt").exists()
    r = cs.slim(src, tmp_path / "slim.pt")
    assert r.bytes_after < r.bytes_before and r.files[0].action == "slimmed"
    assert os.path.getsize(tmp_path / "slim.pt") == r.bytes_after
    f = r.files[0]
    assert f.used_bytes <= f.storage_bytes_after < f.storage_bytes_before and f.storages_after <= f.storages_before
    before = torch.load(src, weights_only=True)
    after = torch.load(tmp_path / "slim.pt", weights_only=True)
    assert before.keys() == after.keys()
    assert all(torch.equal(before[k], after[k]) for k in before)


def test_stats_are_torch_s_numbers():
    src = DATA / "deepspeed" / "zero2_fp32_w2"
    r = cs.stats(src, histogram=8)
    assert isinstance(r, cs.StatsResult)
    sd = cs.open(src).tag().state_dict()
    for s in r.tensors:
        if s.alias_of or s.dtype != "float32":
            continue
        t = sd[s.name].double()
        assert s.count == t.numel()
        assert (s.min, s.max) == (t.min().item(), t.max().item())
        assert s.mean == pytest.approx(t.mean().item(), rel=1e-12, abs=1e-15)
        assert s.absmax == t.abs().max().item()
        assert sum(s.histogram.bins) + s.histogram.zeros + s.histogram.non_finite >= s.count - s.zeros


def test_diff_two_tags():
    ck = cs.open(DATA / "deepspeed" / "zero2_fp32_w2")
    r = cs.diff(ck.tag("global_step2"), ck.tag("global_step4"))
    assert isinstance(r, cs.DiffResult)
    assert r["frozen.weight"].status == "identical"
    assert r["fc1.weight"].status == "changed" and r["fc1.weight"].max_abs_diff > 0
    a, b = ck.tag("global_step2").get_tensor("fc1.weight"), ck.tag("global_step4").get_tensor("fc1.weight")
    assert r["fc1.weight"].max_abs_diff == (a.double() - b.double()).abs().max().item()
    assert not r.identical
    same = cs.diff(DATA / "deepspeed" / "zero2_fp32_w2", DATA / "deepspeed" / "zero2_fp32_w2", moments=True)
    assert same.identical and "fc1.weight/exp_avg" in [t.name for t in same.tensors]


@pytest.fixture(scope="module")
def big_file(tmp_path_factory):
    """96 MiB of float32 in a real torch.save file: several 16 MiB chunks of export."""
    path = tmp_path_factory.mktemp("big") / "big.pt"
    g = torch.Generator().manual_seed(0)
    torch.save({k: torch.randn(8 << 20, generator=g) for k in "abc"}, path)
    return path


def test_progress_reports_bytes(big_file, tmp_path):
    seen = []
    cs.export(big_file, tmp_path / "o", progress=seen.append)
    writing = [p for p in seen if p.stage == "writing"]
    assert writing and all(isinstance(p, cs.Progress) for p in seen)
    assert [p.done_bytes for p in writing] == sorted(p.done_bytes for p in writing)
    assert writing[-1].done_bytes == writing[-1].total_bytes == 3 * (32 << 20)


def stop_on_first_write(action):
    def callback(p):
        if p.stage == "writing":
            action()
    return callback


def test_cancel_event_leaves_nothing(big_file, tmp_path):
    cancel = threading.Event()
    with pytest.raises(cs.Cancelled):
        cs.export(big_file, tmp_path / "o", progress=stop_on_first_write(cancel.set), cancel=cancel)
    assert os.listdir(tmp_path) == []


def interrupt_and_wait():
    """Ctrl+C as the job writes, at a point the test controls: SIGINT to the main thread (this
    callback runs on it, so the signal is taken before pthread_kill returns), then the callback
    waits for Python to raise KeyboardInterrupt in it. The job is held at this report meanwhile,
    so it cannot finish first, whatever the machine's load."""
    signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
    for _ in range(60000):  # a bound, never reached: the first check raises
        time.sleep(0.001)
    raise AssertionError("SIGINT was sent but KeyboardInterrupt never came")


def test_ctrl_c_cancels_the_job_and_leaves_nothing(big_file, tmp_path):
    with pytest.raises(KeyboardInterrupt):
        cs.export(big_file, tmp_path / "o", progress=stop_on_first_write(interrupt_and_wait))
    assert os.listdir(tmp_path) == []
    # the engine is usable afterwards
    assert cs.export(big_file, tmp_path / "again").tensors == 3


def test_ctrl_c_from_another_thread(big_file, tmp_path):
    """SIGINT, as a terminal's Ctrl+C, while the main thread waits in export with no callback
    at all: the wait loop handles Python's signals itself, so KeyboardInterrupt reaches the caller
    and no output stays; or, had the export already finished, all of it. Sent as soon as the
    export's staging folder appears beside the output."""
    out = tmp_path / "out"
    out.mkdir()
    script = textwrap.dedent(f"""
        import os, signal, threading, time, checkpoint_studio as cs
        def interrupt():
            while not os.listdir({str(out)!r}):
                time.sleep(0.001)
            os.kill(os.getpid(), signal.SIGINT)
        threading.Thread(target=interrupt, daemon=True).start()
        try:
            cs.export({str(big_file)!r}, {str(out / 'o')!r}, max_shard_size="8MB", progress=False)
            print("finished")
        except KeyboardInterrupt:
            print("interrupted")
    """)
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert run.stdout.strip() in ("interrupted", "finished"), run.stderr
    # All or nothing: no staging folder left, and an output only whole (the signal may also land
    # just after the export committed, in the Python code that follows it).
    left = os.listdir(out)
    assert left in ([], ["o"]), left
    if run.stdout.strip() == "finished":
        assert left == ["o"]
    if left:
        assert "model.safetensors.index.json" in os.listdir(out / "o")


def test_memory_stays_bounded_while_exporting(tmp_path):
    """A 384 MiB checkpoint streamed through export in a fresh process: its peak RSS stays far
    below the checkpoint's size (the engine's chunks plus the interpreter, not the tensors)."""
    if os.environ.get("CKPT_UNDER_ASAN"):
        pytest.skip("under AddressSanitizer the peak RSS counts its shadow memory and quarantine "
                    "(the ci tree's run of this suite measures it)")
    src = tmp_path / "large.pt"
    torch.save({f"t{i}": torch.ones(16 << 20) * i for i in range(6)}, src)  # 6 x 64 MiB
    # VmHWM, not ru_maxrss: Linux carries ru_maxrss over exec from the forking (pytest) process.
    script = textwrap.dedent(f"""
        import checkpoint_studio as cs
        cs.export({str(src)!r}, {str(tmp_path / 'o')!r}, max_shard_size='100MB')
        print([l.split()[1] for l in open('/proc/self/status') if l.startswith('VmHWM')][0])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert len(os.listdir(tmp_path / "o")) == 7  # a 64 MiB tensor per 100 MB shard, and the index
    peak_mib = int(out.stdout.split()[-1]) / 1024
    assert peak_mib < 160, f"peak RSS {peak_mib:.0f} MiB for a 384 MiB export"


def test_progress_true_draws_a_tqdm_bar(big_file, tmp_path, capsys):
    pytest.importorskip("tqdm", reason="python3-tqdm (tools/install-deps.sh) draws the bar")
    cs.export(big_file, tmp_path / "o", progress=True)
    err = capsys.readouterr().err
    assert "writing" in err and "/101M" in err  # the stage, over the bytes it writes


def test_progress_false_and_default_off_a_terminal_print_nothing(big_file, tmp_path, capsys):
    cs.export(big_file, tmp_path / "a", progress=False)
    cs.export(big_file, tmp_path / "b")  # stderr is no terminal under pytest
    assert capsys.readouterr().err == ""


def test_an_exception_in_the_progress_callback_cancels_the_job(big_file, tmp_path):
    def boom(p):
        if p.stage == "writing":
            raise RuntimeError("callback failed")
    with pytest.raises(RuntimeError, match="callback failed"):
        cs.export(big_file, tmp_path / "o", progress=boom)
    assert os.listdir(tmp_path) == []


def test_opened_checkpoint_is_shared_by_operations(tmp_path):
    """An opened checkpoint's tag goes to an operation without being parsed again: the result
    equals the one from the path."""
    ck = cs.open(DATA / "deepspeed" / "zero3_bf16_w2")
    a = cs.export(ck.tag("global_step2"), tmp_path / "a")
    b = cs.export(DATA / "deepspeed" / "zero3_bf16_w2", tmp_path / "b", tag="global_step2")
    assert (a.tag, a.tensors, a.bytes) == (b.tag, b.tensors, b.bytes) == ("global_step2", b.tensors, b.bytes)
    names = sorted(os.listdir(tmp_path / "a"))
    assert names == sorted(os.listdir(tmp_path / "b"))
    assert all((tmp_path / "a" / n).read_bytes() == (tmp_path / "b" / n).read_bytes() for n in names)
