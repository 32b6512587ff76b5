"""Information-theoretic agreement between a clustering and reference classes.

With ``n_ij`` the contingency table (class ``i``, cluster ``j``), ``n_i``, ``n_j`` its margins
and ``n`` the number of samples, all logarithms natural:

* entropy ``H(U) = -sum_i (n_i / n) log(n_i / n)``, likewise ``H(V)`` from the ``n_j``;
* mutual information ``I(U; V) = sum_ij (n_ij / n) log(n n_ij / (n_i n_j))``.

The scores are those of ``sklearn.metrics`` (``normalized_mutual_info_score``,
``adjusted_mutual_info_score``, ``homogeneity_completeness_v_measure``). Partitions with a
single block have zero entropy, and some scores then read 0/0; the conventions for those
limits are stated in each function and applied here before scikit-learn is called. In all
three scores identical partitions score exactly 1 (scikit-learn computes ``I`` and ``H``
along different paths and can return 1 give or take a rounding error).
"""

from __future__ import annotations

from sklearn.metrics import (
    adjusted_mutual_info_score,
    homogeneity_completeness_v_measure,
    normalized_mutual_info_score,
)

from ..checks import check_in, check_positive, check_stochastic
from ._labels import encode_pair, same_partition

__all__ = ["nmi", "ami", "v_measure", "soft_nmi"]

AVERAGE_METHODS = ("arithmetic", "geometric", "min", "max")


def nmi(y_true, y_pred, average_method: str = "arithmetic") -> float:
    """Normalised mutual information.

    ``NMI = I(U; V) / mean(H(U), H(V))`` where the mean is chosen by ``average_method``:
    ``"arithmetic"`` ``(H(U) + H(V)) / 2`` (equal to the V-measure with ``beta = 1``),
    ``"geometric"`` ``sqrt(H(U) H(V))`` (Strehl and Ghosh 2002), ``"min"`` or ``"max"``.

    Conventions: identical partitions score 1 (in particular when both labelings have a single
    block and the ratio reads 0/0); if only one labeling has a single block, ``I = 0`` and NMI
    is 0. Otherwise both entropies are positive. Computed by
    ``sklearn.metrics.normalized_mutual_info_score``.

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
    _, true_codes, _, pred_codes = encode_pair(y_true, y_pred)
    if same_partition(true_codes, pred_codes):
        return 1.0
    return float(normalized_mutual_info_score(true_codes, pred_codes, average_method=average_method))


def ami(y_true, y_pred, average_method: str = "arithmetic") -> float:
    """Mutual information adjusted for chance (Vinh, Epps and Bailey 2010).

    ``AMI = (I - E[I]) / (mean(H(U), H(V)) - E[I])`` where ``E[I]`` is the expected mutual
    information of two random labelings with the observed block sizes (permutation model) and
    the mean is chosen by ``average_method`` as in :func:`nmi`.

    Conventions: identical partitions score 1 (in particular two single blocks, or one block
    per sample in both). Otherwise, when either labeling has a single block or one block per
    sample, every labeling with those block sizes has the same mutual information, so
    ``I = E[I]`` and AMI is 0, including the cases where the formula reads 0/0. Elsewhere the
    value is ``sklearn.metrics.adjusted_mutual_info_score``; the conventions are applied first
    because in the 0/0 case (``average_method="min"`` against one block per sample)
    scikit-learn divides rounding errors and can return values such as 1 or 2.

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
    classes, true_codes, clusters, pred_codes = encode_pair(y_true, y_pred)
    if same_partition(true_codes, pred_codes):
        return 1.0
    n = len(true_codes)
    if len(classes) in (1, n) or len(clusters) in (1, n):
        return 0.0
    return float(adjusted_mutual_info_score(true_codes, pred_codes, average_method=average_method))


def v_measure(y_true, y_pred, beta: float = 1.0) -> float:
    """V-measure of Rosenberg and Hirschberg (2007).

    Homogeneity ``h = 1 - H(U | V) / H(U) = I / H(U)`` and completeness
    ``c = 1 - H(V | U) / H(V) = I / H(V)``, each defined as 1 when its entropy is 0; then
    ``V = (1 + beta) h c / (beta h + c)``. With ``beta = 1`` this equals :func:`nmi` with
    ``average_method="arithmetic"``; ``beta > 1`` weights completeness more.

    ``h`` and ``c`` come from ``sklearn.metrics.homogeneity_completeness_v_measure``.
    Conventions: identical partitions score 1, and ``V`` is 0 when ``beta h + c = 0``.
    scikit-learn tests ``h + c = 0`` instead, which differs only for ``beta = 0`` with
    ``c = 0 < h`` (a single class, or ``I = 0``): it then divides by zero, where the limit
    ``beta -> 0`` used here is 0.

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
    _, true_codes, _, pred_codes = encode_pair(y_true, y_pred)
    if same_partition(true_codes, pred_codes):
        return 1.0
    homogeneity, completeness, _ = homogeneity_completeness_v_measure(true_codes, pred_codes)
    denominator = beta * homogeneity + completeness
    if denominator == 0.0:
        return 0.0
    return (1.0 + beta) * homogeneity * completeness / denominator


def soft_nmi(p, q) -> float:
    """Geometric NMI between two soft clusterings, from each sample's cluster probabilities.

    The joint of the two clusterings is estimated as the average over the ``n`` samples of the
    outer products of their probabilities, ``P(U = i, V = j) = (1/n) sum_s p[s, i] q[s, j]``;
    the margins are that joint's, and ``NMI = I(U; V) / sqrt(H(U) H(V))`` with natural
    logarithms. This is the NMI between facets and reference classes of the LTVAE paper (Li et
    al. 2019, App. D); a reference labelling enters as one-hot rows. On one-hot rows it equals
    :func:`nmi` with ``average_method="geometric"``.

    Conventions: as :func:`nmi`, 1 when both entropies are 0 (a single block each), 0 when only
    one is (``I`` is then 0).

    Args:
        p: ``(n, K1)`` probabilities, each row on the simplex.
        q: ``(n, K2)`` probabilities, each row on the simplex.

    Returns:
        The soft NMI in ``[0, 1]``.

    Raises:
        ValueError: a row off the simplex, or ``p`` and ``q`` of different numbers of rows.

    Example:
        >>> round(soft_nmi([[1.0, 0.0], [0.0, 1.0]], [[0.0, 1.0], [1.0, 0.0]]), 6)
        1.0
    """
    import torch

    p = check_stochastic(p, "p", ndim=2, dtype=torch.float64)
    q = check_stochastic(q, "q", ndim=2, dtype=torch.float64)
    if p.shape[0] != q.shape[0]:
        raise ValueError(f"p and q must have one row per sample each, got {p.shape[0]} and "
                         f"{q.shape[0]} rows")
    joint = (p.T @ q) / p.shape[0]
    pu, pv = joint.sum(1), joint.sum(0)

    def entropy(m: torch.Tensor) -> float:
        m = m[m > 0]
        return float(-(m * m.log()).sum())

    hu, hv = entropy(pu), entropy(pv)
    if hu == 0.0 or hv == 0.0:
        return 1.0 if hu == hv else 0.0
    mask = joint > 0
    info = float((joint[mask] * (joint[mask] / torch.outer(pu, pv)[mask]).log()).sum())
    return min(max(info / (hu * hv) ** 0.5, 0.0), 1.0)
