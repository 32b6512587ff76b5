r"""Data-parallel, out-of-core Dawid-Skene EM on a Dask cluster.

The labels are a Dask DataFrame (or parquet / CSV files, :mod:`pyromodels.data.dask_labels`).
:func:`prepare_labels` codes them once: the worker and class ids by a distributed
factorisation, then the rows shuffled by task so that each task's labels lie in one partition
(a task whose labels straddle the input partitions is brought together), and each partition
coded and grouped by task as the C passes read it (a
:class:`~.kernels.groups.GroupedCells`, 4 bytes a label, plus the partition's task ids,
one per task). Those partitions are persisted on the workers for the whole fit; the raw
strings are not kept.

Each EM iteration is one pass per partition on the worker that holds it
(:func:`~.kernels.array_passes.em_counts`: the E-step and its sufficient statistics, the
expected confusion counts ``(M, K, K)``, the class totals ``(K,)`` and
:math:`\log p(\text{labels} \mid \theta)`), summed on the workers in a fixed tree (so the
result does not depend on which worker ran what), and one M-step on the client: the loop of
:func:`~.array_em.em_loop`, the same M-step, objective and stopping rule as the in-memory fit
(:func:`~.array_em.fit_em`). Only the summed statistics and the parameters travel: about
``M * K * K`` numbers each way per iteration.

A worker lost during the fit loses its partitions; Dask recomputes them from the graph (the
read, the shuffle and the coding) when the next pass asks for them, and the sums, formed in
the same order, are the same.

The task posteriors come back as a Dask DataFrame (:func:`posterior_frame`), computed from
the persisted partitions when asked for.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ...data.columns import count_labels
from ...data.dask_labels import class_index, code_partition, distributed_index, group_items
from ...data.idmaps import c_table_passes, plain
from .array_em import ArrayPrior, EMPasses, EMRun, em_loop
from .kernels import array_passes
from .kernels.groups import GroupedCells, grouped_cells

__all__ = ["PartitionLabels", "LabelSummary", "ClusterLabels", "prepare_labels",
           "cluster_passes", "fit_cluster_em", "posterior_frame", "LABEL_COLUMN"]

#: the column of each task's most probable class in :func:`posterior_frame` (crowd-kit's name
#: for the aggregated label)
LABEL_COLUMN = "agg_label"

#: partitions summed per task in the reduction tree
FAN_IN = 8


class PartitionLabels(NamedTuple):
    """One persisted partition: its labels grouped by task (``None`` when it has none) and
    its task ids (code ``n`` is ``items[n]``)."""

    cells: GroupedCells | None
    items: pd.Index


class LabelSummary(NamedTuple):
    """Label counts of the whole table, summed over the partitions (what the checks and the
    default prior read)."""

    per_worker: np.ndarray  # (M,) labels per worker
    pairs: np.ndarray  # (K, M) bool, the (class, worker) pairs that occur
    per_class: np.ndarray  # (K,) labels per class
    num_items: int
    num_labels: int
    repeats: int  # rows whose (task, worker) pair occurred before


class ClusterLabels(NamedTuple):
    """Coded labels persisted on a cluster (:func:`prepare_labels`)."""

    client: object
    parts: list  # futures of PartitionLabels
    workers: pd.Index
    classes: pd.Index
    summary: LabelSummary
    item_dtype: object  # the dtype of the task ids

    @property
    def num_workers(self) -> int:
        return len(self.workers)

    @property
    def num_classes(self) -> int:
        return len(self.classes)


def _prepare_partition(part: pd.DataFrame, item: str, worker: str, label: str,
                       workers: pd.Index, classes: pd.Index):
    """``(PartitionLabels, its LabelSummary)`` of one shuffled partition (one without rows,
    which a shuffle can leave, holds ``cells=None`` and counts nothing)."""
    codes = code_partition(part, item, worker, label, workers, classes)
    M, K = len(workers), len(classes)
    if codes.num_labels == 0:
        zero = np.zeros(M, dtype=np.int64)
        return PartitionLabels(None, codes.items), LabelSummary(
            zero, np.zeros((K, M), dtype=bool), np.zeros(K, dtype=np.int64), 0, 0, 0)
    passes = c_table_passes()
    per_item, per_worker, pairs = count_labels(codes, passes)
    per_class = np.bincount(codes.label_idx, minlength=K)
    repeats = int(passes.count_repeats(codes.num_items, codes.num_workers,
                                       np.ascontiguousarray(codes.item_idx),
                                       np.ascontiguousarray(codes.worker_idx)))
    summary = LabelSummary(per_worker, pairs, per_class, len(per_item), codes.num_labels, repeats)
    return PartitionLabels(grouped_cells(codes), codes.items), summary


def _first(pair):
    return pair[0]


def _summary(pair) -> LabelSummary:
    return pair[1]


def _add_summaries(*parts: LabelSummary) -> LabelSummary:
    out = parts[0]
    for s in parts[1:]:
        out = LabelSummary(out.per_worker + s.per_worker, out.pairs | s.pairs,
                           out.per_class + s.per_class, out.num_items + s.num_items,
                           out.num_labels + s.num_labels, out.repeats + s.repeats)
    return out


def _add_stats(*parts: tuple) -> tuple:
    """Element-wise sums of ``(counts, totals, log_marginal)`` (or any tuples of arrays and
    numbers), left to right."""
    out = parts[0]
    for s in parts[1:]:
        out = tuple(a + b for a, b in zip(out, s))
    return out


def _tree_sum(client, futures: list, add):
    """The future of ``add`` over ``futures``, summed on the workers in groups of
    :data:`FAN_IN` in their list order (the same tree, so the same rounding, every time)."""
    while len(futures) > 1:
        futures = [client.submit(add, *futures[i:i + FAN_IN], pure=False)
                   for i in range(0, len(futures), FAN_IN)]
    return futures[0]


def prepare_labels(client, ddf, item: str, worker: str, label: str, classes=None
                   ) -> ClusterLabels:
    """Code the labels of ``ddf`` (columns ``item``, ``worker``, ``label``) and persist them
    on ``client``'s workers (see the module doc).

    Args:
        client: a ``distributed.Client``.
        ddf: the Dask DataFrame of labels (checked columns).
        item, worker, label: its column names.
        classes: the declared classes (their order), or ``None`` for the sorted labels.

    Raises:
        ValueError: missing ids, mixed id kinds, a label outside ``classes``.
    """
    import dask

    workers = distributed_index(ddf[worker], f"df[{worker!r}]")
    class_ids = class_index(ddf[label], f"df[{label!r}]", classes)
    shuffled = group_items(ddf, item)
    pairs = [dask.delayed(_prepare_partition)(part, item, worker, label, workers, class_ids)
             for part in shuffled.to_delayed()]
    pair_futures = client.compute(pairs)
    parts = [client.submit(_first, f, pure=False) for f in pair_futures]
    summary = _tree_sum(client, [client.submit(_summary, f, pure=False)
                                 for f in pair_futures], _add_summaries).result()
    del pair_futures  # the parts keep their lineage; the summaries are no longer needed
    return ClusterLabels(client, parts, workers, class_ids, summary, ddf[item].dtype)


def _part_em_counts(part: PartitionLabels, pi: np.ndarray, conf: np.ndarray,
                    num_workers: int):
    if part.cells is None:
        K = len(pi)
        return np.zeros((num_workers, K, K)), np.zeros(K), 0.0
    return array_passes.em_counts(part.cells, pi, conf, num_workers, "c")


def _part_vote_counts(part: PartitionLabels, num_workers: int, num_classes: int):
    if part.cells is None:
        return np.zeros((num_workers, num_classes, num_classes)), np.zeros(num_classes)
    return array_passes.vote_counts(part.cells, num_workers)


def cluster_passes(labels: ClusterLabels) -> EMPasses:
    """The passes of one EM fit run on the partitions of ``labels``: each partition on its
    worker, the statistics summed there (:func:`_tree_sum`), one result to the client."""
    client, M = labels.client, labels.num_workers

    def vote_counts():
        futures = [client.submit(_part_vote_counts, p, M, labels.num_classes, pure=False)
                   for p in labels.parts]
        return _tree_sum(client, futures, _add_stats).result()

    def em_counts(pi, conf):
        pi_f, conf_f = client.scatter([pi, conf], broadcast=True, hash=False)
        futures = [client.submit(_part_em_counts, p, pi_f, conf_f, M, pure=False)
                   for p in labels.parts]
        return _tree_sum(client, futures, _add_stats).result()

    return EMPasses(vote_counts, em_counts)


def fit_cluster_em(labels: ClusterLabels, spec: ArrayPrior, floor: float, max_iter: int,
                   tol: float, warn_not_converged: bool = True) -> EMRun | None:
    """EM on the cluster (:func:`~.array_em.em_loop` over :func:`cluster_passes`); arguments
    and ``None`` as :func:`~.array_em.fit_em`."""
    return em_loop(cluster_passes(labels), spec, floor, max_iter, tol, warn_not_converged)


def _vote_fractions(cells: GroupedCells) -> np.ndarray:
    """``(N, K)`` float64 share of each task's labels given to each class."""
    K = cells.num_classes
    counts = np.diff(cells.ptr)
    item = np.repeat(np.arange(cells.num_items), counts)
    votes = np.bincount(item * K + cells.cells % K, minlength=cells.num_items * K)
    return votes.reshape(cells.num_items, K) / counts[:, None]


