"""No pickle is ever executed from Python either, and damaged input is one CheckpointError
naming the file, never a crash: the committed corrupt fixtures (real files damaged on purpose,
tools/fixtures/make_corrupt_fixtures.py) and pickles whose loading would run a command."""
import json
import os
import pathlib
import subprocess
import sys
import textwrap

import pytest
import torch

import checkpoint_studio as cs
from conftest import DATA, sha

CORRUPT = json.loads((DATA / "corrupt" / "expect.json").read_text())


def read_everything(path):
    """Opens and reads every tensor of every tag: where a damaged file must fail."""
    ck = cs.open(path)
    for name in ck.tags:
        tag = ck.tag(name)
        for key in tag.keys():
            tag.get_tensor(key, framework="np" if "complex" in key else None)
    return ck


@pytest.mark.parametrize("name", sorted(CORRUPT))
def test_corrupt_files(name):
    path = DATA / "corrupt" / name
    want = CORRUPT[name]
    if "error" not in want:
        read_everything(path)  # opens (cycles and shared references are not errors)
        return
    with pytest.raises(cs.CheckpointError) as e:
        read_everything(path)
    message = str(e.value)
    # random.bin: `ckpt inspect` (the expectation's source) words it "not a PyTorch checkpoint";
    # the family registry, which open() goes through, gives the legacy reader's own reason.
    words = ["unknown opcode"] if name == "random.bin" else [want["error"]]
    assert any(w in message for w in words), message
    assert str(path) in message and "\n" not in message  # one line, naming the file
    assert e.value.file == str(path)


def test_the_dangerous_fixture_never_runs(tmp_path):
    """tests/data/torch/torch-2.x/dangerous.pt: unpickling it would run os.system(echo ...).
    A fresh interpreter opens it, reads its tensors, exports it: the echo never appears."""
    path = DATA / "torch" / "torch-2.x" / "dangerous.pt"
    exp = json.loads(path.with_name("dangerous.expect.json").read_text())
    script = textwrap.dedent(f"""
        import checkpoint_studio as cs
        ck = cs.open({str(path)!r})
        t = ck.tag()
        print(t.keys(), t.get_tensor("weights").sum().item())
        print(cs.export({str(path)!r}, {str(tmp_path / 'out')!r}).tensors)
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "should-never-run" not in out.stdout + out.stderr
    assert cs.open(path).tag().keys() == ["weights"]
    assert sha(cs.open(path).tag().get_tensor("weights")) == exp["tensors"][0]["sha256"]


class _Touch:
    """Pickled by real torch.save as a call of os.system; loading it would create `marker`."""

    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (os.system, (f"touch {self.marker}",))


class _Exec:
    def __init__(self, marker):
        self.marker = marker

    def __reduce__(self):
        return (exec, (f"open({str(self.marker)!r}, 'w').close()",))


@pytest.mark.parametrize("payload", [_Touch, _Exec], ids=["os.system", "builtins.exec"])
def test_malicious_pickles_never_run(payload, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "evil.pt"
    torch.save({"weight": torch.arange(6.0), "payload": payload(marker), "nested": [payload(marker)]}, path)
    ck = read_everything(path)
    tag = ck.tag()
    assert torch.equal(tag.get_tensor("weight"), torch.arange(6.0))
    sd = tag.state_dict(lazy=False)
    cs.stats(path)
    cs.export(path, tmp_path / "out", all_tensors=True)
    cs.slim(path, tmp_path / "slim.pt")
    assert not marker.exists()
    assert "weight" in sd


def test_a_directory_that_is_no_checkpoint(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(cs.CheckpointError) as e:
        cs.open(tmp_path)
    assert str(tmp_path) in str(e.value)


def test_a_missing_path(tmp_path):
    with pytest.raises(cs.CheckpointError, match="nothing-here"):
        cs.open(tmp_path / "nothing-here")


def test_importing_the_package_imports_no_framework():
    out = subprocess.run([sys.executable, "-c", "import sys, checkpoint_studio, checkpoint_studio.deepspeed; "
                          "print('torch' in sys.modules, 'numpy' in sys.modules)"],
                         capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["False", "False"], out.stderr
