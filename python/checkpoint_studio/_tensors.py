"""Tensors out of the engine's tensor sets: torch tensors (default) or numpy arrays, zero-copy
views of a private copy-on-write map where the bytes lie contiguous and uncast in one file, else
filled by the engine (on all cores, the GIL released) into memory the framework owns."""

import collections.abc
import importlib
import math

# Engine (torch) dtype names that numpy has natively; bf16 and fp8 come from ml_dtypes.
_NUMPY_NATIVE = {
    "float64", "float32", "float16", "int64", "int32", "int16", "int8", "uint8", "bool",
    "complex128", "complex64", "uint16", "uint32", "uint64",
}
_ML_DTYPES = {
    "bfloat16": "bfloat16", "float8_e5m2": "float8_e5m2", "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2fnuz": "float8_e5m2fnuz", "float8_e4m3fnuz": "float8_e4m3fnuz",
    "float8_e8m0fnu": "float8_e8m0fnu",
}


def _torch():
    try:
        return importlib.import_module("torch")
    except ImportError:
        return None


def default_framework():
    """"pt" when torch imports, else "np" (torch is optional)."""
    return "pt" if _torch() is not None else "np"


def _check_framework(framework):
    if framework is None:
        return default_framework()
    aliases = {"pt": "pt", "torch": "pt", "pytorch": "pt", "np": "np", "numpy": "np"}
    if framework not in aliases:
        raise ValueError(f"framework must be 'pt' or 'np', not {framework!r}")
    return aliases[framework]


def torch_dtype(name):
    torch = _torch()
    if torch is None:
        raise ImportError("torch is not installed: use framework='np'")
    dt = getattr(torch, name, None)
    if not isinstance(dt, torch.dtype):
        raise TypeError(f"this torch ({torch.__version__}) has no dtype {name}")
    return dt


def numpy_dtype(name):
    import numpy as np
    if name in _NUMPY_NATIVE:
        return np.dtype(name if name != "bool" else np.bool_)
    if name in _ML_DTYPES:
        try:
            ml_dtypes = importlib.import_module("ml_dtypes")
        except ImportError:
            raise TypeError(f"numpy has no {name}: pip install ml_dtypes (checkpoint-studio[numpy]) "
                            "or use framework='pt'") from None
        return np.dtype(getattr(ml_dtypes, _ML_DTYPES[name]))
    raise TypeError(f"numpy cannot hold {name} tensors")


def _engine_name(dtype):
    """torch.bfloat16 / numpy dtype / "bf16" / "bfloat16" -> the engine's name, or None."""
    if dtype is None:
        return None
    short = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "fp64": "float64", "half": "float16",
             "float": "float32", "double": "float64"}
    if isinstance(dtype, str):
        return short.get(dtype, dtype)
    text = str(dtype)
    if text.startswith("torch."):
        return text[6:]
    return short.get(text, text)


class _Entry:
    """One tensor of a set: (name, dtype, shape, nbytes, alias_of, in_place)."""
    __slots__ = ("index", "name", "dtype", "shape", "nbytes", "alias_of", "in_place")

    def __init__(self, index, info):
        self.index = index
        self.name, self.dtype, shape, self.nbytes, self.alias_of, self.in_place = info
        self.shape = tuple(shape)


def entries(tensors):
    return [_Entry(i, tensors.info(i)) for i in range(len(tensors))]


def materialize(tensors, entry, framework, zero_copy=True):
    """The whole tensor, as torch or numpy."""
    if framework == "pt":
        dt = torch_dtype(entry.dtype)
        raw = tensors.mapped(entry.index) if zero_copy and entry.in_place else None
        torch = _torch()
        if raw is not None:
            return torch.from_numpy(raw).view(dt).reshape(entry.shape)
        out = torch.empty(entry.shape, dtype=dt)
        if entry.nbytes:
            tensors.fill(entry.index, out.data_ptr(), 0, entry.nbytes)
        return out
    import numpy as np
    dt = numpy_dtype(entry.dtype)
    raw = tensors.mapped(entry.index) if zero_copy and entry.in_place else None
    if raw is not None:
        return raw.view(dt).reshape(entry.shape)
    out = np.empty(entry.shape, dtype=dt)
    if entry.nbytes:
        tensors.fill(entry.index, out.ctypes.data, 0, entry.nbytes)
    return out


def read_rows(tensors, entry, framework, start, stop):
    """Rows [start, stop) of dimension 0, reading only their bytes."""
    rows = stop - start
    row_bytes = entry.nbytes // entry.shape[0] if entry.shape[0] else 0
    shape = (rows,) + entry.shape[1:]
    if framework == "pt":
        torch = _torch()
        out = torch.empty(shape, dtype=torch_dtype(entry.dtype))
        address = out.data_ptr()
    else:
        import numpy as np
        out = np.empty(shape, dtype=numpy_dtype(entry.dtype))
        address = out.ctypes.data
    if rows and row_bytes:
        tensors.fill(entry.index, address, start * row_bytes, rows * row_bytes)
    return out


