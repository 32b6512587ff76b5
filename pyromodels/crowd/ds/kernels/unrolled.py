r"""The Dawid-Skene EM pass with the running products in registers, for small ``K``.

The generic :func:`~.passes.em_counts_pass` keeps item ``n``'s running product
:math:`a_{n\cdot}` in a small array that it reads and writes for every label; the compiler
must assume that array may overlap the confusion and count arrays, so every product goes
through memory. Here the products are a tuple of ``K`` floats: a tuple's length is part of its
type, so numba compiles one version per ``K`` (each cached on disk beside this module, like
any ``cache=True`` function with a new signature), every loop over the classes has a constant
trip count and is unrolled, and the ``K`` products stay in registers. That makes the pass
about 1.5 to 5 times faster for ``K <= MAX_CLASSES``; above it the compiler stops unrolling
and the generic pass is the faster one.

The arithmetic is the generic pass's, item by item and in the same order (only the logs of the
rescaling factors are summed into the total as they come instead of per item); the tests hold
the two to each other.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.tuple import tuple_setitem

from .passes import em_counts_pass
from .scaling import SMALL, accumulate_log

__all__ = ["MAX_CLASSES", "em_counts_unrolled", "em_counts_kernel", "prior_argument"]

#: the largest ``K`` the tuple pass is used for; larger ``K`` use the generic pass
MAX_CLASSES = 8


@njit(cache=True, error_model="numpy")
def em_counts_unrolled(ptr, workers, labels, prior, conf, counts, qsum):  # pragma: no cover
    """:func:`~.passes.em_counts_pass` with ``prior`` given as a tuple of ``K`` floats."""
    K = len(prior)
    run, total = 1.0, 0.0
    totals = prior
    for k in range(K):
        totals = tuple_setitem(totals, k, 0.0)
    for n in range(ptr.shape[0] - 1):
        a = prior
        for i in range(ptr[n], ptr[n + 1]):
            w = workers[i]
            y = labels[i]
            top = 0.0
            for k in range(K):
                v = a[k] * conf[w, y, k]
                a = tuple_setitem(a, k, v)
                top = max(top, v)
            if top < SMALL and top > 0.0:
                for k in range(K):
                    a = tuple_setitem(a, k, a[k] / top)
                total += np.log(top)
        s = 0.0
        for k in range(K):
            s += a[k]
        run, total = accumulate_log(s, run, total)
        inv = 1.0 / s
        for k in range(K):
            v = a[k] * inv
            a = tuple_setitem(a, k, v)
            totals = tuple_setitem(totals, k, totals[k] + v)
        for i in range(ptr[n], ptr[n + 1]):
            w = workers[i]
            y = labels[i]
            for k in range(K):
                counts[w, y, k] += a[k]
    for k in range(K):
        qsum[k] += totals[k]
    return total + np.log(run)


def em_counts_kernel(num_classes: int):
    """The pass for ``num_classes`` classes: :func:`em_counts_unrolled` (which takes the prior
    as a tuple, see :func:`prior_argument`) up to :data:`MAX_CLASSES`, the generic
    :func:`~.passes.em_counts_pass` above."""
    return em_counts_unrolled if num_classes <= MAX_CLASSES else em_counts_pass


def prior_argument(prior: np.ndarray):
    """``prior`` ``(K,)`` in the form :func:`em_counts_kernel`'s pass for ``K`` takes."""
    return tuple(prior.tolist()) if prior.shape[0] <= MAX_CLASSES else prior
