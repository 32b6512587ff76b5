"""The contract every real-data crowd task is handed over in, and the helpers the builders share.

A :class:`CrowdTask` bundles what an ensemble method needs (the learners' responses as an
:class:`~pyromodels.data.AnnotationTable`, wrapped in :class:`~pyromodels.data.Sequences` for
sequential tasks, and a :class:`~pyromodels.data.Graph` for networked ones) with what its
evaluation needs (gold labels, the items to score and the paper's metric for the task).
Builders that take long cache their responses as compressed ``.npz`` files under
:func:`resolve_cache_dir`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ....checks import check_in
from ....data import AnnotationTable, Graph, Sequences
from ....data.annotations import TableSizes

__all__ = [
    "CrowdTask",
    "SCALES",
    "CACHE_ENV_VAR",
    "resolve_cache_dir",
    "cache_key",
    "save_cache",
    "load_cache",
    "check_scale",
    "restrict_sequences",
    "dense_table",
]

SCALES = ("small", "paper")
CACHE_ENV_VAR = "PYROMODELS_CACHE"


@dataclass(frozen=True, eq=False)
class CrowdTask(TableSizes):
    r"""One real-data ensemble task: responses, optional graph, gold and how to score.

    With :math:`N` items, :math:`M` learners and :math:`K` classes, learner :math:`m`'s
    response on item :math:`n` is a row of the table; items a learner did not label have no
    row.

    Attributes:
        name: the task's name (``"pos"``, ``"ner"``, ``"bioie"``, ``"cora"`` ...).
        sequences_or_table: ``Sequences`` whose data is the ``AnnotationTable`` (sequential
            tasks; items are the positions in order) or the ``AnnotationTable`` itself.
        gold: long tensor ``(N,)`` of class codes, ``-1`` where the truth is unknown.
        classes: the ``K`` class names; code ``k`` means ``classes[k]``.
        graph: ``Graph`` on the ``N`` items (networked tasks) or ``None``.
        notes: how the task was built and where it departs from the paper.
        metric: keyword arguments of
            :func:`~pyromodels.experiments.crowd.scores.sequence_scores` that score the
            task as the paper did (``scheme``, ``average``, ...).
        eval_mask: bool tensor ``(N,)`` of the items to score, or ``None`` for every item with
            known gold.
        info: sizes, timings and settings of the build (plain Python values).

    Example:
        >>> task = build_ner(scale="small")  # doctest: +SKIP
        >>> task.num_workers, task.num_classes  # doctest: +SKIP
        (47, 9)
    """

    name: str
    sequences_or_table: Sequences | AnnotationTable
    gold: torch.Tensor
    classes: list[str]
    graph: Graph | None = None
    notes: str = ""
    metric: dict = field(default_factory=dict)
    eval_mask: torch.Tensor | None = None
    info: dict = field(default_factory=dict)

    def __post_init__(self):
        data = self.sequences_or_table
        if isinstance(data, Sequences):
            if not isinstance(data.data, AnnotationTable):
                raise TypeError("sequences_or_table must be Sequences over an AnnotationTable")
        elif not isinstance(data, AnnotationTable):
            raise TypeError(
                "sequences_or_table must be Sequences or an AnnotationTable, got "
                f"{type(data).__name__}"
            )
        table = self.table
        if list(self.classes) != [str(c) for c in table.classes]:
            raise ValueError(
                f"classes must be the table's class names {list(table.classes)}, "
                f"got {list(self.classes)}"
            )
        gold = self.gold
        if not isinstance(gold, torch.Tensor) or gold.dtype != torch.long or gold.dim() != 1:
            raise TypeError("gold must be a 1-D long tensor of class codes (-1 = unknown)")
        if gold.shape[0] != table.num_items:
            raise ValueError(f"gold must have one entry per item ({table.num_items}), "
                             f"got {gold.shape[0]}")
        if gold.numel() and (int(gold.min()) < -1 or int(gold.max()) >= table.num_classes):
            raise ValueError(f"gold must hold codes in [-1, {table.num_classes - 1}], found "
                             f"{int(gold.min())} .. {int(gold.max())}")
        object.__setattr__(self, "classes", list(self.classes))
        if self.graph is not None:
            if not isinstance(self.graph, Graph):
                raise TypeError(f"graph must be a Graph or None, got {type(self.graph).__name__}")
            self.graph.check_matches(table)
        if self.eval_mask is not None:
            mask = self.eval_mask
            if not isinstance(mask, torch.Tensor) or mask.dtype != torch.bool:
                raise TypeError("eval_mask must be a bool tensor or None")
            if tuple(mask.shape) != (table.num_items,):
                raise ValueError(f"eval_mask must have shape ({table.num_items},), "
                                 f"got {tuple(mask.shape)}")

    # ------------------------------------------------------------------ views
    @property
    def table(self) -> AnnotationTable:
        """The responses as an AnnotationTable."""
        data = self.sequences_or_table
        return data.data if isinstance(data, Sequences) else data

    @property
    def sequences(self) -> Sequences | None:
        """The sequence boundaries, or ``None`` for a task on independent / networked items."""
        data = self.sequences_or_table
        return data if isinstance(data, Sequences) else None


    def to(self, device) -> CrowdTask:
        """A copy with the responses, gold, graph and mask on ``device``."""
        moved = {"sequences_or_table": self.sequences_or_table.to(device),
                 "gold": self.gold.to(device)}
        if self.graph is not None:
            moved["graph"] = self.graph.to(device)
        if self.eval_mask is not None:
            moved["eval_mask"] = self.eval_mask.to(device)
        return dataclasses.replace(self, **moved)

    def evaluation_mask(self) -> torch.Tensor:
        """Bool ``(N,)``: the items that are scored (known gold, and ``eval_mask`` if set)."""
        mask = self.gold >= 0
        return mask if self.eval_mask is None else mask & self.eval_mask

    def summary(self) -> dict:
        """Sizes in the paper's terms: ``N``, ``M``, ``K``, labels, sequences, edges, mean
        degree, scored items."""
        out = {"name": self.name, "N": self.num_items, "M": self.num_workers,
               "K": self.num_classes, "labels": self.table.num_labels,
               "scored": int(self.evaluation_mask().sum())}
        if self.sequences is not None:
            out["sequences"] = self.sequences.num_sequences
        if self.graph is not None:
            out["edges"] = self.graph.num_edges
            out["mean_degree"] = self.graph.mean_degree
        return out


# ---------------------------------------------------------------------------- caching
def resolve_cache_dir(cache_dir=None) -> Path:
    """The cache folder: ``cache_dir``, else ``$PYROMODELS_CACHE``, else
    ``~/.cache/pyromodels``."""
    if cache_dir is not None:
        if not isinstance(cache_dir, (str, os.PathLike)):
            raise TypeError(f"cache_dir must be a path or None, got {type(cache_dir).__name__}")
        return Path(cache_dir).expanduser()
    env = os.environ.get(CACHE_ENV_VAR, "")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pyromodels"


def cache_key(*parts) -> str:
    """A 16-hex-digit key for ``parts`` (their ``repr``), stable across runs and platforms."""
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def save_cache(path: Path, arrays: dict[str, np.ndarray]) -> Path:
    """Write ``arrays`` to a compressed ``.npz`` at ``path`` atomically (write, then rename).

    Arrays must be numeric or fixed-width strings so that the file loads without pickles.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    for name, arr in arrays.items():
        if np.asarray(arr).dtype == object:
            raise TypeError(f"cache array {name!r} must not have dtype object")
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".npz.part")
    try:
        with os.fdopen(fd, "wb") as fh:
            np.savez_compressed(fh, **arrays)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def load_cache(path: Path) -> dict[str, np.ndarray] | None:
    """The arrays of a cache file, or ``None`` when it does not exist."""
    path = Path(path)
    if not path.is_file():
        return None
    with np.load(path, allow_pickle=False) as z:
        return {key: z[key] for key in z.files}


