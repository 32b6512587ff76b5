r"""What :meth:`DawidSkeneEstimator.partial_fit
<pyromodels.crowd.estimators.DawidSkeneEstimator.partial_fit>` adds to a fit: the new labels
coded onto the fitted ones, and EM's warm start.

**Stored data.** A fitted estimator keeps its labels as codes (three int64 arrays, 24 bytes
a label: 144 MB for 6,000,000 labels) with the id indexes of its tasks, workers and classes;
that is all ``partial_fit`` reads besides the fitted parameters. :func:`append_labels` codes
the new rows against those indexes, extended by the new tasks and workers, and returns the
codes of all labels, old then new. While it runs, the old and the joined codes are both held
(about 24 bytes a label more, at the peak).

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

__all__ = ["Appended", "fitted_codes", "append_labels", "warm_start"]


class Appended(NamedTuple):
    """All labels coded after ``partial_fit``'s rows were appended.

    ``codes`` holds the fitted labels first, then the new rows; ``worker_codes[m]`` is the
    new code of fitted worker ``m`` (``None``: the codes are unchanged).
    """

    codes: LabelCodes
    worker_codes: np.ndarray | None  # (M_fitted,) int64


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
    old_items = fitted.item_idx if item_moves is None else item_moves[fitted.item_idx]
    old_workers = fitted.worker_idx if worker_moves is None else worker_moves[fitted.worker_idx]
    codes = LabelCodes(np.concatenate([old_items, new_items]),
                       np.concatenate([old_workers, new_workers]),
                       np.concatenate([fitted.label_idx, new_labels]),
                       items, workers, fitted.classes)
    return Appended(codes, worker_moves)


def warm_start(fitted: LabelCodes, appended: Appended, prior: np.ndarray,
               confusion: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """EM's warm start on the appended labels: ``(prior (K,), confusion (M, K, K))``.

    Args:
        fitted: the fitted codes (for each fitted worker's number of labels).
        appended: :func:`append_labels`' result.
        prior: the fitted class prior ``(K,)``.
        confusion: the fitted confusion matrices ``(M_fitted, K, K)``, rows = true class.

    Returns:
        The fitted prior, and the fitted workers' matrices at their new codes with the
        pooled matrix (see the module doc) for the new workers, float64.
    """
    per_worker = np.bincount(fitted.worker_idx, minlength=fitted.num_workers).astype(np.float64)
    pooled = np.tensordot(per_worker, confusion, axes=1) / per_worker.sum()
    M = appended.codes.num_workers
    start = np.broadcast_to(pooled, (M,) + pooled.shape).copy()
    where = (np.arange(fitted.num_workers) if appended.worker_codes is None
             else appended.worker_codes)
    start[where] = confusion
    return np.array(prior, dtype=np.float64), start
