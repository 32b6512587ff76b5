r"""The compiled CPU steps of Dawid-Skene EM on torch tensors: the E-step and the M-step's
counts in one pass.

The torch path (:func:`pyromodels.crowd.ds.em.e_step` with ``backend="torch"``) forms the
``(N, K)`` log-likelihoods by a sparse product, normalises them with ``logsumexp`` and ``exp``,
and forms the counts by a second sparse product. Here one loop over the items does all of it,
in probability space and without a single ``exp`` (:mod:`.passes`, :mod:`.unrolled`): item
``n``'s unnormalised posterior is the running product

.. math::
    a_{nk} = \pi_k \prod_{l:\, n_l = n} \Gamma_{w_l k y_l},

rescaled whenever it could underflow (:mod:`.scaling`), then

.. math::
    q_{nk} = a_{nk} / s_n,\quad s_n = \sum_k a_{nk},\qquad
    \log p(\text{labels}_n \mid \theta) = \log s_n + \text{(the remembered logs)},

and, for the M-step, :math:`C_{w_l k y_l} \mathrel{+}= q_{nk}` and :math:`\sum_n q_{nk}` are
accumulated while item ``n``'s labels are still in cache. The arithmetic is float64 whatever
the data's dtype. Every compiled function is cached on disk (``cache=True``), so a new process
loads it instead of compiling it.

An item whose labels are impossible under every class (``s_n = 0``, only with exact zeros in
the confusions) gives a log-likelihood of ``-inf``; the dispatchers in
:mod:`pyromodels.crowd.ds.em` then redo the step on the torch path, which handles such items
the same way the Pyro program does.
"""

from __future__ import annotations

import numpy as np
import torch

from .groups import item_groups
from .passes import counts_pass, log_marginal_pass
from .unrolled import em_counts_kernel, posteriors_kernel, prior_argument

__all__ = ["posteriors", "em_counts", "confusion_counts", "log_marginal", "as_numpy", "columns"]


def as_numpy(t: torch.Tensor) -> np.ndarray:
    """``t`` as a contiguous float64 numpy array (on the CPU)."""
    return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float64)


def columns(confusion: torch.Tensor) -> np.ndarray:
    """``(M, K, K)`` float64 with ``[m, j]`` the column ``confusion[m, :, j]`` (contiguous)."""
    return as_numpy(confusion.transpose(-1, -2))


def posteriors(table, prior: torch.Tensor, confusion: torch.Tensor):
    """``(q, log_norm)``: class posteriors ``(N, K)`` and ``log p(labels_n | theta)`` ``(N,)``
    in ``confusion``'s dtype."""
    ptr, workers, labels = item_groups(table)
    K = confusion.shape[-1]
    q = np.empty((table.num_items, K))
    loglik = np.empty(table.num_items)
    run = posteriors_kernel(K)
    run(ptr, workers, labels, prior_argument(as_numpy(prior)), columns(confusion), q, loglik)
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
    run = em_counts_kernel(K)
    total = run(ptr, workers, labels, prior_argument(as_numpy(prior)), columns(confusion),
                counts, qsum)
    return torch.from_numpy(counts).transpose(1, 2), torch.from_numpy(qsum), float(total)


def confusion_counts(table, q: torch.Tensor, num_workers: int) -> torch.Tensor:
    """Expected confusion counts ``(num_workers, K, K)`` (float64) given class posteriors ``q``
    ``(N, K)`` (:func:`pyromodels.crowd.emissions.confusion_counts` without the sparse
    incidence matrix)."""
    ptr, workers, labels = item_groups(table)
    K = q.shape[-1]
    counts = np.zeros((num_workers, table.num_classes, K))  # [m, j, k]
    counts_pass(ptr, workers, labels, as_numpy(q), counts)
    return torch.from_numpy(counts).transpose(1, 2)


def log_marginal(table, prior: torch.Tensor, confusion: torch.Tensor) -> float:
    """``log p(labels | prior, confusion)`` with the classes summed out."""
    ptr, workers, labels = item_groups(table)
    return float(log_marginal_pass(ptr, workers, labels, as_numpy(prior), columns(confusion)))
