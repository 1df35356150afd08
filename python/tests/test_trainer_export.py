"""Issue 27: an export of a Hugging Face Trainer checkpoint is a folder that
`AutoModelForCausalLM.from_pretrained` loads offline and that gives the logits the fixture generator
recorded (tests/data/trainer/expected/<run>/<checkpoint>.logits.safetensors: the model rebuilt from
config.json + the reference state dict, fp32, eval mode). Skipped only where transformers is not
installed (.venv-trainer has it). The export runs through the `ckpt` command CKPT_BINARY names when
set, else through checkpoint_studio when importable, else through `ckpt` on PATH or in a build folder
of this repository."""
import json
import os
import subprocess

import pytest

from conftest import DATA, ckpt_binary

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")
from safetensors.torch import load_file  # noqa: E402  (transformers brings safetensors)

TRAINER = DATA / "trainer"
EXPECTED = TRAINER / "expected"
# The stack that recorded the logits: with the same torch and transformers they must come out
# bit for bit; another stack (CI's: Debian's torch 1.13 with transformers 4.44, the newest that
# runs on it) computes the same model with other kernels, equal to float32 rounding.
RECORDED = json.loads((TRAINER / "versions.json").read_text())
SAME_STACK = torch.__version__ == RECORDED["torch"] and transformers.__version__ == RECORDED["transformers"]
TRANSFORMERS_5 = int(transformers.__version__.split(".")[0]) >= 5


def assert_same_logits(got, want):
    if SAME_STACK:
        assert torch.equal(got, want), (got - want).abs().max()
    else:
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)


def cases():
    out = []
    for run in sorted(p.name for p in EXPECTED.iterdir() if p.is_dir()):
        for f in sorted((EXPECTED / run).glob("*.logits.safetensors")):
            out.append((run, f.name[: -len(".logits.safetensors")]))
    if not out:
        raise AssertionError(f"no expectations in {EXPECTED}")
    return out


def export(src, out, tag, dtype=None):
    try:
        if os.environ.get("CKPT_BINARY"):  # that build, not an installed module
            raise ImportError
        import checkpoint_studio as cs
    except ImportError:
        cmd = [ckpt_binary(), "export", str(src), str(out)] + (["--tag", tag] if tag else [])
        cmd += ["--dtype", dtype] if dtype else []
        subprocess.run(cmd, check=True, capture_output=True)
        return
    cs.export(src, out, tag=tag, dtype=dtype, progress=False)


def logits_of(folder, input_ids):
    model = transformers.AutoModelForCausalLM.from_pretrained(folder, local_files_only=True)
    model.eval()
    with torch.no_grad():
        return model(input_ids=input_ids).logits


@pytest.mark.parametrize("run,checkpoint", cases(), ids=[f"{r}/{c}" for r, c in cases()])
def test_export_loads_with_from_pretrained(tmp_path, run, checkpoint):
    ref = load_file(EXPECTED / run / f"{checkpoint}.logits.safetensors")
    src = TRAINER / run if checkpoint == "final" else TRAINER / run / checkpoint
    export(src, tmp_path / "out", None)
    config = json.loads((tmp_path / "out" / "config.json").read_text())
    assert config["dtype"] == "float32"
    logits = logits_of(tmp_path / "out", ref["input_ids"])
    assert logits.dtype == torch.float32
    assert_same_logits(logits, ref["logits"])


def test_tokenizer_travels_with_the_export(tmp_path):
    """The run saved a tokenizer: AutoTokenizer loads it from the export as from the checkpoint."""
    if not TRANSFORMERS_5:
        pytest.skip("this run's tokenizer_config.json names transformers 5's TokenizersBackend")
    src = TRAINER / "gpt2_zero2_fp32_w2" / "checkpoint-4"
    export(src, tmp_path / "out", None)
    text = "hello world"
    want = transformers.AutoTokenizer.from_pretrained(src, local_files_only=True)(text)["input_ids"]
    got = transformers.AutoTokenizer.from_pretrained(tmp_path / "out", local_files_only=True)(text)["input_ids"]
    assert got == want


def test_bf16_export_loads_in_bf16(tmp_path):
    """--dtype bf16: config.json says bfloat16, so transformers loads the model in bf16."""
    run = "llama_zero3_bf16_w3"
    ref = load_file(EXPECTED / run / "checkpoint-4.logits.safetensors")
    export(TRAINER / run / "checkpoint-4", tmp_path / "out", None, dtype="bf16")
    assert json.loads((tmp_path / "out" / "config.json").read_text())["dtype"] == "bfloat16"
    if not TRANSFORMERS_5:
        pytest.skip("transformers < 5 reads torch_dtype; this run's config.json (transformers 5) says dtype")
    model = transformers.AutoModelForCausalLM.from_pretrained(tmp_path / "out", local_files_only=True)
    assert next(model.parameters()).dtype == torch.bfloat16
    with torch.no_grad():
        logits = model.eval()(input_ids=ref["input_ids"]).logits.float()
    assert (logits - ref["logits"]).abs().max() < 0.05
