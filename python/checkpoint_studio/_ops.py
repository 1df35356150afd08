"""The `ckpt` operations from Python: export, to_universal, slim, diff, stats, scan, verify. Each takes the
CLI's options as keyword arguments, `progress=` and `cancel=`, and returns a typed result.

Progress: None (default) draws a tqdm bar when tqdm is installed and stderr is a terminal (and
CKPT_STUDIO_DISABLE_PROGRESS_BARS is unset); True asks for the bar; False for none; a callable
receives `Progress` tuples on the calling thread while the job waits for it (what it raises,
the job is cancelled for). `cancel`: a threading.Event; setting it (from any thread) cancels the
job within 100 ms and raises Cancelled. Ctrl+C cancels the job the same way and raises
KeyboardInterrupt. Cancelled or failed jobs leave no output behind."""

import collections
import os
import sys

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


# The results are the engine's own classes, each bound from the one list of fields that also
# writes its `ckpt ... --json` document (model/ops/describe.h): the attributes are the document's
# keys, `_fields` names them. Values are numbers, strings, lists and these classes; None where the
# document has null or leaves the key out.
ExportResult = _engine.ExportResult
UniversalResult = _engine.UniversalResult
SlimResult = _engine.SlimResult
SlimFile = _engine.SlimFile
StatsResult = _engine.StatsResult  # result["name"]: that tensor's TensorStats
TensorStats = _engine.TensorStats
Histogram = _engine.Histogram
VerifyReport = _engine.VerifyReport  # .whole; .files (FileVerdict: name, format, status, problems)
FileVerdict = _engine.FileVerdict
DiffResult = _engine.DiffResult  # result["name"]: a compared tensor; .identical; .counts()
TensorDiff = _engine.TensorDiff
DiffChange = _engine.DiffChange
DiffShape = _engine.DiffShape
DiffSummary = _engine.DiffSummary
FolderScan = _engine.FolderScan
ScanReport = _engine.ScanReport
ScanFinding = _engine.ScanFinding


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
           exclude_frozen_parameters=False, ignore=(), all_tensors=False, raw=False, overwrite=False,
           device="auto", manifest_out=None, progress=None, cancel=None) -> ExportResult:
    """`ckpt export`: the tag's model as a Hugging Face folder (safetensors or .bin shards and
    index); for DeepSpeed ZeRO, zero_to_fp32's names, order, shards and values. `raw`: the model
    under the checkpoint's own names where it is mapped to a Hugging Face class (Megatron's).
    `manifest_out`: also write each output tensor's digest as read from the checkpoint
    (`verify(out, manifest=...)`)."""
    s, t = _source(src, tag)
    fmt = "safetensors" if safe_serialization else "bin"
    return run(lambda poll: _engine.export(s, os.fspath(out_dir), t, fmt, _dtype(dtype), str(max_shard_size),
                                           exclude_frozen_parameters, list(ignore), all_tensors, raw, overwrite, device,
                                           os.fspath(manifest_out) if manifest_out else "", poll),
               progress, cancel)


def to_universal(src, out_dir, *, tag=None, inject_missing_state=False, overwrite=False, progress=None,
                 cancel=None) -> UniversalResult:
    """`ckpt universal`: a DeepSpeed ZeRO tag as a Universal checkpoint (ds_to_universal's files)."""
    s, t = _source(src, tag)
    return run(lambda poll: _engine.universal(s, os.fspath(out_dir), t, inject_missing_state, overwrite, poll),
               progress, cancel)


def slim(src, dst, *, dry_run=False, overwrite=False, progress=None, cancel=None) -> SlimResult:
    """`ckpt slim`: torch.save files rewritten so storages hold only what their views use."""
    return run(lambda poll: _engine.slim(os.fspath(src), os.fspath(dst), dry_run, overwrite, poll), progress, cancel)


def stats(src, *, tag=None, dtype=None, histogram=0, histogram_log10=False, device="auto", progress=None,
          cancel=None) -> StatsResult:
    """`ckpt stats`: per-tensor statistics of the tag's model (what export would write)."""
    s, t = _source(src, tag)
    return run(lambda poll: _engine.stats(s, t, _dtype(dtype), int(histogram or 0), histogram_log10, device, poll),
               progress, cancel)


def diff(a, b, *, tag_a=None, tag_b=None, moments=False, side_stats=False, device="auto", progress=None,
         cancel=None) -> DiffResult:
    """`ckpt diff`: per-tensor comparison of two tags, checkpoints or files."""
    sa, ta = _source(a, tag_a)
    sb, tb = _source(b, tag_b)
    return run(lambda poll: _engine.diff(sa, sb, ta, tb, moments, side_stats, device, poll), progress, cancel)


def scan(src, *, progress=None, cancel=None) -> FolderScan:
    """`ckpt scan`: the globals every pickle of a file, of a folder's files (any depth) or of an
    archive's members names, each marked safe or dangerous; nothing is run. A file is a scan of
    one; `.dangerous` is what makes `ckpt scan` exit with 3."""
    path = os.fspath(src)
    return run(lambda poll: _engine.scan(path, poll), progress, cancel)


def verify(src, *, tag=None, all_tags=False, manifest=None, write_manifest=None, megatron_format=False,
           progress=None, cancel=None) -> VerifyReport:
    """`ckpt verify`: what a checkpoint's files prove of it (every file its family must read, each
    zip record's CRC-32, safetensors offsets, archives read to their end) and a manifest's SHA-256
    per file (`manifest=`, or Megatron's integrity.json among the files). `.whole` is what makes
    `ckpt verify` exit with 0; damage is in the report, never raised."""
    path = os.fspath(src)
    return run(lambda poll: _engine.verify(path, tag or "", all_tags, os.fspath(manifest) if manifest else "",
                                           os.fspath(write_manifest) if write_manifest else "", megatron_format,
                                           poll), progress, cancel)
