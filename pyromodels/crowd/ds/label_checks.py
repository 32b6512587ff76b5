"""Checks of the labels of a Dawid-Skene fit on the per-item, per-worker and per-(class,
worker) label counts, in NumPy: the same for the torch path (:mod:`.data`) and the array
path (:mod:`.array_em`)."""

from __future__ import annotations

import warnings

import numpy as np

from ...data.idmaps import plain

__all__ = ["SparseWorkerWarning", "SingleWorkerClassWarning", "check_label_counts"]


class SparseWorkerWarning(UserWarning):
    """Some workers gave a single label: their confusion matrices rest on one response."""


class SingleWorkerClassWarning(UserWarning):
    """A class is used by a single worker: nothing but that worker's labels ties it to its
    code, and maximum-likelihood EM can turn it into a class of its own (see
    :mod:`pyromodels.crowd.ds.em`)."""


def check_label_counts(per_item, per_worker, pairs, ids, allow_unlabelled: bool,
                       stacklevel: int = 2) -> None:
    """Raise on items without labels (unless ``allow_unlabelled``); warn about classes used
    by a single worker and workers who gave a single label.

    Args:
        per_item: ``(N,)`` labels per item.
        per_worker: ``(M,)`` labels per worker.
        pairs: ``(K, M)`` bool mask of the (class, worker) pairs that occur.
        ids: anything with the ``items``, ``workers`` and ``classes`` id indexes (a table).
        allow_unlabelled: accept items without labels.
        stacklevel: of the warnings, counted from the caller of this function.
    """
    per_item, per_worker = np.asarray(per_item), np.asarray(per_worker)
    empty = np.flatnonzero(per_item == 0)
    if len(empty) and not allow_unlabelled:
        named = [plain(ids.items[int(i)]) for i in empty[:5]]
        raise ValueError(
            f"{len(empty)} item(s) have no label, e.g. {named}; their class would come from "
            "the prior alone. Drop them or pass allow_unlabelled=True"
        )
    _warn_single_worker_classes(ids, np.asarray(pairs, dtype=bool), stacklevel + 1)
    single = np.flatnonzero(per_worker == 1)
    if len(single):
        named = [plain(ids.workers[int(i)]) for i in single[:5]]
        warnings.warn(
            f"{len(single)} worker(s) gave a single label, e.g. {named}: their confusion "
            "matrices rest on one response (the prior and that label); results for them are "
            "uncertain",
            SparseWorkerWarning,
            stacklevel=stacklevel + 1,
        )


def _warn_single_worker_classes(ids, used: np.ndarray, stacklevel: int) -> None:
    """Warn, naming each class and its worker, when a class is used by exactly one worker
    (``used``: the ``(K, M)`` mask of the (class, worker) pairs that occur)."""
    lone = np.flatnonzero(used.sum(1) == 1).tolist()
    if not lone:
        return
    worker_of = {k: int(np.flatnonzero(used[k])[0]) for k in lone}
    named = ", ".join(f"class {plain(ids.classes[k])!r} only by worker "
                      f"{plain(ids.workers[worker_of[k]])!r}" for k in lone[:5])
    warnings.warn(
        f"{len(lone)} class(es) are used by a single worker: {named}. Nothing else ties such "
        "a class to its label, and maximum-likelihood EM (diagonal=0) can make it absorb "
        "items that the other workers agree on; check that worker's labels, or keep a "
        "diagonal prior (diagonal > 0, as DawidSkeneEstimator's EM default)",
        SingleWorkerClassWarning,
        stacklevel=stacklevel + 1,
    )
