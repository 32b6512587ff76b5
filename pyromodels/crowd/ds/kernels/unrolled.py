r"""The Dawid-Skene EM pass with the running products in registers, for ``K <= 16``.

The generic :func:`~.passes.em_counts_pass` keeps item ``n``'s running product
:math:`a_{n\cdot}` in a small array that it reads and writes for every label; the compiler
must assume that array may overlap the confusion and count arrays, so every product goes
through memory. Here the products are two tuples of floats, the first ``ceil(K / 2)`` classes
and the rest. A tuple's length is part of its type, so numba compiles one version of the pass
per ``K`` (each cached on disk beside this module, like any ``cache=True`` function with a new
signature); every loop over a tuple has a constant trip count of at most 8, which the
compiler unrolls, and the ``K`` products stay in registers. (Loops of more than 8 classes are
no longer unrolled, hence the halves.) That makes the pass about 1.3 to 2 times faster than
the generic one for ``K <= MAX_CLASSES``.

The arithmetic is the generic pass's, item by item and in the same order (only the logs of the
rescaling factors are summed into the total as they come instead of per item); the tests hold
the two to each other.
"""

from __future__ import annotations

import numpy as np
from numba import njit
from numba.cpython.unsafe.tuple import tuple_setitem

from .passes import em_counts_pass, posteriors_pass
from .scaling import SMALL, accumulate_log

__all__ = ["MAX_CLASSES", "em_counts_unrolled", "em_counts_kernel", "posteriors_unrolled",
           "posteriors_kernel", "prior_argument"]

#: the largest ``K`` the tuple pass is used for; larger ``K`` use the generic pass
MAX_CLASSES = 16


@njit(cache=True, inline="always")
def _multiply(a, conf, w, y, offset, top):  # pragma: no cover - compiled
    """``a[k] * conf[w, y, offset + k]`` for every ``k``, and the largest of them and ``top``."""
    for k in range(len(a)):
        v = a[k] * conf[w, y, offset + k]
        a = tuple_setitem(a, k, v)
        top = max(top, v)
    return a, top


@njit(cache=True, inline="always")
def _divide(a, by):  # pragma: no cover - compiled
    for k in range(len(a)):
        a = tuple_setitem(a, k, a[k] / by)
    return a


@njit(cache=True, inline="always")
def _times(a, factor):  # pragma: no cover - compiled
    for k in range(len(a)):
        a = tuple_setitem(a, k, a[k] * factor)
    return a


@njit(cache=True, inline="always")
def _plus(t, a):  # pragma: no cover - compiled
    for k in range(len(a)):
        t = tuple_setitem(t, k, t[k] + a[k])
    return t


@njit(cache=True, inline="always")
def _sum(a, s):  # pragma: no cover - compiled
    """``s + a[0] + a[1] + ...``, left to right."""
    for k in range(len(a)):
        s += a[k]
    return s


@njit(cache=True, inline="always")
def _zeros(a):  # pragma: no cover - compiled
    for k in range(len(a)):
        a = tuple_setitem(a, k, 0.0)
    return a


@njit(cache=True, inline="always")
def _add_counts(counts, w, y, offset, a):  # pragma: no cover - compiled
    for k in range(len(a)):
        counts[w, y, offset + k] += a[k]


@njit(cache=True, inline="always")
def _item_product(lo, hi, workers, labels, conf, first, second, logs):  # pragma: no cover
    """One item's rescaled running product over its labels ``lo .. hi - 1`` (the two halves),
    and ``logs`` plus the log of every rescaling factor taken out, in order."""
    H = len(first)
    a, b = first, second
    for i in range(lo, hi):
        w = workers[i]
        y = labels[i]
        a, top = _multiply(a, conf, w, y, 0, 0.0)
        b, top = _multiply(b, conf, w, y, H, top)
        if top < SMALL and top > 0.0:
            a, b = _divide(a, top), _divide(b, top)
            logs += np.log(top)
    return a, b, logs


@njit(cache=True, error_model="numpy")
def em_counts_unrolled(ptr, workers, labels, prior, conf, counts, qsum):  # pragma: no cover
    """:func:`~.passes.em_counts_pass` with ``prior`` given as two tuples of floats (see
    :func:`prior_argument`)."""
    first, second = prior
    H = len(first)
    run, total = 1.0, 0.0
    sum_first, sum_second = _zeros(first), _zeros(second)
    for n in range(ptr.shape[0] - 1):
        a, b, total = _item_product(ptr[n], ptr[n + 1], workers, labels, conf, first, second,
                                    total)
        s = _sum(b, _sum(a, 0.0))
        run, total = accumulate_log(s, run, total)
        inv = 1.0 / s
        a, b = _times(a, inv), _times(b, inv)
        sum_first, sum_second = _plus(sum_first, a), _plus(sum_second, b)
        for i in range(ptr[n], ptr[n + 1]):
            w = workers[i]
            y = labels[i]
            _add_counts(counts, w, y, 0, a)
            _add_counts(counts, w, y, H, b)
    for k in range(H):
        qsum[k] += sum_first[k]
    for k in range(len(sum_second)):
        qsum[H + k] += sum_second[k]
    return total + np.log(run)


@njit(cache=True, error_model="numpy")
def _store_row(q, n, offset, a, s):  # pragma: no cover - compiled
    for k in range(len(a)):
        q[n, offset + k] = a[k] / s


@njit(cache=True, error_model="numpy")
def posteriors_unrolled(ptr, workers, labels, prior, conf, q, loglik):  # pragma: no cover
    """:func:`~.passes.posteriors_pass` with ``prior`` given as two tuples of floats (see
    :func:`prior_argument`)."""
    first, second = prior
    H = len(first)
    for n in range(ptr.shape[0] - 1):
        a, b, shift = _item_product(ptr[n], ptr[n + 1], workers, labels, conf, first, second,
                                    0.0)
        s = _sum(b, _sum(a, 0.0))
        _store_row(q, n, 0, a, s)
        _store_row(q, n, H, b, s)
        loglik[n] = np.log(s) + shift


def posteriors_kernel(num_classes: int):
    """:func:`posteriors_unrolled` up to :data:`MAX_CLASSES` classes, the generic
    :func:`~.passes.posteriors_pass` above; both take ``(ptr, workers, labels,
    prior_argument(prior), conf, q, loglik)``."""
    return posteriors_unrolled if num_classes <= MAX_CLASSES else posteriors_pass


def em_counts_kernel(num_classes: int):
    """The pass for ``num_classes`` classes: :func:`em_counts_unrolled` up to
    :data:`MAX_CLASSES`, the generic :func:`~.passes.em_counts_pass` above. Both take
    ``(ptr, workers, labels, prior_argument(prior), conf, counts, qsum)``."""
    return em_counts_unrolled if num_classes <= MAX_CLASSES else em_counts_pass


def prior_argument(prior: np.ndarray):
    """``prior`` ``(K,)`` in the form :func:`em_counts_kernel`'s pass for ``K`` takes: two
    tuples (the first ``ceil(K / 2)`` classes and the rest) up to :data:`MAX_CLASSES`, the
    array itself above."""
    if prior.shape[0] > MAX_CLASSES:
        return prior
    half = (prior.shape[0] + 1) // 2
    return tuple(prior[:half].tolist()), tuple(prior[half:].tolist())
