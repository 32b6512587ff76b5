r"""Compiled CPU kernels for Dawid-Skene EM: the E-step and the M-step's counts in one pass.

The torch path (:mod:`.emissions`) forms the ``(N, K)`` log-likelihoods by a sparse product,
normalises them with ``logsumexp`` and ``exp``, and forms the counts by a second sparse
product. Here one loop over the items does all of it, in probability space and without a
single ``exp``. With the labels grouped by item (cached per table), item ``n``'s unnormalised
posterior is the running product

.. math::
    a_{nk} = \pi_k \prod_{l:\, n_l = n} \Gamma_{w_l k y_l},

rescaled by its largest entry whenever that falls below ``2^-300`` (so no product of many
small probabilities underflows; the log of each scale is remembered), then

.. math::
    q_{nk} = a_{nk} / s_n,\quad s_n = \sum_k a_{nk},\qquad
    \log p(\text{labels}_n \mid \theta) = \log s_n + \text{(the remembered logs)},

and, for the M-step, :math:`C_{w_l k y_l} \mathrel{+}= q_{nk}` and :math:`\sum_n q_{nk}` are
accumulated while item ``n``'s labels are still in cache. Logarithms of the ``s_n`` are
taken on their running product, one ``log`` every few hundred items (of a tiny ``s_n``
directly). The arithmetic is float64 whatever the data's dtype. For ``K <= 16`` the EM pass
runs as written out for that ``K`` (:mod:`.ds_unrolled`: the products stay in registers).

An item whose labels are impossible under every class (``s_n = 0``, only with exact zeros in
the confusions) gives a log-likelihood of ``-inf``; the callers in :mod:`.ds_em` then redo
the step on the torch path, which handles such items the same way the Pyro program does.
"""

from __future__ import annotations

import weakref

import numpy as np
import torch
from numba import njit

__all__ = ["item_groups", "posteriors", "em_counts", "confusion_counts", "log_marginal"]

_GROUPS: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: rescale an item's running product when its largest entry falls below this (2^-300)
SMALL = 2.0 ** -300


