"""Checkpoint Studio's engine from Python.

    import checkpoint_studio as cs
    with cs.open("run/checkpoints") as ck:          # DeepSpeed, Universal, Composer, DCP, HF, a file
        tag = ck.tag()                              # the tag `latest` names (or the only one)
        tag.keys(); tag.info.facts
        w = tag.get_tensor("lm_head.weight")        # torch tensor; zero-copy where the file allows
        rows = tag.get_slice("embed.weight")[0:10]  # reads only those rows
        sd = tag.state_dict()                       # lazy Mapping
        tag.optimizer_state("lm_head.weight")       # {"fp32", "exp_avg", "exp_avg_sq", "step"}
    cs.export("run/checkpoints", "hf_out", progress=True)
    with cs.safe_open("run/checkpoints", "pt") as f: ...  # safetensors' API, any family

Nothing here unpickles: the engine reads pickles with its own virtual machine and never imports
or calls what they name. Errors in checkpoints raise CheckpointError (a ValueError) with the
engine's one-line message naming the file.
"""

import os
from typing import Dict, List, Optional

from . import _engine
from ._engine import Cancelled, CheckpointError
from ._ops import (DiffChange, DiffResult, DiffShape, DiffSummary, ExportResult, FolderScan, Histogram, Progress,
                   ScanFinding, ScanReport, SlimFile, SlimResult, StatsResult, TensorDiff, TensorStats,
                   UniversalResult, FileVerdict, VerifyReport, diff, export, run, scan, slim, stats, to_universal,
                   verify)
from ._safe_open import load_file, safe_open
from ._tensors import LazyStateDict, LazyTensor, TensorSlice, _check_framework, _engine_name, entries, materialize

__version__ = "0.1.0"
__all__ = [
    "open", "Checkpoint", "Tag", "TagInfo", "LazyStateDict", "LazyTensor", "TensorSlice", "CheckpointError",
    "Cancelled", "Progress", "export", "to_universal", "slim", "diff", "stats", "ExportResult",
    "UniversalResult", "SlimResult", "SlimFile", "StatsResult", "TensorStats", "Histogram", "DiffResult", "TensorDiff",
    "DiffChange", "DiffShape", "DiffSummary", "scan", "FolderScan", "ScanReport", "ScanFinding", "safe_open",
    "load_file", "verify", "VerifyReport", "FileVerdict",
]


# What the window's overview says of a tag: the family's facts (label -> value) and the common
# fields, DeepSpeed's among them for every tag. A read-only value, bound from its one list of fields.
TagInfo = _engine.TagInfo


def open(path, tag=None, *, progress=False, cancel=None) -> "Checkpoint":
    """Opens a checkpoint of any family the engine knows (a DeepSpeed folder or tag folder, a
    Universal folder, a Composer file, tarball or run folder, a DCP folder, a Hugging Face folder,
    a torch.save or safetensors file): reads zip directories and pickles, no tensor bytes.
    `tag` None opens every tag (one that cannot be read keeps its error); a name opens that tag
    only, strictly."""
    p = os.fspath(path)
    engine = run(lambda poll: _engine.open(p, tag, poll), progress, cancel)
    return Checkpoint(engine, tag)


