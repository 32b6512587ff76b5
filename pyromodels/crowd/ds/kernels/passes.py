r"""The compiled Dawid-Skene passes over the items, for any number of classes.

Each loops over the items grouped by :func:`~.groups.item_groups`, forms item ``n``'s
rescaled running product with :func:`~.scaling.rescaled_product` and then

* :func:`posteriors_pass`: :math:`q_{nk} = a_{nk} / s_n` and
  :math:`\log p(\text{labels}_n \mid \theta) = \log s_n + \text{(the remembered logs)}`;
* :func:`em_counts_pass`: the M-step's counts :math:`C_{w_l y_l k} \mathrel{+}= q_{nk}` and
  :math:`\sum_n q_{nk}` while item ``n``'s labels are still in cache, and the total log
  marginal;
* :func:`counts_pass`: the counts given ``q``;
* :func:`log_marginal_pass`: the total log marginal alone;
* :func:`scatter_by_item`: the grouping itself (when the C passes were not built).

Inputs are numpy arrays: ``prior`` ``(K,)`` and ``conf`` ``(M, K, K)`` float64 with
``conf[m, j]`` the column ``confusion[m, :, j]``; counts are laid out ``[m, j, k]``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .scaling import accumulate_log, rescaled_product

__all__ = ["posteriors_pass", "em_counts_pass", "counts_pass", "log_marginal_pass",
           "scatter_by_item"]


@njit(cache=True, error_model="numpy")
def posteriors_pass(ptr, workers, labels, prior, conf, q, loglik):  # pragma: no cover
    """Fill ``q`` ``(N, K)`` and ``loglik`` ``(N,)``."""
    N, K = q.shape
    acc = np.empty(K)
    for n in range(N):
        shift = rescaled_product(n, ptr, workers, labels, prior, conf, acc)
        s = acc.sum()
        for k in range(K):
            q[n, k] = acc[k] / s
        loglik[n] = np.log(s) + shift


@njit(cache=True, error_model="numpy")
def em_counts_pass(ptr, workers, labels, prior, conf, counts, qsum):  # pragma: no cover
    """Add the expected counts to ``counts`` ``(M, K, K)`` and ``qsum`` ``(K,)``; return the
    total log marginal."""
    N = ptr.shape[0] - 1
    K = qsum.shape[0]
    acc = np.empty(K)
    run, total = 1.0, 0.0
    for n in range(N):
        total += rescaled_product(n, ptr, workers, labels, prior, conf, acc)
        s = acc.sum()
        run, total = accumulate_log(s, run, total)
        inv = 1.0 / s
        for k in range(K):
            acc[k] *= inv
            qsum[k] += acc[k]
        for i in range(ptr[n], ptr[n + 1]):
            column = counts[workers[i], labels[i]]
            for k in range(K):
                column[k] += acc[k]
    return total + np.log(run)


@njit(cache=True, error_model="numpy")
def counts_pass(ptr, workers, labels, q, counts):  # pragma: no cover - compiled
    """Add ``q[n]`` to the counts of every label of item ``n``."""
    K = q.shape[1]
    for n in range(ptr.shape[0] - 1):
        for i in range(ptr[n], ptr[n + 1]):
            column = counts[workers[i], labels[i]]
            for k in range(K):
                column[k] += q[n, k]


@njit(cache=True, error_model="numpy")
def log_marginal_pass(ptr, workers, labels, prior, conf):  # pragma: no cover - compiled
    """The total log marginal of the labels."""
    N = ptr.shape[0] - 1
    acc = np.empty(prior.shape[0])
    run, total = 1.0, 0.0
    for n in range(N):
        total += rescaled_product(n, ptr, workers, labels, prior, conf, acc)
        run, total = accumulate_log(acc.sum(), run, total)
    return total + np.log(run)


@njit(cache=True)
def scatter_by_item(item, workers, labels, ptr, out_workers, out_labels):  # pragma: no cover
    """Copy row ``i``'s worker and label to the next free slot of item ``item[i]`` (slots
    ``ptr[n] .. ptr[n + 1] - 1``), rows taken in order: a stable counting sort by item, one
    pass over the rows whatever their order."""
    fill = ptr[:-1].copy()
    for i in range(item.shape[0]):
        n = item[i]
        j = fill[n]
        out_workers[j] = workers[i]
        out_labels[j] = labels[i]
        fill[n] = j + 1