def item_groups(table) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ptr, workers, labels)``: the table's labels grouped by item, cached per table.

    Item ``n``'s labels are rows ``ptr[n] .. ptr[n + 1] - 1`` of ``workers`` and ``labels``
    (in the table's order within an item). int32 codes when every code fits.
    """
    if table not in _GROUPS:
        item = table.item_idx.cpu().numpy()
        order = np.argsort(item, kind="stable")
        small = max(table.num_workers, table.num_classes, table.num_labels) < 2 ** 31
        code = np.int32 if small else np.int64
        ptr = np.zeros(table.num_items + 1, dtype=np.int64)
        np.cumsum(np.bincount(item, minlength=table.num_items), out=ptr[1:])
        workers = table.worker_idx.cpu().numpy()[order].astype(code)
        labels = table.label_idx.cpu().numpy()[order].astype(code)
        _GROUPS[table] = (ptr, workers, labels)
    return _GROUPS[table]


@njit(cache=True, error_model="numpy")
def _item(n, ptr, workers, labels, prior, conf, acc):  # pragma: no cover - compiled
    """Fill ``acc`` with item ``n``'s rescaled unnormalised posterior; return the log of the
    scale factors taken out. ``conf[m, j]`` is the column ``confusion[m, :, j]``."""
    K = acc.shape[0]
    for k in range(K):
        acc[k] = prior[k]
    shift = 0.0
    for i in range(ptr[n], ptr[n + 1]):
        column = conf[workers[i], labels[i]]
        top = 0.0
        for k in range(K):
            v = acc[k] * column[k]
            acc[k] = v
            top = max(top, v)
        if top < SMALL and top > 0.0:
            for k in range(K):
                acc[k] /= top
            shift += np.log(top)
    return shift


@njit(cache=True, error_model="numpy")
def _accumulate(s, run, total):  # pragma: no cover - compiled
    """Add ``log s`` to ``log run + total``: ``s`` is multiplied into the running product
    ``run``, which moves into ``total`` (as a log) before it can underflow; a tiny ``s``
    (or zero) goes to ``total`` directly. Returns ``(run, total)``."""
    if s < SMALL:
        return run, total + np.log(s)
    run *= s
    if run < 2.0 ** -600:
        total += np.log(run)
        run = 1.0
    return run, total


@njit(cache=True, error_model="numpy")
def _posteriors(ptr, workers, labels, prior, conf, q, loglik):  # pragma: no cover - compiled
    N, K = q.shape
    acc = np.empty(K)
    for n in range(N):
        shift = _item(n, ptr, workers, labels, prior, conf, acc)
        s = acc.sum()
        for k in range(K):
            q[n, k] = acc[k] / s
        loglik[n] = np.log(s) + shift


@njit(cache=True, error_model="numpy")
def _em_counts(ptr, workers, labels, prior, conf, counts, qsum):  # pragma: no cover - compiled
    N = ptr.shape[0] - 1
    K = qsum.shape[0]
    acc = np.empty(K)
    run, total = 1.0, 0.0
    for n in range(N):
        total += _item(n, ptr, workers, labels, prior, conf, acc)
        s = acc.sum()
        run, total = _accumulate(s, run, total)
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
def _counts(ptr, workers, labels, q, counts):  # pragma: no cover - compiled
    K = q.shape[1]
    for n in range(ptr.shape[0] - 1):
        for i in range(ptr[n], ptr[n + 1]):
            column = counts[workers[i], labels[i]]
            for k in range(K):
                column[k] += q[n, k]


@njit(cache=True, error_model="numpy")
def _log_marginal(ptr, workers, labels, prior, conf):  # pragma: no cover - compiled
    N = ptr.shape[0] - 1
    acc = np.empty(prior.shape[0])
    run, total = 1.0, 0.0
    for n in range(N):
        total += _item(n, ptr, workers, labels, prior, conf, acc)
        run, total = _accumulate(acc.sum(), run, total)
    return total + np.log(run)


def _as_numpy(t: torch.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float64)


def _columns(confusion: torch.Tensor) -> np.ndarray:
    """``(M, K, K)`` float64 with ``[m, j]`` the column ``confusion[m, :, j]`` (contiguous)."""
    return _as_numpy(confusion.transpose(-1, -2))


def posteriors(table, prior: torch.Tensor, confusion: torch.Tensor):
    """``(q, log_norm)``: class posteriors ``(N, K)`` and ``log p(labels_n | theta)`` ``(N,)``
    in ``confusion``'s dtype (the torch path's :func:`~pyromodels.crowd.ds.em.e_step`)."""
    ptr, workers, labels = item_groups(table)
    K = confusion.shape[-1]
    q = np.empty((table.num_items, K))
    loglik = np.empty(table.num_items)
    _posteriors(ptr, workers, labels, _as_numpy(prior), _columns(confusion), q, loglik)
    out = (torch.from_numpy(q), torch.from_numpy(loglik))
    return tuple(t.to(confusion.dtype) for t in out)


def em_counts(table, prior: torch.Tensor, confusion: torch.Tensor, num_workers: int):
    """``(counts, class_totals, log_marginal)`` of one E-step: the expected confusion counts
    ``(num_workers, K, K)``, ``sum_n q[n]`` ``(K,)`` (both float64) and ``log p(labels |
    theta)`` (a float) under ``prior`` ``(K,)`` and ``confusion`` ``(M, K, K)``."""
    ptr, workers, labels = item_groups(table)
    K = confusion.shape[-1]
    counts = np.zeros((num_workers, K, K))  # [m, j, k]: transposed back below
    qsum = np.zeros(K)
    from .unrolled import em_counts_kernel

    kernel = em_counts_kernel(K)
    total = kernel(ptr, workers, labels, _as_numpy(prior), _columns(confusion), counts, qsum)
    return torch.from_numpy(counts).transpose(1, 2), torch.from_numpy(qsum), float(total)


def confusion_counts(table, q: torch.Tensor, num_workers: int) -> torch.Tensor:
    """Expected confusion counts ``(num_workers, K, K)`` (float64) given class posteriors ``q``
    ``(N, K)`` (:func:`pyromodels.crowd.emissions.confusion_counts` without the sparse
    incidence matrix)."""
    ptr, workers, labels = item_groups(table)
    K = q.shape[-1]
    counts = np.zeros((num_workers, table.num_classes, K))  # [m, j, k]
    _counts(ptr, workers, labels, _as_numpy(q), counts)
    return torch.from_numpy(counts).transpose(1, 2)


def log_marginal(table, prior: torch.Tensor, confusion: torch.Tensor) -> float:
    """``log p(labels | prior, confusion)`` with the classes summed out."""
    ptr, workers, labels = item_groups(table)
    return float(_log_marginal(ptr, workers, labels, _as_numpy(prior), _columns(confusion)))
