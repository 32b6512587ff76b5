"""Scores for predicted labels that share the label set of the truth, and confusion-matrix error.

For class ``k``: ``TP_k`` counts samples with true and predicted label ``k``, ``FP_k`` samples
predicted ``k`` with another true label, ``FN_k`` samples of class ``k`` predicted otherwise.

Precision, recall and F1 are ``sklearn.metrics.precision_recall_fscore_support`` and
``f1_score`` with ``zero_division=0.0``: a ratio that reads 0/0 (a class never predicted, or
absent from the truth) is 0, without the warning that scikit-learn's default ``"warn"`` gives.
The confusion-matrix error, which scikit-learn lacks, is written out here.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from sklearn.metrics import f1_score, precision_recall_fscore_support

from ..checks import as_float_tensor, check_same_length
from ._labels import as_labels, encode_jointly
from .matching import optimal_assignment

__all__ = ["precision_recall_per_class", "macro_f1", "confusion_matrix_error"]


def _encoded(y_true, y_pred, labels):
    """``(classes, true_codes, pred_codes, chosen)``: codes on the union of all labels.

    ``chosen`` indexes the classes to report: all of them, or those listed in ``labels``.
    """
    t = as_labels(y_true, "y_true")
    p = as_labels(y_pred, "y_pred")
    check_same_length("y_true", t, "y_pred", p)
    arrays = {"y_true": t, "y_pred": p}
    if labels is not None:
        arrays["labels"] = as_labels(labels, "labels")
    classes, codes = encode_jointly(arrays)
    if labels is None:
        return classes, codes["y_true"], codes["y_pred"], np.arange(len(classes))
    chosen = codes["labels"]
    values, seen = np.unique(chosen, return_counts=True)
    if (seen > 1).any():
        raise ValueError(
            f"labels must not contain duplicates, found {classes[values[seen > 1][0]].item()!r}"
        )
    return classes, codes["y_true"], codes["y_pred"], chosen


def precision_recall_per_class(y_true, y_pred, labels=None) -> pd.DataFrame:
    """Precision, recall, F1 and support of each class.

    ``precision_k = TP_k / (TP_k + FP_k)``, ``recall_k = TP_k / (TP_k + FN_k)`` and
    ``f1_k = 2 TP_k / (2 TP_k + FP_k + FN_k)``, the harmonic mean of the two. A class that is
    never predicted has precision 0 (its ratio would read 0/0); a class absent from ``y_true``
    has recall 0; F1 is 0 whenever ``TP_k = 0``. Samples whose labels are not in ``labels``
    still count as false positives or negatives of the listed classes.

    Args:
        y_true: true labels, shape ``(n,)``.
        y_pred: predicted labels of the same kind (integers or text), shape ``(n,)``.
        labels: classes to report, in this order, without duplicates; by default the sorted
            union of the labels in ``y_true`` and ``y_pred``. Listed classes need not occur.

    Returns:
        ``pandas.DataFrame`` indexed by class (index name ``"class"``) with float columns
        ``precision``, ``recall``, ``f1`` and integer column ``support`` (``TP_k + FN_k``).

    Example:
        >>> precision_recall_per_class([0, 0, 1, 1], [0, 1, 1, 1]).round(3).to_dict("list")
        {'precision': [1.0, 0.667], 'recall': [0.5, 1.0], 'f1': [0.667, 0.8], 'support': [2, 2]}
    """
    classes, true_codes, pred_codes, chosen = _encoded(y_true, y_pred, labels)
    precision, recall, f1, support = precision_recall_fscore_support(
        true_codes, pred_codes, labels=chosen, zero_division=0.0
    )
    index = pd.Index(classes[chosen].tolist(), name="class")
    return pd.DataFrame(
        {"precision": precision, "recall": recall, "f1": f1, "support": support.astype(np.int64)},
        index=index,
    )


def macro_f1(y_true, y_pred, labels=None) -> float:
    """Macro-averaged F1: the unweighted mean of ``f1_k`` over classes.

    ``macro-F1 = (1/K) sum_k 2 TP_k / (2 TP_k + FP_k + FN_k)``, with the per-class
    conventions of :func:`precision_recall_per_class` (a class with ``TP_k = 0`` contributes 0).

    Args:
        y_true: true labels, shape ``(n,)``.
        y_pred: predicted labels of the same kind, shape ``(n,)``.
        labels: classes to average over; by default the union of labels in both arguments.

    Returns:
        Macro-F1 in ``[0, 1]``.

    Example:
        >>> round(macro_f1([0, 0, 1, 1], [0, 1, 1, 1]), 6)
        0.733333
    """
    _, true_codes, pred_codes, chosen = _encoded(y_true, y_pred, labels)
    return float(f1_score(true_codes, pred_codes, labels=chosen, average="macro", zero_division=0.0))


def _as_matrices(x, name: str) -> np.ndarray:
    if isinstance(x, np.ndarray):
        x = np.ascontiguousarray(x)  # torch cannot wrap negative strides (reversed views)
    arr = as_float_tensor(x, name, dtype=torch.float64).cpu().numpy()
    if arr.ndim not in (2, 3) or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{name} must have shape (K, K) or (M, K, K), got shape {tuple(arr.shape)}")
    return arr


def confusion_matrix_error(true_matrix, est_matrix, align: bool = True) -> float:
    """Mean induced 1-norm error between true and estimated confusion matrices.

    Matrices follow the convention ``G[k', k] = P(predicted k' | true class k)`` (columns index
    the true class, so a column-stochastic ``G`` has ``||G||_1 = 1``). For ``M`` matrices::

        error = (1/M) sum_m || G_m - Ĝ_m ||_1,   ||D||_1 = max_k sum_k' |D[k', k]|,

    the induced matrix 1-norm (largest absolute column sum, ``np.linalg.norm(D, ord=1)``), not
    the entrywise sum. For column-stochastic ``G_m`` this is also the relative error
    ``||G_m - Ĝ_m||_1 / ||G_m||_1``.

    With ``align=True`` the estimate's true-class axis is first permuted to undo label
    switching: the permutation ``pi`` minimises ``sum_k sum_k' |S[k', k] - Ŝ[k', pi(k)]|`` for the
    summed matrices ``S = sum_m G_m`` and ``Ŝ = sum_m Ĝ_m`` (Hungarian method), and the same
    ``pi`` is applied to the columns of every ``Ĝ_m``. Rows index observed labels, whose
    meaning is fixed, and are not permuted.

    Args:
        true_matrix: array of shape ``(K, K)`` or ``(M, K, K)``.
        est_matrix: array of the same shape.
        align: whether to align the estimate's class permutation first.

    Returns:
        The mean error, a non-negative float.

    Example:
        >>> g = np.array([[0.9, 0.2], [0.1, 0.8]])
        >>> confusion_matrix_error(g, g[:, ::-1])
        0.0
        >>> round(confusion_matrix_error(g, g[:, ::-1], align=False), 6)
        1.4
    """
    truth = _as_matrices(true_matrix, "true_matrix")
    estimate = _as_matrices(est_matrix, "est_matrix")
    if truth.shape != estimate.shape:
        raise ValueError(
            f"true_matrix and est_matrix must have the same shape, got {truth.shape} and {estimate.shape}"
        )
    k = truth.shape[-1]
    truth, estimate = truth.reshape(-1, k, k), estimate.reshape(-1, k, k)
    if align:
        total_true, total_est = truth.sum(axis=0), estimate.sum(axis=0)
        cost = np.abs(total_true[:, :, None] - total_est[:, None, :]).sum(axis=0)
        rows, cols = optimal_assignment(cost, maximize=False)
        estimate = estimate[:, :, cols[np.argsort(rows)]]
    column_sums = np.abs(truth - estimate).sum(axis=1)
    return float(column_sums.max(axis=1).mean())
