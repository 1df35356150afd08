#!/usr/bin/env python3
"""Runs bench/make_large_checkpoint.py on a machine without DeepSpeed (Debian's torch 1.13).

Why a wrapper: the committed templates (tests/data/deepspeed/zero2_bf16_w4) pickle three DeepSpeed
globals -- deepspeed.runtime.fp16.loss_scaler.LossScaler, deepspeed.runtime.zero.config.ZeroStageEnum
and deepspeed.utils.tensor_fragment.fragment_address -- and the generator imports fragment_address
itself, so torch.load / the script fail with "No module named 'deepspeed'". We register minimal
stand-ins under the same module paths, so unpickling works and torch.save writes the very same
global names back (the files stay DeepSpeed-shaped; ckpt never imports anything anyway).

Extra option (the generator's smallest model is one 2048-wide layer plus a 32000x2048 embedding,
~1.6 GB of input; the harness wants a few hundred MB):
  --hidden H   width of the generated model (ffn = 2.6875 * H, as in the generator's default)
All other arguments go to make_large_checkpoint.py unchanged. `--mimic` works too (torch 1.13 lacks
Tensor.untyped_storage(), which it uses; see patch_old_torch).
"""
import dataclasses
import enum
import pathlib
import runpy
import sys
import types


def _module(name):
    parts = name.split(".")
    for i in range(1, len(parts) + 1):
        full = ".".join(parts[:i])
        if full not in sys.modules:
            sys.modules[full] = types.ModuleType(full)
            if i > 1:
                setattr(sys.modules[".".join(parts[:i - 1])], parts[i - 1], sys.modules[full])
    return sys.modules[name]


def install_deepspeed_stubs():
    m = _module("deepspeed.runtime.fp16.loss_scaler")

    class LossScaler:  # unpickled with __new__ + __dict__ state; no behaviour needed
        pass
    LossScaler.__module__, LossScaler.__qualname__ = m.__name__, "LossScaler"
    m.LossScaler = LossScaler

    m = _module("deepspeed.runtime.zero.config")

    class ZeroStageEnum(int, enum.Enum):  # as in DeepSpeed
        disabled = 0
        optimizer_states = 1
        gradients = 2
        weights = 3
        max_stage = 3
    ZeroStageEnum.__module__, ZeroStageEnum.__qualname__ = m.__name__, "ZeroStageEnum"
    m.ZeroStageEnum = ZeroStageEnum

    m = _module("deepspeed.utils.tensor_fragment")

    @dataclasses.dataclass
    class fragment_address:  # as in DeepSpeed
        numel: int
        start: int
    fragment_address.__module__ = m.__name__
    fragment_address.__qualname__ = "fragment_address"
    m.fragment_address = fragment_address


def patch_old_torch():
    """--mimic compares storage sizes with Tensor.untyped_storage(), which torch < 2.0 lacks;
    there Tensor.storage().nbytes() is the same number."""
    import torch
    if not hasattr(torch.Tensor, "untyped_storage"):
        torch.Tensor.untyped_storage = lambda self: self.storage()


def main():
    argv = sys.argv[1:]
    if "--hidden" in argv and "--ffn" not in argv:  # the generator's own options; the MLP scaled alike
        hidden = int(argv[argv.index("--hidden") + 1])
        argv += ["--ffn", str(hidden * 5504 // 2048)]
    install_deepspeed_stubs()
    patch_old_torch()
    script = pathlib.Path(__file__).resolve().parents[2] / "bench" / "make_large_checkpoint.py"
    g = runpy.run_path(str(script), run_name="make_large_checkpoint")
    sys.argv = [str(script)] + argv
    return g["main"]()


if __name__ == "__main__":
    sys.exit(main())
