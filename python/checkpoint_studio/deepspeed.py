"""DeepSpeed's zero_to_fp32 functions, without DeepSpeed: same names, signatures and results
(keys in the same order, the same dtypes, bit-identical values, tied names the same object),
read by the engine (no pickle is ever executed).

Where this differs from deepspeed.utils.zero_to_fp32, on purpose:
- lazy_mode=True is lazy at every stage (DeepSpeed: ZeRO-3 trainable parameters only) and its
  values are LazyTensors whose .contiguous() reads the tensor; without it each tensor is read
  once into its own memory (or mapped), so memory is the model's size, never twice it.
- convert_zero_checkpoint_to_fp32_state_dict writes tied weights to safetensors (one copy, the
  alias named in the metadata, as save_model does) where DeepSpeed raises "Some tensors share
  memory"; and it writes the output set atomically.
- Besides ZeRO 1-3 folders it reads what the engine opens (Universal, BF16_Optimizer saves).
"""

import os
from collections import OrderedDict

from . import _engine
from ._ops import export, run
from ._tensors import LazyStateDict, LazyTensor, entries, materialize

__all__ = [
    "get_fp32_state_dict_from_zero_checkpoint", "load_state_dict_from_zero_checkpoint",
    "convert_zero_checkpoint_to_fp32_state_dict", "to_torch_tensor", "clone_tensors_for_torch_save",
    "get_lazy_state_dict",
]


def _open_tag(checkpoint_dir, tag, progress=None):
    checkpoint_dir = os.fspath(checkpoint_dir)
    if not os.path.isdir(checkpoint_dir):
        raise FileNotFoundError(f"Directory '{checkpoint_dir}' doesn't exist")
    engine = run(lambda poll: _engine.open(checkpoint_dir, tag or "", poll), progress, None)
    return engine, engine.choose(tag or "")


def _stage1_zero(engine, tag):
    info = engine.tag_info(tag)
    return info.converts_to_universal and info.zero_stage == 1


def get_lazy_state_dict(checkpoint_dir, tag=None, exclude_frozen_parameters=False):
    """The same dictionary as a LazyStateDict (a Mapping reading each value when asked)."""
    engine, chosen = _open_tag(checkpoint_dir, tag)
    ts = engine.tensors(chosen, "deepspeed", None, exclude_frozen_parameters)
    return LazyStateDict(ts, "pt")


def get_fp32_state_dict_from_zero_checkpoint(checkpoint_dir, tag=None, exclude_frozen_parameters=False,
                                             lazy_mode=False):
    """zero_to_fp32's consolidated fp32 state dict (an OrderedDict).

    checkpoint_dir: the folder holding the tag folders (and `latest`); tag: a tag folder's name
    (None: the one `latest` names); exclude_frozen_parameters: leave frozen parameters out;
    lazy_mode: values are LazyTensors, read by .contiguous()."""
    engine, chosen = _open_tag(checkpoint_dir, tag)
    ts = engine.tensors(chosen, "deepspeed", None, exclude_frozen_parameters)
    out, done = OrderedDict(), {}
    for e in entries(ts):
        target = e.alias_of or e.name
        if target not in done:
            done[target] = LazyTensor(ts, e, "pt") if lazy_mode else materialize(ts, e, "pt")
        out[e.name] = done[target]
    return out


def load_state_dict_from_zero_checkpoint(model, checkpoint_dir, tag=None):
    """Loads the consolidated fp32 weights into `model` (moved to the CPU first) with
    load_state_dict(strict=False), as DeepSpeed does, and returns the model."""
    state_dict = get_fp32_state_dict_from_zero_checkpoint(checkpoint_dir, tag)
    model = model.cpu()
    model.load_state_dict(state_dict, strict=False)
    return model


def convert_zero_checkpoint_to_fp32_state_dict(checkpoint_dir, output_dir, max_shard_size="5GB",
                                               safe_serialization=False, tag=None,
                                               exclude_frozen_parameters=False, *, progress=None, cancel=None):
    """Writes zero_to_fp32's files into output_dir: pytorch_model*.bin (or model*.safetensors)
    shards of at most max_shard_size and, when sharded, the index — the same names, tensors
    and bytes. Files of an earlier conversion in output_dir are replaced, others kept."""
    engine, chosen = _open_tag(checkpoint_dir, tag, progress)
    # zero_to_fp32 leaves stage-1 frozen parameters out (DeepSpeed saves their fragments from
    # stage 2 on); `ckpt export` recovers them from the module, so the drop-in asks it not to.
    exclude = exclude_frozen_parameters or _stage1_zero(engine, chosen)
    from . import Checkpoint
    return export(Checkpoint(engine, chosen), output_dir, safe_serialization=safe_serialization, max_shard_size=max_shard_size,
                  exclude_frozen_parameters=exclude, overwrite=True, progress=progress, cancel=cancel)



def to_torch_tensor(state_dict, return_empty_tensor=False):
    """zero_to_fp32's to_torch_tensor: a lazy_mode dict's values read (or, with
    return_empty_tensor, empty tensors of their shape and dtype), in place; names that shared one
    value share one tensor."""
    import torch
    converted = {}
    for name, tensor in state_dict.items():
        first = converted.setdefault(id(tensor), name)
        if first != name:
            state_dict[name] = state_dict[first]
        elif return_empty_tensor:
            state_dict[name] = torch.empty(tuple(tensor.shape), dtype=tensor.dtype)
        else:
            state_dict[name] = tensor.contiguous()
    return state_dict


def clone_tensors_for_torch_save(item, device=None):
    """deepspeed.checkpoint.utils.clone_tensors_for_torch_save: tensors (and LazyTensors) in
    lists, tuples and dicts copied to `device` (CPU by default), so torch.save writes each one's
    own bytes instead of a whole shared storage."""
    import torch
    device = torch.device("cpu") if device is None else device
    if isinstance(item, LazyTensor):
        item = item.contiguous()
    if torch.is_tensor(item):
        return item.detach().clone().to(device)
    if isinstance(item, list):
        return [clone_tensors_for_torch_save(v, device) for v in item]
    if isinstance(item, tuple):
        return tuple(clone_tensors_for_torch_save(v, device) for v in item)
    if isinstance(item, dict):
        return type(item)({k: clone_tensors_for_torch_save(v, device) for k, v in item.items()})
    return item