def _posterior_part(part: PartitionLabels, previous, dtype, classes: pd.Index,
                    item_name: str) -> pd.DataFrame:
    """One partition's rows of :func:`posterior_frame`."""
    if part.cells is None:
        q, best = np.zeros((0, len(classes))), np.zeros(0, dtype=np.int64)
    elif previous is None:
        q = _vote_fractions(part.cells)
        best = q.argmax(-1)
    else:
        prior, confusion = previous
        q, loglik, best = array_passes.posteriors(
            part.cells, np.ascontiguousarray(prior, dtype=np.float64),
            array_passes.columns(confusion), "c", best=True)
        if not np.isfinite(loglik).all():
            n = int(np.flatnonzero(~np.isfinite(loglik))[0])
            raise ValueError(f"task {plain(part.items[n])!r} is impossible under every class "
                             "(exact zeros in the confusion matrices): use em_floor > 0")
    q = q.astype(dtype).astype(np.float64)  # the fit's dtype, as the in-memory probas_
    q = q / q.sum(-1, keepdims=True)
    frame = pd.DataFrame(q, index=pd.Index(part.items, name=item_name), columns=classes)
    frame[LABEL_COLUMN] = classes.to_numpy()[best]
    return frame


def posterior_frame(labels: ClusterLabels, run: EMRun, dtype, item_name: str):
    """The class posteriors of the tasks as a Dask DataFrame, one partition per persisted
    partition: indexed by task id (``item_name``), one float64 column per class, and
    :data:`LABEL_COLUMN`, the most probable class (the first on ties). They are crowd-kit's
    ``probas_``: the E-step of the parameters the last step started from, or the
    majority-vote fractions when no step was taken (see :func:`~.array_em.fit_em`)."""
    import dask
    import dask.dataframe as dd

    client = labels.client
    previous = None if run.previous is None else client.scatter(run.previous, hash=False)
    classes = labels.classes
    meta = pd.DataFrame(np.empty((0, len(classes))), columns=classes,
                        index=pd.Index([], name=item_name, dtype=labels.item_dtype))
    meta[LABEL_COLUMN] = pd.Series(classes[:0], index=meta.index, dtype=classes.dtype)
    parts = [dask.delayed(_posterior_part)(p, previous, np.dtype(dtype), classes, item_name)
             for p in labels.parts]
    return dd.from_delayed(parts, meta=meta, verify_meta=False)
