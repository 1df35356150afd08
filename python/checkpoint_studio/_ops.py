"""The `ckpt` operations from Python: export, to_universal, slim, diff, stats. Each takes the
CLI's options as keyword arguments, `progress=` and `cancel=`, and returns a typed result.

Progress: None (default) draws a tqdm bar when tqdm is installed and stderr is a terminal (and
CKPT_STUDIO_DISABLE_PROGRESS_BARS is unset); True asks for the bar; False for none; a callable
receives `Progress` tuples on the calling thread while the job waits for it (what it raises,
the job is cancelled for). `cancel`: a threading.Event; setting it (from any thread) cancels the
job within 100 ms and raises Cancelled. Ctrl+C cancels the job the same way and raises
KeyboardInterrupt. Cancelled or failed jobs leave no output behind."""

import collections
import dataclasses
import os
import sys
from typing import List, Optional

from . import _engine

Progress = collections.namedtuple("Progress", "stage done_bytes total_bytes permille note")
Progress.__doc__ = "One progress report: stage text, bytes done of total, 0-1000, and a one-off note."


class _Bar:
    """A tqdm bar over bytes, its description the stage."""

    def __init__(self, tqdm):
        self._tqdm = tqdm
        self._bar = None
        self._stage = None

    def __call__(self, p):
        if p.note:
            (self._bar.write if self._bar else lambda s: print(s, file=sys.stderr))(p.note)
            return
        if self._bar is None:
            self._bar = self._tqdm(total=p.total_bytes or None, unit="B", unit_scale=True, desc=p.stage, leave=False)
        elif p.total_bytes and self._bar.total != p.total_bytes:
            self._bar.reset(total=p.total_bytes)  # a new stage with its own byte count
        self._bar.update(max(0, p.done_bytes - self._bar.n))
        if p.stage != self._stage:
            self._stage = p.stage
            self._bar.set_description(p.stage)  # drawn at once: a stage shows even when brief

    def close(self):
        if self._bar is not None:
            self._bar.close()


def _tqdm():
    try:
        from tqdm.auto import tqdm
        return tqdm
    except ImportError:
        return None


def _callback(progress):
    """(callable or None, closer)."""
    if progress is None:
        quiet = os.environ.get("CKPT_STUDIO_DISABLE_PROGRESS_BARS") or not sys.stderr.isatty()
        progress = False if quiet or _tqdm() is None else True
    if progress is False:
        return None, None
    if progress is True:
        tqdm = _tqdm()
        if tqdm is None:
            raise ImportError("progress=True needs tqdm: pip install tqdm")
        bar = _Bar(tqdm)
        return bar, bar.close
    if not callable(progress):
        raise TypeError("progress must be None, a bool or a callable")
    return progress, None


def run(job, progress=None, cancel=None):
    """Runs `job(poll)` (an _engine call) with progress forwarded and cancel honoured."""
    callback, close = _callback(progress)

    def poll(p):
        if cancel is not None and cancel.is_set():
            raise _engine.Cancelled("cancelled")
        if p is not None and callback is not None:
            callback(Progress(*p))

    try:
        return job(poll if (callback is not None or cancel is not None) else None)
    finally:
        if close:
            close()


def _build(cls, d):
    return cls(**{f.name: d[f.name] for f in dataclasses.fields(cls) if f.name in d})


@dataclasses.dataclass
class ExportResult:
    tag: str
    files: List[str]  # written, index last
    tensors: int
    bytes: int
    warnings: List[str]


@dataclasses.dataclass
class UniversalResult:
    tag: str
    tag_dir: str
    output: str
    latest_universal: str  # the file beside the folder that DeepSpeed's load_universal reads
    zero_stage: int
    world_size: int
    tensor_parallel: int
    optimizer: str
    parameters: int
    files: int
    tensor_bytes: int
    copied_bytes: int
    bytes_written: int
    warnings: List[str]


@dataclasses.dataclass
class SlimFile:
    path: str
    action: str
    bytes_before: int
    bytes_after: int
    storage_bytes_before: int
    storage_bytes_after: int
    used_bytes: int
    storages_before: int
    storages_after: int


@dataclasses.dataclass
class SlimResult:
    files: List[SlimFile]
    warnings: List[str]
    bytes_before: int
    bytes_after: int


@dataclasses.dataclass
class TensorStats:
    name: str
    alias_of: str
    dtype: str
    shape: List[int]
    count: int
    zeros: int
    nans: int
    infs: int
    min: float
    max: float
    mean: float
    std: float
    absmax: float
    l2: float
    histogram: Optional[dict]


