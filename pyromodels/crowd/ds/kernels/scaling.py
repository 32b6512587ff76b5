r"""Running products of probabilities that cannot underflow: the pieces every pass shares.

Item ``n``'s unnormalised posterior :math:`a_{nk} = \pi_k \prod_{l:\, n_l = n}
\Gamma_{w_l k y_l}` is built label by label and rescaled by its largest entry whenever that
falls below :data:`SMALL` (the log of each scale is remembered). The normalisers
:math:`s_n = \sum_k a_{nk}` are multiplied into a running product whose log is taken only
every few hundred items (:func:`accumulate_log`).
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["SMALL", "rescaled_product", "accumulate_log"]

#: rescale an item's running product when its largest entry falls below this (2^-300)
SMALL = 2.0 ** -300


@njit(cache=True, error_model="numpy")
def rescaled_product(n, ptr, workers, labels, prior, conf, acc):  # pragma: no cover - compiled
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
def accumulate_log(s, run, total):  # pragma: no cover - compiled
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
