"""The running counts of a Dawid-Skene fit's labels: what fit checks and reads off all its
rows, kept so that :meth:`DawidSkeneEstimator.partial_fit
<pyromodels.crowd.estimators.DawidSkeneEstimator.partial_fit>` updates them from the new rows
alone.

A fit on the arrays (:mod:`.array_fit`) counts its labels once (:func:`count_stats`): labels
per task and per worker and the (class, worker) pairs that occur (the label checks of
:func:`~pyromodels.crowd.ds.label_checks.check_label_counts`), labels per class (the default
``diagonal``, :func:`~pyromodels.crowd.estimators.em_prior.em_diagonal`), the (worker,
label given) pairs in the order they first occur (the row order of ``errors_``,
:func:`~pyromodels.crowd.estimators.base.errors_row_order`) and whether a worker labelled a
task twice. :func:`update_stats` gives the counts of the fitted labels followed by new rows
from the fitted counts and the new rows: work that grows with the new rows and with the
numbers of tasks and workers, never with the fitted labels. The counts equal those of the
joined labels counted afresh.

EM's passes read the labels grouped by task (:func:`~pyromodels.crowd.ds.kernels.groups.item_cells`);
:func:`join_item_cells` forms those of the joined labels from the fitted ones' by inserting
the new rows, a copy instead of a grouping pass over all rows.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ...data.columns import count_labels
from ..ds.kernels.groups import built_item_cells, item_cells, keep_item_cells
from .base import first_pairs

__all__ = ["LabelStats", "count_stats", "update_stats", "new_rows_repeat", "join_item_cells"]


class LabelStats(NamedTuple):
    """The running counts of coded labels (see the module doc)."""

    per_item: np.ndarray  # (N,) int64
    per_worker: np.ndarray  # (M,) int64
    pairs: np.ndarray  # (K, M) bool: the (class, worker) pairs that occur
    per_class: np.ndarray  # (K,) int64
    #: (worker * K + label) codes of the pairs given, in the order each first occurs
    first: np.ndarray
    #: True: no (task, worker) pair occurs twice; None: not known (not counted)
    repeat_free: bool | None


def count_stats(codes, passes, repeat_free: bool | None) -> LabelStats:
    """The counts of ``codes`` (a :class:`~pyromodels.data.columns.LabelCodes`), counted over
    all its rows with the C pass ``passes`` (:func:`~pyromodels.data.idmaps.c_table_passes`);
    ``repeat_free`` as the caller found it."""
    per_item, per_worker, pairs = count_labels(codes, passes)
    per_class = np.bincount(codes.label_idx, minlength=codes.num_classes).astype(np.int64)
    return LabelStats(per_item, per_worker, pairs, per_class, first_pairs(codes), repeat_free)


def _moved(values: np.ndarray, moves: np.ndarray | None, size: int, axis: int = 0):
    """``values`` laid out for ``size`` codes along ``axis``, the fitted code ``i`` at
    ``moves[i]`` (at ``i`` when ``moves`` is ``None``), zero elsewhere."""
    shape = list(values.shape)
    shape[axis] = size
    out = np.zeros(shape, dtype=values.dtype)
    where = [slice(None)] * values.ndim
    where[axis] = slice(0, values.shape[axis]) if moves is None else moves
    out[tuple(where)] = values
    return out


def update_stats(stats: LabelStats, codes, new_rows, item_moves, worker_moves) -> LabelStats:
    """The counts of ``codes``: the fitted labels counted in ``stats``, then ``new_rows``.

    Args:
        stats: the counts of the fitted labels, in their codes.
        codes: all labels (:class:`~pyromodels.data.columns.LabelCodes`), fitted then new.
        new_rows: the codes in ``codes`` of the new rows' ``(tasks, workers, labels)``.
        item_moves, worker_moves: the code in ``codes`` of each fitted task and worker
            (``None``: unchanged).

    Returns:
        The counts of ``codes`` (``repeat_free`` is ``stats``'; see :func:`new_rows_repeat`).
    """
    N, M, K = codes.num_items, codes.num_workers, codes.num_classes
    items, workers, labels = new_rows
    per_item = _moved(stats.per_item, item_moves, N)
    per_item += np.bincount(items, minlength=N)
    per_worker = _moved(stats.per_worker, worker_moves, M)
    per_worker += np.bincount(workers, minlength=M)
    pairs = _moved(stats.pairs, worker_moves, M, axis=1)
    pairs[labels, workers] = True
    per_class = stats.per_class + np.bincount(labels, minlength=K)
    first = stats.first
    if worker_moves is not None:
        first = worker_moves[first // K] * K + first % K
    new = pd.unique(workers * K + labels).astype(np.int64, copy=False)
    seen = np.zeros(M * K, dtype=bool)
    seen[first] = True
    first = np.concatenate([first, new[~seen[new]]])
    return LabelStats(per_item, per_worker, pairs, per_class, first, stats.repeat_free)


def new_rows_repeat(codes, new_rows) -> bool:
    """Whether one of ``new_rows`` (codes in ``codes`` of their ``(tasks, workers, labels)``,
    the last rows of ``codes``) labels a (task, worker) pair of another row of ``codes``,
    the earlier rows holding no such repeat among themselves.

    Compares each new row's worker with the workers of its task's labels only, read from
    the labels grouped by task that EM's passes read
    (:func:`~pyromodels.crowd.ds.kernels.groups.item_cells`, built once per set of codes):
    work that grows with the new rows and their tasks' labels. Needs the C passes.
    """
    K = codes.num_classes
    tasks, workers = new_rows[0], new_rows[1]
    ptr, cells = item_cells(codes)
    begin, lengths = ptr[tasks], ptr[tasks + 1] - ptr[tasks]  # each >= 1: the row itself
    offsets = np.cumsum(lengths) - lengths
    rows = np.repeat(begin - offsets, lengths) + np.arange(int(lengths.sum()))
    same = cells[rows] // K == np.repeat(workers, lengths)
    # each new row meets itself once in its task's labels; a repeat meets its pair too
    return bool((np.add.reduceat(same, offsets) > 1).any()) if len(offsets) else False


def join_item_cells(fitted, codes, new_rows, per_item: np.ndarray, item_moves,
                    worker_moves) -> bool:
    """Form :func:`~pyromodels.crowd.ds.kernels.groups.item_cells` of ``codes`` (``fitted``'s
    rows, then new ones) from those of ``fitted`` and the new rows, and cache them for
    ``codes``; ``False`` (nothing done) where ``fitted``'s were not built.

    Each task's labels stay in row order, the fitted ones before the new ones, as the
    grouping pass (a stable sort by task) puts them.

    Args:
        fitted: the fitted codes.
        codes: all labels, ``fitted``'s rows first.
        new_rows: the codes in ``codes`` of the new rows' ``(tasks, workers, labels)``.
        per_item: labels per task of ``codes`` (:func:`update_stats`).
        item_moves, worker_moves: the code in ``codes`` of each fitted task and worker
            (``None``: unchanged).
    """
    built = built_item_cells(fitted)
    K = codes.num_classes
    if built is None or codes.num_workers * K >= 2 ** 31:
        return False
    old_ptr, old_cells = built
    items, workers, labels = new_rows
    order = np.argsort(items, kind="stable")
    new_cells = (workers * K + labels)[order]
    items = items[order]
    # the fitted tasks whose codes are at most each new row's: its labels go after theirs
    before = (np.minimum(items + 1, fitted.num_items) if item_moves is None
              else np.searchsorted(item_moves, items, side="right"))
    if worker_moves is not None:
        remap = (worker_moves[:, None] * K + np.arange(K)).ravel().astype(np.int32)
        old_cells = remap[old_cells]
    cells = np.insert(old_cells, old_ptr[before], new_cells.astype(np.int32))
    ptr = np.zeros(codes.num_items + 1, dtype=np.int64)
    np.cumsum(per_item, out=ptr[1:])
    keep_item_cells(codes, ptr, cells)
    return True