@dataclasses.dataclass
class StatsResult:
    source: str
    device: str
    tensors: List[TensorStats]
    skipped: List[str]
    warnings: List[str]

    def __getitem__(self, name):
        return next(t for t in self.tensors if t.name == name)


@dataclasses.dataclass
class TensorDiff:
    name: str
    status: str  # identical, changed, only_a, only_b, shape_or_dtype, dtype_changed
    dtype_a: str
    dtype_b: str
    shape_a: List[int]
    shape_b: List[int]
    compared: bool
    bitwise_known: bool
    count: int
    bitwise_equal: int
    nan_mismatch: int
    max_abs_diff: float
    l2_diff: float
    rel_l2: float
    cosine: float
    stats_a: Optional[dict]
    stats_b: Optional[dict]


@dataclasses.dataclass
class DiffResult:
    a: dict
    b: dict
    device: str
    tensors: List[TensorDiff]
    warnings: List[str]

    def __getitem__(self, name):
        return next(t for t in self.tensors if t.name == name)

    @property
    def identical(self):
        return all(t.status == "identical" for t in self.tensors)

    def counts(self):
        """{status: number of tensors}."""
        return dict(collections.Counter(t.status for t in self.tensors))


def _source(src, tag):
    """(engine source, tag): a path, or an opened Checkpoint / Tag (nothing parsed again)."""
    from . import Checkpoint, Tag
    if isinstance(src, Tag):
        return src._checkpoint._engine, src.name if tag is None else tag
    if isinstance(src, Checkpoint):
        return src._engine, (src._default_tag or "") if tag is None else tag
    return os.fspath(src), tag or ""


def _dtype(dtype):
    from ._tensors import _engine_name
    return _engine_name(dtype)


def export(src, out_dir, *, tag=None, safe_serialization=True, max_shard_size="5GB", dtype=None,
           exclude_frozen_parameters=False, ignore=(), all_tensors=False, overwrite=False, device="auto",
           progress=None, cancel=None) -> ExportResult:
    """`ckpt export`: the tag's model as a Hugging Face folder (safetensors or .bin shards and
    index); for DeepSpeed ZeRO, zero_to_fp32's names, order, shards and values."""
    s, t = _source(src, tag)
    fmt = "safetensors" if safe_serialization else "bin"
    d = run(lambda poll: _engine.export(s, os.fspath(out_dir), t, fmt, _dtype(dtype), str(max_shard_size),
                                        exclude_frozen_parameters, list(ignore), all_tensors, overwrite, device,
                                        poll), progress, cancel)
    return _build(ExportResult, d)


def to_universal(src, out_dir, *, tag=None, inject_missing_state=False, overwrite=False, progress=None,
                 cancel=None) -> UniversalResult:
    """`ckpt universal`: a DeepSpeed ZeRO tag as a Universal checkpoint (ds_to_universal's files)."""
    s, t = _source(src, tag)
    d = run(lambda poll: _engine.universal(s, os.fspath(out_dir), t, inject_missing_state, overwrite, poll),
            progress, cancel)
    return _build(UniversalResult, d)


def slim(src, dst, *, dry_run=False, overwrite=False, progress=None, cancel=None) -> SlimResult:
    """`ckpt slim`: torch.save files rewritten so storages hold only what their views use."""
    d = run(lambda poll: _engine.slim(os.fspath(src), os.fspath(dst), dry_run, overwrite, poll), progress, cancel)
    d["files"] = [_build(SlimFile, f) for f in d["files"]]
    return _build(SlimResult, d)


def stats(src, *, tag=None, dtype=None, histogram=0, histogram_log10=False, device="auto", progress=None,
          cancel=None) -> StatsResult:
    """`ckpt stats`: per-tensor statistics of the tag's model (what export would write)."""
    s, t = _source(src, tag)
    d = run(lambda poll: _engine.stats(s, t, _dtype(dtype), int(histogram or 0), histogram_log10, device, poll),
            progress, cancel)
    d["tensors"] = [_build(TensorStats, x) for x in d["tensors"]]
    return _build(StatsResult, d)


def diff(a, b, *, tag_a=None, tag_b=None, moments=False, side_stats=False, device="auto", progress=None,
         cancel=None) -> DiffResult:
    """`ckpt diff`: per-tensor comparison of two tags, checkpoints or files."""
    sa, ta = _source(a, tag_a)
    sb, tb = _source(b, tag_b)
    d = run(lambda poll: _engine.diff(sa, sb, ta, tb, moments, side_stats, device, poll), progress, cancel)
    d["tensors"] = [_build(TensorDiff, x) for x in d["tensors"]]
    return _build(DiffResult, d)
