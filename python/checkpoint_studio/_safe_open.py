"""safetensors' reading API over every checkpoint family: code written for
`safetensors.safe_open` / `safetensors.torch.load_file` reads a DeepSpeed folder, a Composer
file, a DCP folder or a torch.save file unchanged (and never unpickles it).

Where it differs from safetensors, on purpose:
- any path the engine opens (a folder reads its `latest` tag, or `tag=`), and URLs;
- `keys()` is sorted, as safetensors' is; `offset_keys()` is the checkpoint's own order (for
  a safetensors file, the order of the bytes in the file, as safetensors gives it);
- frameworks "pt" and "np" (safetensors also has tf, flax, mlx, paddle);
- a device other than "cpu" reads on the CPU and moves the tensor there (torch only).
"""

import os

from ._tensors import TensorSlice, _check_framework, entries, materialize


def _device(device, framework):
    if device is None or str(device) == "cpu":
        return None
    if framework != "pt":
        raise ValueError(f"device {device!r}: numpy arrays live on the CPU")
    return device


class safe_open:  # noqa: N801 (safetensors' name)
    """safe_open(path, framework="pt", device="cpu", tag=None) as a context manager (or
    closed by close()). `framework` "pt"/"torch" or "np"/"numpy"; None: torch when installed."""

    def __init__(self, filename, framework="pt", device="cpu", *, tag=None):
        from . import open as open_checkpoint
        self._framework = _check_framework(framework)
        self._device = _device(device, self._framework)
        self._checkpoint = open_checkpoint(os.fspath(filename), tag)
        self._tag = self._checkpoint.tag()
        self._set = self._tag._tensors()
        self._entries = {e.name: e for e in entries(self._set)}

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._checkpoint.close()

    def keys(self):
        """The tensor names, sorted (as safetensors gives them)."""
        return sorted(self._entries)

    def offset_keys(self):
        """The tensor names in the checkpoint's order."""
        return list(self._entries)

    def metadata(self):
        """A safetensors file's "__metadata__" (a dict of strings); None for other checkpoints."""
        return self._checkpoint._engine.safetensors_metadata()

    def _entry(self, name):
        try:
            return self._entries[name]
        except KeyError:
            raise KeyError(f"no tensor {name!r} in {self._checkpoint.path}") from None

    def get_tensor(self, name):
        t = materialize(self._set, self._entry(name), self._framework)
        return t.to(self._device) if self._device is not None else t

    def get_slice(self, name):
        return TensorSlice(self._set, self._entry(name), self._framework)


def load_file(filename, device="cpu", *, framework="pt", tag=None):
    """safetensors.torch.load_file: {name: tensor} of the whole checkpoint, in its order; tied
    names are the same tensor."""
    with safe_open(filename, framework, device, tag=tag) as f:
        out, done = {}, {}
        for name in f.offset_keys():
            e = f._entries[name]
            target = e.alias_of or name
            if target not in done:
                done[target] = f.get_tensor(target)
            out[name] = done[target]
        return out
