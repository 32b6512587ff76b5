r"""The compiled (numba) sequential scan of the clusters, and the choice of its backend.

:func:`assign_pass` is the loop of :func:`pyromodels.scdc.observed_gibbs.assign_sequentially`
written element by element: for :math:`n = 0 .. N - 1`,

.. math:: z_n = \arg\max_k \Big(s_{nk} + \sum_{e \in E_n} w_e\,[z_{p_e} = k]\Big),

with :math:`s` the base logits plus Gumbel noise, :math:`E_n` the CSR entries of item
:math:`n`, :math:`p_e` their partners and :math:`w_e` their links' weights. The sums run over
the entries in the same order as NumPy's weighted ``bincount``, so both backends give the same
clusters (the tests hold them to each other). The function is cached on disk (``cache=True``);
without numba it runs as plain Python.

Example:
    >>> import numpy as np
    >>> scores = np.array([[0.0, 1.0], [1.0, 0.0]])
    >>> assign_pass(scores, np.array([0, 1, 2]), np.array([1, 0]), np.array([5.0, 5.0]),
    ...             np.array([0, 0])).tolist()
    [0, 0]
"""

from __future__ import annotations

import numpy as np

try:  # pragma: no cover - exercised by whichever branch the environment has
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

    def njit(*args, **kwargs):
        return lambda f: f


__all__ = ["HAVE_NUMBA", "BACKENDS", "assign_pass", "resolve_backend"]

#: the backends of the sequential scan
BACKENDS = ("auto", "numba", "numpy")


@njit(cache=True)
def assign_pass(scores, indptr, partner, entry_weight, z):  # pragma: no cover - compiled
    """The sequential scan in place on ``z`` (int64 ``(N,)``); returns ``z``.

    Args:
        scores: ``(N, K)`` float64 base logits plus Gumbel noise.
        indptr, partner: the CSR adjacency (int64).
        entry_weight: ``(2 L,)`` float64 weight of each entry's link.
        z: ``(N,)`` int64 current clusters.
    """
    num_items, num_clusters = scores.shape
    row = np.empty(num_clusters)
    for n in range(num_items):
        for k in range(num_clusters):
            row[k] = 0.0
        for e in range(indptr[n], indptr[n + 1]):
            row[z[partner[e]]] += entry_weight[e]
        best = 0
        best_value = scores[n, 0] + row[0]
        for k in range(1, num_clusters):
            value = scores[n, k] + row[k]
            if value > best_value:
                best, best_value = k, value
        z[n] = best
    return z


def resolve_backend(backend: str) -> str:
    """``"numba"`` or ``"numpy"``: ``"auto"`` picks numba where it is installed.

    Raises:
        ValueError: an unknown backend, or ``"numba"`` without numba.
    """
    if backend not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {backend!r}")
    if backend == "numba" and not HAVE_NUMBA:
        raise ValueError("backend='numba' needs the numba package, which is not installed")
    if backend == "auto":
        return "numba" if HAVE_NUMBA else "numpy"
    return backend