def check_scale(scale: str) -> str:
    """Raise unless ``scale`` is ``"small"`` or ``"paper"``."""
    return check_in(scale, "scale", SCALES)


# ---------------------------------------------------------------------------- subsets
def restrict_sequences(sequences: Sequences, gold: torch.Tensor, keep) -> tuple[Sequences,
                                                                                torch.Tensor]:
    """Keep whole sequences: the positions, labels and gold of the sequences where ``keep``.

    Learners left without a label are dropped from the table (their order is kept), so a
    subset never carries idle learners.

    Args:
        sequences: ``Sequences`` over an AnnotationTable.
        gold: long tensor ``(T,)``.
        keep: bool array ``(S,)``.

    Returns:
        ``(sequences, gold)`` of the kept sequences, items renumbered ``0 .. T' - 1``.
    """
    table = sequences.data
    keep = torch.as_tensor(np.asarray(keep), dtype=torch.bool)
    if tuple(keep.shape) != (sequences.num_sequences,):
        raise ValueError(f"keep must have shape ({sequences.num_sequences},), "
                         f"got {tuple(keep.shape)}")
    if not bool(keep.any()):
        raise ValueError("keep must select at least one sequence")
    item_kept = torch.repeat_interleave(keep, sequences.lengths.cpu())
    new_code = torch.cumsum(item_kept.long(), 0) - 1
    rows = item_kept[table.item_idx.cpu()]
    workers_used, worker_code = torch.unique(table.worker_idx.cpu()[rows], return_inverse=True)
    sub = AnnotationTable(
        new_code[table.item_idx.cpu()[rows]], worker_code, table.label_idx.cpu()[rows],
        pd.RangeIndex(int(item_kept.sum())), table.workers[workers_used.numpy()], table.classes,
        allow_repeats=table.allow_repeats,
    )
    return Sequences(sub, sequences.lengths.cpu()[keep]), gold.cpu()[item_kept]


def dense_table(responses: np.ndarray, workers, classes, items=None) -> AnnotationTable:
    """A table from an ``(N, M)`` matrix of class codes, ``-1`` where a learner gave no label.

    ``items`` are the ``N`` item ids (default ``0 .. N - 1``); items without any label stay.
    """
    responses = np.asarray(responses)
    items_index = pd.RangeIndex(responses.shape[0]) if items is None else pd.Index(items)
    items, learners = np.nonzero(responses >= 0)
    return AnnotationTable(
        torch.from_numpy(items.astype(np.int64)), torch.from_numpy(learners.astype(np.int64)),
        torch.from_numpy(responses[items, learners].astype(np.int64)),
        items_index, pd.Index(list(workers)), pd.Index(list(classes)),
    )
