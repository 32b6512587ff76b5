"""The compiled passes of Dawid-Skene EM on NumPy arrays: the one place that calls the C
extension or the numba kernels. :mod:`.compiled` wraps these for torch tensors; the array path
of EM (:mod:`pyromodels.crowd.ds.array_em`) calls them directly, without importing torch.

Every function takes ``labels``: an annotation table or anything with the same codes and
sizes (``item_idx``, ``worker_idx``, ``label_idx`` as tensors or NumPy arrays, ``num_items``,
``num_workers``, ``num_classes``, ``num_labels``), grouped by item once and cached
(:mod:`.groups`). Probabilities are float64 arrays: ``pi`` ``(K,)`` and ``conf`` ``(M, K, K)``
holding the confusion *columns* (``conf[m, j]`` is ``confusion[m, :, j]``, see
:func:`columns`).
"""

from __future__ import annotations

import numpy as np

from .groups import item_cells, item_groups
from .native import c_passes as _c

__all__ = ["columns", "posteriors", "vote_counts", "em_counts", "confusion_counts",
           "log_marginal"]


def columns(confusion: np.ndarray) -> np.ndarray:
    """``(M, K, K)`` float64 with ``[m, j]`` the column ``confusion[m, :, j]`` (contiguous)."""
    return np.ascontiguousarray(np.swapaxes(confusion, -1, -2), dtype=np.float64)


def posteriors(labels, pi: np.ndarray, conf: np.ndarray, backend: str = "c",
               best: bool = False):
    """``(q, loglik, best)``: class posteriors ``(N, K)``, ``log p(labels_n | theta)``
    ``(N,)`` and, with ``best=True``, each item's most probable class ``(N,)`` (int64, the
    first on ties; formed inside the C pass), else ``None``."""
    N, (M, K) = labels.num_items, conf.shape[:2]
    q, loglik = np.empty((N, K)), np.empty(N)
    chosen = np.empty(N, dtype=np.int64) if best and backend == "c" else None
    if backend == "c":
        _c().posteriors(N, M, K, *item_cells(labels), pi, conf, q, loglik, chosen)
    else:
        from .unrolled import posteriors_kernel, prior_argument

        posteriors_kernel(K)(*item_groups(labels), prior_argument(pi), conf, q, loglik)
        chosen = q.argmax(-1) if best else None
    return q, loglik, chosen


def vote_counts(labels, num_workers: int) -> tuple[np.ndarray, np.ndarray]:
    """``(counts, class_totals)`` of the majority-vote fractions (each item's share of labels
    per class, uniform without labels), formed inside one C pass: counts ``[m, j, k]`` (the
    label given first) and ``sum_n q[n]`` (``backend="c"`` only)."""
    K = labels.num_classes
    counts, qsum = np.zeros((num_workers, K, K)), np.zeros(K)
    _c().vote_counts(labels.num_items, num_workers, K, *item_cells(labels), counts, qsum)
    return counts, qsum


def em_counts(labels, pi: np.ndarray, conf: np.ndarray, num_workers: int,
              backend: str = "c") -> tuple[np.ndarray, np.ndarray, float]:
    """``(counts, class_totals, log_marginal)`` of one E-step: the expected confusion counts
    ``[m, j, k]`` (the label given first), ``sum_n q[n]`` ``(K,)`` and ``log p(labels |
    theta)``."""
    N, (M, K) = labels.num_items, conf.shape[:2]
    counts, qsum = np.zeros((num_workers, K, K)), np.zeros(K)
    if backend == "c":
        total = _c().em_counts(N, M, K, *item_cells(labels), pi, conf, counts, qsum)
    else:
        from .unrolled import em_counts_kernel, prior_argument

        total = em_counts_kernel(K)(*item_groups(labels), prior_argument(pi), conf, counts,
                                    qsum)
    return counts, qsum, float(total)


def confusion_counts(labels, q: np.ndarray, num_workers: int,
                     backend: str = "c") -> np.ndarray:
    """Expected confusion counts ``[m, j, k]`` given class posteriors ``q`` ``(N, K)``."""
    K = q.shape[-1]
    counts = np.zeros((num_workers, labels.num_classes, K))
    q = np.ascontiguousarray(q, dtype=np.float64)
    if backend == "c":
        _c().counts(labels.num_items, num_workers, K, *item_cells(labels), q, counts)
    else:
        from .passes import counts_pass

        counts_pass(*item_groups(labels), q, counts)
    return counts


def log_marginal(labels, pi: np.ndarray, conf: np.ndarray, backend: str = "c") -> float:
    """``log p(labels | prior, confusion)`` with the classes summed out."""
    if backend == "c":
        M, K = conf.shape[:2]
        return float(_c().log_marginal(labels.num_items, M, K, *item_cells(labels), pi, conf))
    from .passes import log_marginal_pass

    return float(log_marginal_pass(*item_groups(labels), pi, conf))