class Checkpoint:
    """An opened checkpoint: its family, tags, and the tags' tensors. Immutable; tensors taken
    from it may outlive it."""

    def __init__(self, engine, default_tag=None):
        self._engine = engine
        self._default_tag = default_tag
        self._tags = {}

    family = property(lambda self: self._engine.family, doc='"deepspeed", "universal", "file", "hf", ...')
    family_name = property(lambda self: self._engine.family_name)
    root = property(lambda self: self._engine.root)
    path = property(lambda self: self._engine.path)
    warnings = property(lambda self: list(self._engine.warnings))

    @property
    def tags(self) -> List[str]:
        """The tags, in training order."""
        return list(self._engine.tags)

    @property
    def latest(self) -> Optional[str]:
        """The tag `latest` names (or the only one); None when neither."""
        return self._engine.latest

    def tag(self, name=None) -> "Tag":
        """A tag by name; None: the one open() was given, else latest, else the only one."""
        want = self._default_tag if name is None else name
        chosen = self._engine.choose(want or "")
        if chosen not in self._tags:
            self._tags[chosen] = Tag(self, chosen)
        return self._tags[chosen]

    # The default tag's reading methods, for the common single-tag case.
    def keys(self):
        return self.tag().keys()

    def get_tensor(self, name, framework=None):
        return self.tag().get_tensor(name, framework)

    def get_slice(self, name, framework=None):
        return self.tag().get_slice(name, framework)

    def state_dict(self, **kwargs):
        return self.tag().state_dict(**kwargs)

    def optimizer_state(self, name, framework=None):
        return self.tag().optimizer_state(name, framework)

    @property
    def info(self) -> TagInfo:
        return self.tag().info

    def close(self):
        self._tags.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __repr__(self):
        return f"<checkpoint_studio.Checkpoint {self.family} {self.root!r} tags={self.tags}>"


class Tag:
    """One tag: the model's tensors in the order export writes them (zero_to_fp32's for ZeRO),
    fp32 masters for DeepSpeed ZeRO (as zero_to_fp32), as stored for other families."""

    def __init__(self, checkpoint, name):
        self._checkpoint = checkpoint
        self.name = name
        self._model = None

    def _tensors(self):
        if self._model is None:
            self._model = self._checkpoint._engine.tensors(self.name)
            self._entries = entries(self._model)
            self._by_name = {e.name: e for e in self._entries}
        return self._model

    def _entry(self, name):
        self._tensors()
        try:
            return self._by_name[name]
        except KeyError:
            raise KeyError(f"no tensor {name!r} in tag {self.name}") from None

    @property
    def info(self) -> TagInfo:
        return self._checkpoint._engine.tag_info(self.name)

    def keys(self) -> List[str]:
        self._tensors()
        return [e.name for e in self._entries]

    def __contains__(self, name):
        self._tensors()
        return name in self._by_name

    def get_tensor(self, name, framework=None):
        """The tensor (torch by default, framework="np" for numpy): a view of a private
        copy-on-write map of the file when its bytes lie there contiguous and uncast (writing to
        it never reaches the file), else filled into memory the framework owns."""
        return materialize(self._tensors(), self._entry(name), _check_framework(framework))

    def get_slice(self, name, framework=None) -> TensorSlice:
        return TensorSlice(self._tensors(), self._entry(name), _check_framework(framework))

    def state_dict(self, lazy=True, *, framework=None, dtype=None, exclude_frozen_parameters=False, ignore=(),
                   zero_copy=True):
        """The model as name -> tensor: a LazyStateDict (lazy=True), else a dict read now, tied
        names the same object. `dtype` casts floating tensors (integers keep theirs)."""
        fw = _check_framework(framework)
        if dtype is None and not exclude_frozen_parameters and not ignore:
            ts = self._tensors()
        else:
            ts = self._checkpoint._engine.tensors(self.name, "model", _engine_name(dtype), exclude_frozen_parameters,
                                                  False, list(ignore))
        sd = LazyStateDict(ts, fw, zero_copy)
        return sd if lazy else sd.materialize()

    def optimizer_parameters(self) -> List[str]:
        """The parameters optimizer_state() knows."""
        return list(self._checkpoint._engine.optimizer_parameters(self.name))

    def optimizer_state(self, name, framework=None) -> Dict[str, object]:
        """One parameter's optimizer state consolidated across ranks: {"fp32", "exp_avg",
        "exp_avg_sq", "step"} — what ds_to_universal writes in zero/<name>/ ("step" where the
        optimizer saved it as a tensor)."""
        ts = self._checkpoint._engine.tensors(self.name, "optimizer", param=name)
        fw = _check_framework(framework)
        return {e.name: materialize(ts, e, fw) for e in entries(ts)}

    def __repr__(self):
        return f"<checkpoint_studio.Tag {self.name!r}>"
