"""Information-theoretic agreement between a clustering and reference classes.

With ``n_ij`` the contingency table (class ``i``, cluster ``j``), ``n_i``, ``n_j`` its margins
and ``n`` the number of samples, all logarithms natural:

* entropy ``H(U) = -sum_i (n_i / n) log(n_i / n)``, likewise ``H(V)`` from the ``n_j``;
* mutual information ``I(U; V) = sum_ij (n_ij / n) log(n n_ij / (n_i n_j))``.

Partitions with a single block have zero entropy; the conventions used for the resulting
limits are stated in each function.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.special import gammaln

from ..checks import check_in, check_positive
from ._labels import contingency_table

__all__ = ["nmi", "ami", "v_measure"]

AVERAGE_METHODS = ("arithmetic", "geometric", "min", "max")


def _entropy(counts: np.ndarray) -> float:
    """Entropy (nats) of the partition with block sizes ``counts`` (all positive)."""
    n = counts.sum()
    return math.fsum((counts / n) * (np.log(n) - np.log(counts)))


def _mutual_information(table: np.ndarray) -> float:
    """Mutual information (nats) of the labelings summarised by ``table``."""
    if min(table.shape) == 1:  # one labeling has a single block: exactly independent
        return 0.0
    n = table.sum()
    rows, cols = np.nonzero(table)
    n_ij = table[rows, cols].astype(np.float64)
    n_i = table.sum(axis=1)[rows].astype(np.float64)
    n_j = table.sum(axis=0)[cols].astype(np.float64)
    # Grouped so that identical partitions reproduce the entropy's terms exactly.
    terms = (n_ij / n) * ((np.log(n) - np.log(n_i)) + (np.log(n_ij) - np.log(n_j)))
    return math.fsum(terms)


def _expected_mutual_information(a: np.ndarray, b: np.ndarray) -> float:
    """Expected mutual information of random labelings with block sizes ``a`` and ``b``.

    Under the permutation (hypergeometric) model of Vinh, Epps and Bailey (2010)::

        E[I] = sum_i sum_j sum_{k} (k / n) log(n k / (a_i b_j))
               * a_i! b_j! (n - a_i)! (n - b_j)! / (n! k! (a_i - k)! (b_j - k)! (n - a_i - b_j + k)!)

    with ``k`` from ``max(1, a_i + b_j - n)`` to ``min(a_i, b_j)``. Blocks of equal size give
    equal terms, so the sums run over distinct sizes weighted by their multiplicities.
    """
    n = int(a.sum())
    a_sizes, a_mult = np.unique(a, return_counts=True)
    b_sizes, b_mult = np.unique(b, return_counts=True)
    b_sizes = b_sizes.astype(np.int64)
    b_const = gammaln(b_sizes + 1.0) + gammaln(n - b_sizes + 1.0) - gammaln(n + 1.0)
    total = 0.0
    for a_i, mult in zip(a_sizes.tolist(), a_mult.tolist()):
        low = np.maximum(1, a_i + b_sizes - n)
        high = np.minimum(a_i, b_sizes)
        lengths = high - low + 1
        which = np.repeat(np.arange(len(b_sizes)), lengths)
        starts = np.cumsum(lengths) - lengths
        k = np.repeat(low, lengths) + np.arange(lengths.sum()) - np.repeat(starts, lengths)
        k = k.astype(np.float64)
        b_j = b_sizes[which].astype(np.float64)
        log_prob = (
            gammaln(a_i + 1.0)
            + gammaln(n - a_i + 1.0)
            + b_const[which]
            - gammaln(k + 1.0)
            - gammaln(a_i - k + 1.0)
            - gammaln(b_j - k + 1.0)
            - gammaln(n - a_i - b_j + k + 1.0)
        )
        info = (k / n) * (np.log(n) + np.log(k) - np.log(a_i) - np.log(b_j))
        total += mult * float((b_mult[which] * info * np.exp(log_prob)).sum())
    return total


def _generalized_mean(h_true: float, h_pred: float, average_method: str) -> float:
    check_in(average_method, "average_method", AVERAGE_METHODS)
    if average_method == "arithmetic":
        return (h_true + h_pred) / 2.0
    if average_method == "geometric":
        return float(np.sqrt(h_true * h_pred))
    if average_method == "min":
        return min(h_true, h_pred)
    return max(h_true, h_pred)


def nmi(y_true, y_pred, average_method: str = "arithmetic") -> float:
    """Normalised mutual information.

    ``NMI = I(U; V) / mean(H(U), H(V))`` where the mean is chosen by ``average_method``:
    ``"arithmetic"`` ``(H(U) + H(V)) / 2`` (equal to the V-measure with ``beta = 1``),
    ``"geometric"`` ``sqrt(H(U) H(V))`` (Strehl and Ghosh 2002), ``"min"`` or ``"max"``.

    Conventions: if both labelings have a single block the partitions are identical and NMI is
    1; if only one of them does, ``I = 0`` and NMI is 0. Otherwise both entropies are positive.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.
        average_method: ``"arithmetic"``, ``"geometric"``, ``"min"`` or ``"max"``.

    Returns:
        NMI in ``[0, 1]``.

    Example:
        >>> nmi([0, 0, 1, 1], [1, 1, 0, 0])
        1.0
    """
    check_in(average_method, "average_method", AVERAGE_METHODS)
    table, _, _ = contingency_table(y_true, y_pred)
    if table.shape == (1, 1):
        return 1.0
    mi = _mutual_information(table)
    if mi == 0.0:
        return 0.0
    h_true, h_pred = _entropy(table.sum(axis=1)), _entropy(table.sum(axis=0))
    return mi / _generalized_mean(h_true, h_pred, average_method)


def ami(y_true, y_pred, average_method: str = "arithmetic") -> float:
    """Mutual information adjusted for chance (Vinh, Epps and Bailey 2010).

    ``AMI = (I - E[I]) / (mean(H(U), H(V)) - E[I])`` where ``E[I]`` is the expected mutual
    information of two random labelings with the observed block sizes (permutation model) and
    the mean is chosen by ``average_method`` as in :func:`nmi`.

    Conventions: AMI is 1 when both labelings have a single block. When either labeling has a
    single block or one block per sample, every labeling with those block sizes has the same
    mutual information, so ``I = E[I]`` and AMI is 0, including the cases where the formula
    reads 0/0, except for identical partitions (both with one block per sample), which score 1.
    Elsewhere the values agree with ``sklearn.metrics.adjusted_mutual_info_score``; in the 0/0
    case (``average_method="min"`` against one block per sample) scikit-learn divides rounding
    errors and can return values such as 1 or 2.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.
        average_method: ``"arithmetic"``, ``"geometric"``, ``"min"`` or ``"max"``.

    Returns:
        AMI, at most 1; negative when agreement is below chance.

    Example:
        >>> ami([0, 0, 1, 1], [1, 1, 0, 0])
        1.0
    """
    check_in(average_method, "average_method", AVERAGE_METHODS)
    table, _, _ = contingency_table(y_true, y_pred)
    n = int(table.sum())
    n_classes, n_clusters = table.shape
    if n_classes == n_clusters and n_classes in (1, n):
        return 1.0
    if n_classes in (1, n) or n_clusters in (1, n):
        return 0.0
    a, b = table.sum(axis=1), table.sum(axis=0)
    mi = _mutual_information(table)
    emi = _expected_mutual_information(a, b)
    normalizer = _generalized_mean(_entropy(a), _entropy(b), average_method)
    return (mi - emi) / (normalizer - emi)


def v_measure(y_true, y_pred, beta: float = 1.0) -> float:
    """V-measure of Rosenberg and Hirschberg (2007).

    Homogeneity ``h = 1 - H(U | V) / H(U) = I / H(U)`` and completeness
    ``c = 1 - H(V | U) / H(V) = I / H(V)``, each defined as 1 when its entropy is 0; then
    ``V = (1 + beta) h c / (beta h + c)``, defined as 0 when ``beta h + c = 0``. With
    ``beta = 1`` this equals :func:`nmi` with ``average_method="arithmetic"``; ``beta > 1``
    weights completeness more.

    Args:
        y_true: reference labels ``U``, shape ``(n,)``.
        y_pred: cluster labels ``V``, shape ``(n,)``.
        beta: non-negative weight of completeness relative to homogeneity.

    Returns:
        V-measure in ``[0, 1]``.

    Example:
        >>> round(v_measure([0, 0, 1, 1], [0, 0, 0, 1]), 6)
        0.343711
    """
    beta = check_positive(beta, "beta", strict=False)
    table, _, _ = contingency_table(y_true, y_pred)
    mi = _mutual_information(table)
    h_true, h_pred = _entropy(table.sum(axis=1)), _entropy(table.sum(axis=0))
    homogeneity = mi / h_true if h_true > 0 else 1.0
    completeness = mi / h_pred if h_pred > 0 else 1.0
    denominator = beta * homogeneity + completeness
    if denominator == 0.0:
        return 0.0
    return (1.0 + beta) * homogeneity * completeness / denominator
