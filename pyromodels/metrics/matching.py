"""Accuracy of a clustering under a map from clusters to classes (not in scikit-learn).

With ``n_ij`` the number of samples of class ``i`` placed in cluster ``j`` (the contingency
table) and ``n`` the number of samples, a map ``m`` from clusters to classes is credited with
``sum_j n_{m(j) j}`` correctly labelled samples. :func:`clustering_accuracy` takes the best
one-to-one map (Hungarian method), :func:`majority_accuracy` and :func:`purity` the best
many-to-one map (each cluster labelled by its majority class). :func:`optimal_assignment` is the
matching step itself, shared with other metrics that must undo label switching.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

from ._labels import contingency_table

__all__ = [
    "optimal_assignment",
    "hungarian_mapping",
    "clustering_accuracy",
    "majority_accuracy",
    "purity",
]


def optimal_assignment(score: np.ndarray, maximize: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """One-to-one matching of rows to columns with the best total ``score`` (Hungarian method).

    This is ``scipy.optimize.linear_sum_assignment``: among the injective maps between rows and
    columns, the one with the largest (``maximize=True``) or smallest total of the matched
    entries.

    Args:
        score: array of shape ``(R, C)``; rectangular arrays are allowed.
        maximize: whether to maximise (for counts of agreements) or minimise (for costs).

    Returns:
        ``(rows, cols)``: ``min(R, C)`` matched pairs, ``rows`` in increasing order.

    Example:
        >>> rows, cols = optimal_assignment(np.array([[1, 5], [4, 2]]))
        >>> rows.tolist(), cols.tolist()
        ([0, 1], [1, 0])
    """
    return linear_sum_assignment(score, maximize=maximize)


def hungarian_mapping(y_true, y_pred) -> dict:
    """Best one-to-one map from clusters to classes, as used by :func:`clustering_accuracy`.

    The map ``m`` maximises ``sum_j n_{m(j) j}``, the number of samples whose cluster is mapped
    to their own class, over injective maps; it is found with the Hungarian algorithm
    (:func:`optimal_assignment`) on the contingency table. When there are more clusters than
    classes, the ``K - C`` clusters left unmatched are absent from the result (their samples
    count as errors); when there are fewer, some classes receive no cluster.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        ``dict`` from cluster label to class label (Python scalars), ``min(C, K)`` entries.

    Example:
        >>> hungarian_mapping([0, 0, 1, 1], [5, 5, 3, 3])
        {3: 1, 5: 0}
    """
    table, classes, clusters = contingency_table(y_true, y_pred)
    rows, cols = optimal_assignment(table)
    order = np.argsort(cols)
    return dict(zip(clusters[cols[order]].tolist(), classes[rows[order]].tolist()))


def clustering_accuracy(y_true, y_pred) -> float:
    """Clustering accuracy under the best one-to-one matching of clusters to classes.

    ``ACC = max_m (1/n) sum_j n_{m(j) j}`` over injective maps ``m`` from clusters to classes
    (see :func:`hungarian_mapping`). The number of clusters ``K`` may differ from the number of
    classes ``C``; at most ``min(C, K)`` clusters are credited, so surplus clusters count as
    errors. For a many-to-one map see :func:`majority_accuracy`.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        Accuracy in ``[0, 1]``.

    Example:
        >>> clustering_accuracy([0, 0, 1, 1, 2], [1, 1, 0, 0, 0])
        0.8
    """
    table, _, _ = contingency_table(y_true, y_pred)
    rows, cols = optimal_assignment(table)
    return float(table[rows, cols].sum() / table.sum())


def majority_accuracy(y_true, y_pred) -> float:
    """Accuracy when every cluster is labelled by its majority class (many-to-one map).

    ``ACC_maj = (1/n) sum_j max_i n_ij``. Several clusters may map to the same class, so a
    clustering with one cluster per sample scores 1. This equals :func:`purity`.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        Accuracy in ``(0, 1]``.

    Example:
        >>> majority_accuracy([0, 0, 1, 1, 2], [1, 1, 0, 0, 0])
        0.8
    """
    table, _, _ = contingency_table(y_true, y_pred)
    return float(table.max(axis=0).sum() / table.sum())


def purity(y_true, y_pred) -> float:
    """Purity of a clustering: ``(1/n) sum_j max_i n_ij``.

    The share of samples that belong to the majority class of their cluster; the same quantity
    as :func:`majority_accuracy` (also written ACC* in the literature). It is 1 for one cluster
    per sample and ``max_i n_i / n`` for a single cluster.

    Args:
        y_true: reference labels, shape ``(n,)``.
        y_pred: cluster labels, shape ``(n,)``.

    Returns:
        Purity in ``(0, 1]``.

    Example:
        >>> purity([0, 0, 1, 1], [0, 0, 0, 1])
        0.75
    """
    return majority_accuracy(y_true, y_pred)
