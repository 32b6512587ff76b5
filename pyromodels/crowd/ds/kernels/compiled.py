r"""The compiled CPU steps of Dawid-Skene EM on torch tensors: the E-step and the M-step's
counts in one pass, in C (built with the package) or numba.

The torch path (:func:`pyromodels.crowd.ds.em.e_step` with ``backend="torch"``) forms the
``(N, K)`` log-likelihoods by a sparse product, normalises them with ``logsumexp`` and ``exp``,
and forms the counts by a second sparse product. Here one loop over the items does all of it,
in probability space and without a single ``exp``: item ``n``'s unnormalised posterior is the
running product

.. math::
    a_{nk} = \pi_k \prod_{l:\, n_l = n} \Gamma_{w_l k y_l},

rescaled whenever it could underflow (:mod:`.scaling`), then

.. math::
    q_{nk} = a_{nk} / s_n,\quad s_n = \sum_k a_{nk},\qquad
    \log p(\text{labels}_n \mid \theta) = \log s_n + \text{(the remembered logs)},

and, for the M-step, :math:`C_{w_l k y_l} \mathrel{+}= q_{nk}` and :math:`\sum_n q_{nk}` are
accumulated while item ``n``'s labels are still in cache. The arithmetic is float64 whatever
the data's dtype.

Two implementations of the same loops, item by item in the same order (the tests hold them to
each other and to the torch path):

* ``backend="c"``: the extension ``_cpass`` (``_cpass.c``), compiled when the package is
  installed. A new process loads it in about a millisecond, so a first fit pays no
  compilation. :func:`.native.have_c` says whether it was built (a machine without a C
  compiler installs without it). It reads each label as one cell ``worker * K + label``
  (:func:`.groups.item_cells`) and skips the rescaling test for items too short to underflow.
* ``backend="numba"``: :mod:`.passes` and :mod:`.unrolled`, cached on disk (``cache=True``);
  a new process still spends about 0.3 s starting numba and loading them. They are imported
  only when used.

An item whose labels are impossible under every class (``s_n = 0``, only with exact zeros in
the confusions) gives a log-likelihood of ``-inf``; the dispatchers in
:mod:`pyromodels.crowd.ds.em` then redo the step on the torch path, which handles such items
the same way the Pyro program does.
"""

from __future__ import annotations

import numpy as np
import torch

from . import array_passes

__all__ = ["BACKENDS", "posteriors", "vote_counts", "em_counts", "confusion_counts",
           "log_marginal", "as_numpy", "columns"]

#: the compiled backends of these passes
BACKENDS = ("c", "numba")


def as_numpy(t: torch.Tensor) -> np.ndarray:
    """``t`` as a contiguous float64 numpy array (on the CPU)."""
    return np.ascontiguousarray(t.detach().cpu().numpy(), dtype=np.float64)


def columns(confusion: torch.Tensor) -> np.ndarray:
    """``(M, K, K)`` float64 with ``[m, j]`` the column ``confusion[m, :, j]`` (contiguous)."""
    return as_numpy(confusion.transpose(-1, -2))


def posteriors(table, prior: torch.Tensor, confusion: torch.Tensor, backend: str = "c",
               best: bool = False):
    """``(q, log_norm)``: class posteriors ``(N, K)`` and ``log p(labels_n | theta)`` ``(N,)``
    in ``confusion``'s dtype; with ``best=True`` also each item's most probable class ``(N,)``
    (long, the first on ties: ``q.argmax(-1)``, formed inside the C pass)."""
    q, loglik, labels = array_passes.posteriors(table, as_numpy(prior), columns(confusion),
                                                backend, best)
    out = tuple(torch.from_numpy(t).to(confusion.dtype) for t in (q, loglik))
    return out + (torch.from_numpy(labels),) if best else out


def vote_counts(table, num_workers: int):
    """``(counts, class_totals)``: :func:`confusion_counts` and ``sum_n q[n]`` (float64) of the
    majority-vote fractions ``q`` (:func:`pyromodels.crowd.majority.vote_fractions`: each
    item's share of labels per class, uniform without labels), formed item by item inside one
    C pass (``backend="c"`` only: elsewhere the fractions are formed first)."""
    counts, qsum = array_passes.vote_counts(table, num_workers)
    return torch.from_numpy(counts).transpose(1, 2), torch.from_numpy(qsum)


def em_counts(table, prior: torch.Tensor, confusion: torch.Tensor, num_workers: int,
              backend: str = "c"):
    """``(counts, class_totals, log_marginal)`` of one E-step: the expected confusion counts
    ``(num_workers, K, K)``, ``sum_n q[n]`` ``(K,)`` (both float64) and ``log p(labels |
    theta)`` (a float) under ``prior`` ``(K,)`` and ``confusion`` ``(M, K, K)``."""
    counts, qsum, total = array_passes.em_counts(table, as_numpy(prior), columns(confusion),
                                                 num_workers, backend)
    return torch.from_numpy(counts).transpose(1, 2), torch.from_numpy(qsum), total


def confusion_counts(table, q: torch.Tensor, num_workers: int,
                     backend: str = "c") -> torch.Tensor:
    """Expected confusion counts ``(num_workers, K, K)`` (float64) given class posteriors ``q``
    ``(N, K)`` (:func:`pyromodels.crowd.emissions.confusion_counts` without the sparse
    incidence matrix)."""
    counts = array_passes.confusion_counts(table, as_numpy(q), num_workers, backend)
    return torch.from_numpy(counts).transpose(1, 2)


def log_marginal(table, prior: torch.Tensor, confusion: torch.Tensor,
                 backend: str = "c") -> float:
    """``log p(labels | prior, confusion)`` with the classes summed out."""
    return array_passes.log_marginal(table, as_numpy(prior), columns(confusion), backend)
