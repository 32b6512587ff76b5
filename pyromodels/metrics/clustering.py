"""Pair-counting scores and the clustering F-measure, comparing a clustering with classes.

Notation used in every docstring: ``n_ij`` is the number of samples of class ``i`` placed in
cluster ``j`` (the contingency table), ``n_i = sum_j n_ij`` and ``n_j = sum_i n_ij`` are the
class and cluster sizes, and ``n`` is the number of samples. Labels of either argument may be
any integers or text; only the partitions they induce matter.

The contingency table, the pair counts and ARI come from ``sklearn.metrics``; the F-measure of
Steinbach et al., which scikit-learn lacks, is written out here. Accuracies under a map from
clusters to classes are in :mod:`pyromodels.metrics.matching`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.cluster import pair_confusion_matrix

from ._labels import as_labels, contingency_table, encode_pair

__all__ = [
    "contingency_matrix",
    "ari",
    "PairScores",
    "pair_f1",
    "f_measure",
    "f_measure_per_level",
]


def contingency_matrix(y_true, y_pred) -> np.ndarray:
    """Contingency table of two labelings (``sklearn.metrics.cluster.contingency_matrix``).

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        ``int64`` array of shape ``(C, K)`` with entry ``n_ij``, the number of samples with the
        ``i``-th smallest true label and the ``j``-th smallest predicted label.

    Example:
        >>> contingency_matrix([0, 0, 1], ["a", "b", "b"]).tolist()
        [[1, 1], [0, 1]]
    """
    return contingency_table(y_true, y_pred)[0]


class PairScores(NamedTuple):
    """Pair-counting precision, recall and F1 (see :func:`pair_f1`)."""

    precision: float
    recall: float
    f1: float


def _ratio(num: int, den: int) -> float:
    """``num / den``, or 0 when ``den`` is 0 (the pair scores' 0/0 convention)."""
    return num / den if den else 0.0


def pair_f1(y_true, y_pred) -> PairScores:
    """Precision, recall and F1 over pairs of samples.

    A pair of distinct samples is a true positive when both labelings put it together. With
    ``TP = sum_ij C(n_ij, 2)``, ``TP + FP = sum_j C(n_j, 2)`` (pairs put together by
    ``y_pred``) and ``TP + FN = sum_i C(n_i, 2)`` (pairs together in ``y_true``)::

        precision = TP / (TP + FP),  recall = TP / (TP + FN),
        F1 = 2 TP / (2 TP + FP + FN)   (the harmonic mean of precision and recall).

    The counts come from ``sklearn.metrics.cluster.pair_confusion_matrix`` (which counts
    ordered pairs, each pair twice; the ratios are unchanged), so the cost is linear in ``n``.
    Convention: a ratio whose denominator is zero (no pair put together by that labeling) is
    defined as 0; F1 is 0 when ``TP = 0``.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        :class:`PairScores` ``(precision, recall, f1)``, unpackable as a tuple.

    Example:
        >>> pair_f1([0, 0, 0, 1], [0, 0, 1, 1])
        PairScores(precision=0.5, recall=0.3333333333333333, f1=0.4)
    """
    _, true_codes, _, pred_codes = encode_pair(y_true, y_pred)
    (_, fp), (fn, tp) = pair_confusion_matrix(true_codes, pred_codes).tolist()
    return PairScores(
        precision=_ratio(tp, tp + fp),
        recall=_ratio(tp, tp + fn),
        f1=_ratio(2 * tp, 2 * tp + fp + fn),
    )


def ari(y_true, y_pred) -> float:
    """Adjusted Rand index of Hubert and Arabie (1985).

    With ``S = sum_ij C(n_ij, 2)``, ``A = sum_i C(n_i, 2)``, ``B = sum_j C(n_j, 2)`` and
    ``P = C(n, 2)``, the index ``S`` is compared with its expectation ``A B / P`` under random
    labelings with the same cluster sizes and with its bound ``(A + B) / 2``::

        ARI = (S - A B / P) / ((A + B) / 2 - A B / P) = 2 (P S - A B) / (P (A + B) - 2 A B).

    This is ``sklearn.metrics.adjusted_rand_score``, which counts pairs in exact integers.
    Convention: the denominator vanishes only when both labelings are the same trivial
    partition (one cluster, or one cluster per sample); identical partitions score 1 (as in
    scikit-learn). ARI is at most 1 and can be negative.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        ARI in ``[-1, 1]``.

    Example:
        >>> ari([0, 0, 1, 1], [1, 1, 0, 0])
        1.0
    """
    _, true_codes, _, pred_codes = encode_pair(y_true, y_pred)
    return float(adjusted_rand_score(true_codes, pred_codes))


def _f_measure_from_table(table: np.ndarray) -> float:
    n_i = table.sum(axis=1, keepdims=True)
    n_j = table.sum(axis=0, keepdims=True)
    # 2 P R / (P + R) with P = n_ij / n_j and R = n_ij / n_i simplifies to 2 n_ij / (n_i + n_j).
    f = 2.0 * table / (n_i + n_j)
    return float((n_i[:, 0] * f.max(axis=1)).sum() / table.sum())


def f_measure(y_true, y_pred) -> float:
    """Clustering F-measure of Steinbach, Karypis and Kumar (2000) for one flat clustering.

    For class ``i`` and cluster ``j``, precision ``P = n_ij / n_j``, recall ``R = n_ij / n_i`` and
    ``F(i, j) = 2 P R / (P + R)`` (0 when ``n_ij = 0``). The overall score weights each class by
    its size and takes its best cluster: ``F = sum_i (n_i / n) max_j F(i, j)``. Several classes
    may choose the same cluster.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        F-measure in ``(0, 1]``.

    Example:
        >>> f_measure([0, 0, 1, 1], [0, 0, 0, 0])
        0.6666666666666666
    """
    return _f_measure_from_table(contingency_table(y_true, y_pred)[0])


def _levels(level_assignments) -> list:
    if isinstance(level_assignments, torch.Tensor):
        level_assignments = level_assignments.detach().cpu().numpy()
    if hasattr(level_assignments, "to_numpy"):  # pandas DataFrame
        level_assignments = level_assignments.to_numpy()
    if isinstance(level_assignments, np.ndarray):
        if level_assignments.ndim != 2:
            raise ValueError(
                "level_assignments must be an array of shape (levels, n) or a sequence of "
                f"label vectors, got shape {level_assignments.shape}"
            )
        return list(level_assignments)
    if not isinstance(level_assignments, list | tuple):
        raise TypeError(
            "level_assignments must be an array of shape (levels, n) or a list of label "
            f"vectors, got {type(level_assignments).__name__}"
        )
    return list(level_assignments)


def f_measure_per_level(y_true, level_assignments) -> np.ndarray:
    """Steinbach F-measure (see :func:`f_measure`) of each level of a hierarchy.

    Each level of a tree cuts the data into the nodes at that depth, a flat clustering; this
    returns ``F`` of every such clustering against ``y_true``, in the order given. It is the
    flat per-level score, not the single best-node-over-the-whole-tree variant of the paper.

    Args:
        y_true: reference labels, shape ``(n,)``.
        level_assignments: ``L`` flat clusterings, one per level: a list of label vectors of
            length ``n``, or an array of shape ``(L, n)``. For per-sample root-to-leaf paths
            stored as an ``(n, L)`` array, pass its transpose.

    Returns:
        ``float64`` array of shape ``(L,)``.

    Example:
        >>> f_measure_per_level([0, 0, 1, 1], [[0, 0, 0, 0], [0, 0, 1, 1]]).tolist()
        [0.6666666666666666, 1.0]
    """
    levels = _levels(level_assignments)
    if not levels:
        raise ValueError("level_assignments must hold at least one clustering, got none")
    truth = as_labels(y_true, "y_true")
    return np.array(
        [
            _f_measure_from_table(contingency_table(truth, level, "y_true", f"level_assignments[{index}]")[0])
            for index, level in enumerate(levels)
        ],
        dtype=np.float64,
    )
