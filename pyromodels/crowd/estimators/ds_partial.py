r"""What :meth:`DawidSkeneEstimator.partial_fit
<pyromodels.crowd.estimators.DawidSkeneEstimator.partial_fit>` adds to a fit: the new labels
coded onto the fitted ones, and EM's warm start.

**Stored data.** A fitted estimator keeps its labels as codes (three int64 arrays, 24 bytes
a label: 144 MB for 6,000,000 labels) with the id indexes of its tasks, workers and classes;
that is all ``partial_fit`` reads besides the fitted parameters and the fit's running counts
(:mod:`.ds_stats`). :func:`append_labels` codes the new rows against those indexes, extended
by the new tasks and workers, and returns the codes of all labels, old then new: where the
fitted codes hold (the new ids sort after the fitted ones) the new rows are appended as a part
of a :class:`JoinedCodes`, which copies no fitted label; otherwise the fitted codes are
recoded and copied, the old and the joined codes both held while it runs (about 24 bytes a
label more, at the peak). Only the new rows are checked: the fitted ones were checked by fit.

**Ids.** The extended task and worker indexes stay sorted, as a fit's are (ids that cannot be
ordered keep the fitted ones first), so the codes, and every fitted attribute's row order,
are those of a fit to all the rows.

**Warm start** (:func:`warm_start`). Fitted workers keep their confusion matrices and the
class prior is kept. A new worker starts from the pooled confusion matrix of the fitted
workers, row ``k`` being :math:`\sum_m L_m \Gamma_{m,k,\cdot} / \sum_m L_m` with
:math:`L_m` worker ``m``'s number of labels: what a worker of the crowd answers for a task of
true class ``k``, a label-weighted average of the workers' class-conditional rows (an
unknown worker is taken for an average one, not for a perfect or a random one). New tasks get
no start of their own: EM's first E-step gives them (and every task) their posteriors under
these parameters.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from ...data.columns import LabelCodes, check_columns, item_column
from ...data.idmaps import check_id_kinds, check_no_missing, to_numpy
from .ds_stats import LabelStats, join_item_cells, update_stats

__all__ = ["Appended", "JoinedCodes", "fitted_codes", "append_labels", "warm_start",
           "update_inputs"]


class Appended(NamedTuple):
    """All labels coded after ``partial_fit``'s rows were appended.

    ``codes`` holds the fitted labels first, then the new rows; ``worker_codes[m]`` is the
    new code of fitted worker ``m`` and ``item_codes[n]`` that of fitted task ``n``
    (``None``: the codes are unchanged).
    """

    codes: LabelCodes
    worker_codes: np.ndarray | None  # (M_fitted,) int64
    item_codes: np.ndarray | None  # (N_fitted,) int64
    new_rows: tuple  # the new rows' (tasks, workers, labels) codes in ``codes``, int64


class JoinedCodes(LabelCodes):
    """:class:`~pyromodels.data.columns.LabelCodes` kept as parts, the fitted codes and then
    the codes of each update's rows (``(tasks, workers, labels)`` int64 arrays), joined into
    one array per column when a column is first read (then kept as one part).

    An update whose codes keep the fitted ones (new ids sorting after the fitted ones)
    appends its rows here instead of copying every fitted label: EM reads the labels
    grouped by task, joined from the fitted ones (:func:`~.ds_stats.join_item_cells`), and
    the columns are joined only where something reads them (``table_``, or a fit whose
    grouped labels were not kept, as after loading a pickle).
    """

    def __init__(self, parts, items: pd.Index, workers: pd.Index, classes: pd.Index):
        for name, value in (("_parts", list(parts)), ("items", items), ("workers", workers),
                            ("classes", classes)):
            object.__setattr__(self, name, value)

    @property
    def num_labels(self) -> int:
        return sum(len(part[0]) for part in self._parts)

    def _column(self, i: int) -> np.ndarray:
        if len(self._parts) > 1:
            joined = tuple(np.concatenate([part[j] for part in self._parts]) for j in range(3))
            object.__setattr__(self, "_parts", [joined])
        return self._parts[0][i]

    item_idx = property(lambda self: self._column(0), doc="int64 ``(L,)`` task codes")
    worker_idx = property(lambda self: self._column(1), doc="int64 ``(L,)`` worker codes")
    label_idx = property(lambda self: self._column(2), doc="int64 ``(L,)`` class codes")


def _parts(codes: LabelCodes) -> list:
    """The parts of ``codes`` (:class:`JoinedCodes`), or its columns as one part."""
    if isinstance(codes, JoinedCodes):
        return list(codes._parts)
    return [(codes.item_idx, codes.worker_idx, codes.label_idx)]


def fitted_codes(table) -> LabelCodes:
    """The codes and id indexes of a fitted annotation table (no copy where the table's
    tensors are on the CPU)."""
    if isinstance(table, LabelCodes):
        return table
    return LabelCodes(*(to_numpy(c, "codes").astype(np.int64, copy=False)
                        for c in (table.item_idx, table.worker_idx, table.label_idx)),
                      table.items, table.workers, table.classes)


def _check_classes(values: pd.Series, classes: pd.Index, name: str, declared) -> None:
    """Raise unless the labels ``values`` lie in the fitted ``classes`` (a categorical column
    must declare exactly those classes, and so must the estimator's ``classes=``)."""
    fixed = (f"the class set is fixed by fit, {list(classes)}: declare every class there "
             "(classes=) and refit to add one")
    if declared is not None and not pd.Index(list(declared)).equals(classes):
        raise ValueError(f"classes={list(declared)} is not the class set the model was fitted "
                         f"with; {fixed}")
    if isinstance(values.dtype, pd.CategoricalDtype) and not values.cat.categories.equals(classes):
        raise ValueError(f"{name} is categorical with categories {list(values.cat.categories)}, "
                         f"not the fitted classes; {fixed}")
    check_no_missing(values, name)
    unknown = pd.Index(pd.unique(values.to_numpy())).difference(classes)
    if len(unknown):
        raise ValueError(f"{name} holds {len(unknown)} label(s) outside the fitted classes, "
                         f"e.g. {list(unknown[:5])}; {fixed}")


def _coded(fitted: pd.Index, values: pd.Series, name: str):
    """``(index, codes, moved)``: ``fitted`` with the new ids of ``values`` added (sorted
    where the ids can be ordered), the codes of ``values`` in it, and the new code of each
    fitted id (``None`` when unchanged). The work grows with the new rows, not with
    ``fitted``, when the new ids sort after the fitted ones (ids that grow over time)."""
    check_no_missing(values, name)
    check_id_kinds(values, name)
    arr = values.to_numpy()
    codes = fitted.get_indexer(arr).astype(np.int64, copy=False)
    unseen = codes < 0
    if not unseen.any():
        return fitted, codes, None
    fresh = pd.Index(pd.unique(arr[unseen]))
    # the fitted ids are of one kind (fit checked them): one stands for all
    check_id_kinds(pd.Series(fitted[:1].append(fresh)), name)
    try:
        fresh = fresh.sort_values()
        after = not len(fitted) or bool(fresh[0] > fitted[-1])
    except TypeError:  # ids that cannot be ordered: the fitted ones keep their codes
        fresh, after = pd.Index(pd.unique(arr[unseen])), True
    codes[unseen] = len(fitted) + fresh.get_indexer(arr[unseen])
    index = fitted.append(fresh)
    if after:
        return index, codes, None
    try:
        index, order = index.sort_values(return_indexer=True)
    except TypeError:  # fitted ids that cannot be ordered: they keep their codes
        return index, codes, None
    rank = np.empty(len(order), dtype=np.int64)
    rank[order] = np.arange(len(order))
    return index, rank[codes], rank[:len(fitted)]


def append_labels(fitted: LabelCodes, df, task: str, worker: str, label: str,
                  declared_classes=None) -> Appended:
    """Code the rows of ``df`` against ``fitted`` and join them after its labels.

    Args:
        fitted: the fitted codes and id indexes.
        df: the new labels, one row per judgement, with the fit's columns.
        task, worker, label: the column names (``task`` falls back to ``"item"`` as in fit).
        declared_classes: the estimator's ``classes=`` (checked against the fitted ones).

    Raises:
        ValueError: a column is missing (:class:`~pyromodels.data.columns.MissingColumnError`),
            ``df`` has no rows, a label lies outside the fitted classes (or the class set
            differs), or an id is missing or of another kind than the fitted ones.
    """
    task = item_column(df, task)
    check_columns(df, {"task": task, "worker": worker, "label": label})
    _check_classes(df[label], fitted.classes, f"df[{label!r}]", declared_classes)
    items, new_items, item_moves = _coded(fitted.items, df[task], f"df[{task!r}]")
    workers, new_workers, worker_moves = _coded(fitted.workers, df[worker], f"df[{worker!r}]")
    new_labels = fitted.classes.get_indexer(df[label].to_numpy()).astype(np.int64, copy=False)
    new_rows = (new_items, new_workers, new_labels)
    if item_moves is None and worker_moves is None:  # the fitted codes hold: join on reading
        codes = JoinedCodes(_parts(fitted) + [new_rows], items, workers, fitted.classes)
        return Appended(codes, None, None, new_rows)
    # the fitted columns (joined here where they are parts, not kept on ``fitted``)
    parts = _parts(fitted)
    old = parts[0] if len(parts) == 1 else [np.concatenate(column) for column in zip(*parts)]
    old_items = old[0] if item_moves is None else item_moves[old[0]]
    old_workers = old[1] if worker_moves is None else worker_moves[old[1]]
    codes = LabelCodes(np.concatenate([old_items, new_items]),
                       np.concatenate([old_workers, new_workers]),
                       np.concatenate([old[2], new_labels]), items, workers, fitted.classes)
    return Appended(codes, worker_moves, item_moves, new_rows)


def warm_start(fitted: LabelCodes, appended: Appended, prior: np.ndarray,
               confusion: np.ndarray, per_worker=None) -> tuple[np.ndarray, np.ndarray]:
    """EM's warm start on the appended labels: ``(prior (K,), confusion (M, K, K))``.

    Args:
        fitted: the fitted codes (for each fitted worker's number of labels).
        appended: :func:`append_labels`' result.
        prior: the fitted class prior ``(K,)``.
        confusion: the fitted confusion matrices ``(M_fitted, K, K)``, rows = true class.
        per_worker: each fitted worker's number of labels when known (the fit's running
            counts, :mod:`.ds_stats`); otherwise counted from ``fitted``.

    Returns:
        The fitted prior, and the fitted workers' matrices at their new codes with the
        pooled matrix (see the module doc) for the new workers, float64.
    """
    if per_worker is None:
        per_worker = np.bincount(fitted.worker_idx, minlength=fitted.num_workers)
    per_worker = np.asarray(per_worker, dtype=np.float64)
    pooled = np.tensordot(per_worker, confusion, axes=1) / per_worker.sum()
    M = appended.codes.num_workers
    start = np.broadcast_to(pooled, (M,) + pooled.shape).copy()
    where = (np.arange(fitted.num_workers) if appended.worker_codes is None
             else appended.worker_codes)
    start[where] = confusion
    return np.array(prior, dtype=np.float64), start


def update_inputs(fitted: LabelCodes, appended: Appended, arrays, priors: pd.Series,
                  confusions: pd.DataFrame) -> tuple[tuple, LabelStats | None]:
    """``(warm start, counts)`` of an update: EM's start (:func:`warm_start`) and the running
    counts of all labels (:func:`~.ds_stats.update_stats`, from the fitted ones and the new
    rows), ``None`` for a fit that kept none (one on the torch path: its counts are counted
    again). The labels grouped by task that EM reads are joined from the fitted ones
    (:func:`~.ds_stats.join_item_cells`) where those are at hand.

    Args:
        fitted: the fitted codes.
        appended: :func:`append_labels`' result.
        arrays: the fit's :class:`~.array_fit.ArrayState`, ``None`` after the torch path.
        priors, confusions: the fitted ``priors_`` and ``confusions_`` (read where
            ``arrays`` is ``None``; otherwise its arrays, the same values, are).
    """
    K = fitted.num_classes
    if arrays is None:
        confusion = confusions.to_numpy().reshape(fitted.num_workers, K, K)
        return warm_start(fitted, appended, priors.to_numpy(), confusion), None
    stats = update_stats(arrays.stats, appended.codes, appended.new_rows, appended.item_codes,
                         appended.worker_codes)
    join_item_cells(fitted, appended.codes, appended.new_rows, stats.per_item,
                    appended.item_codes, appended.worker_codes)
    start = warm_start(fitted, appended, priors.to_numpy(),
                       arrays.fit.confusion.astype(np.float64), arrays.stats.per_worker)
    return start, stats