class TensorSlice:
    """safetensors' PySafeSlice: shape and dtype without reading, and `[...]` reading only the
    rows asked for when the index is a row range (else the tensor, then the index)."""

    def __init__(self, tensors, entry, framework):
        self._tensors, self._entry, self._framework = tensors, entry, framework

    def get_shape(self):
        return list(self._entry.shape)

    def get_dtype(self):
        return self._entry.dtype

    @property
    def shape(self):
        return self._entry.shape

    def __getitem__(self, index):
        rest = ()
        if isinstance(index, tuple) and index:
            index, rest = index[0], index[1:]
        e = self._entry
        if e.shape and not e.in_place and isinstance(index, (int, slice)):
            n = e.shape[0]
            if isinstance(index, int):
                i = index + n if index < 0 else index
                if not 0 <= i < n:
                    raise IndexError(f"index {index} is out of bounds for dimension 0 with size {n}")
                rows = read_rows(self._tensors, e, self._framework, i, i + 1)[0]
                return rows[rest] if rest else rows
            start, stop, step = index.indices(n)
            if step == 1:
                rows = read_rows(self._tensors, e, self._framework, start, max(start, stop))
                return rows[(slice(None),) + rest] if rest else rows
        whole = materialize(self._tensors, e, self._framework)
        return whole[(index,) + rest] if rest else whole[index]


class LazyTensor:
    """A tensor not read yet: shape, dtype and size known; `.contiguous()` reads it (so code
    written for DeepSpeed's lazy_mode GatheredTensor runs unchanged)."""

    __slots__ = ("_tensors", "_entry", "_framework", "_zero_copy")

    def __init__(self, tensors, entry, framework, zero_copy=True):
        self._tensors, self._entry, self._framework, self._zero_copy = tensors, entry, framework, zero_copy

    @property
    def shape(self):
        torch = _torch() if self._framework == "pt" else None
        return torch.Size(self._entry.shape) if torch is not None else self._entry.shape

    @property
    def dtype(self):
        e = self._entry.dtype
        return torch_dtype(e) if self._framework == "pt" else numpy_dtype(e)

    @property
    def nbytes(self):
        return self._entry.nbytes

    def numel(self):
        return math.prod(self._entry.shape)

    @property
    def zero_copy(self):
        """Whether reading it maps the file instead of copying (contiguous, uncast bytes)."""
        return bool(self._entry.in_place and self._zero_copy)

    def contiguous(self):
        return materialize(self._tensors, self._entry, self._framework, self._zero_copy)

    def numpy(self):
        return materialize(self._tensors, self._entry, "np", self._zero_copy)

    def __repr__(self):
        return f"LazyTensor(shape={list(self._entry.shape)}, dtype={self._entry.dtype}, nbytes={self.nbytes})"


class LazyStateDict(collections.abc.Mapping):
    """name -> tensor in the checkpoint's order; a value is read when it is asked for, and not
    kept (ask again and it is read again). `lazy(name)` gives the LazyTensor; `materialize()` a
    plain dict whose tied names are the same object."""

    def __init__(self, tensors, framework, zero_copy=True):
        self._tensors = tensors
        self._framework = framework
        self._zero_copy = zero_copy
        self._entries = entries(tensors)
        self._by_name = {e.name: e for e in self._entries}

    def _target(self, name):
        e = self._by_name[name]
        return self._by_name[e.alias_of] if e.alias_of else e

    def __getitem__(self, name):
        return materialize(self._tensors, self._target(name), self._framework, self._zero_copy)

    def __iter__(self):
        return (e.name for e in self._entries)

    def __len__(self):
        return len(self._entries)

    def __contains__(self, name):
        return name in self._by_name

    def lazy(self, name):
        return LazyTensor(self._tensors, self._target(name), self._framework, self._zero_copy)

    def tied(self):
        """{alias: target} of the tied names."""
        return {e.name: e.alias_of for e in self._entries if e.alias_of}

    def materialize(self, keys=None):
        out, done = {}, {}
        for e in self._entries:
            if keys is not None and e.name not in keys:
                continue
            t = self._target(e.name)
            if t.name not in done:
                done[t.name] = materialize(self._tensors, t, self._framework, self._zero_copy)
            out[e.name] = done[t.name]
        return out

    def __repr__(self):
        return f"LazyStateDict({len(self)} tensors)"
