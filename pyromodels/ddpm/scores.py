"""The paper's metric row for a clustering (Sec. 4.1, Appendix A, Table 1).

With ``n_ck`` the contingency counts of class ``c`` and cluster ``k``:

* ``"F score"``: pair-counting F1, ``2 TP / (2 TP + FP + FN)`` with ``TP = sum C(n_ck, 2)``
  (:func:`pyromodels.metrics.pair_f1`);
* ``"V score"``: V-measure, the harmonic mean of homogeneity and completeness
  (:func:`pyromodels.metrics.v_measure`);
* ``"ARI"``: adjusted Rand index (:func:`pyromodels.metrics.ari`); it is at most 1 and can be
  negative (the paper's "(0, 1)" is wrong);
* ``"ACC*"``: each cluster labelled by its majority class, ``(1/N) sum_k max_c n_ck``, i.e.
  purity (:func:`pyromodels.metrics.purity`), not Hungarian-matched accuracy; it is 1 when
  every point is its own cluster;
* ``"K"``: the number of clusters used by the labels.

Example:
    >>> paper_scores([0, 0, 1, 1], [5, 5, 7, 7])
    {'F score': 1.0, 'V score': 1.0, 'ARI': 1.0, 'ACC*': 1.0, 'K': 2}
"""

from __future__ import annotations

from ..metrics import ari, contingency_matrix, pair_f1, purity, v_measure

__all__ = ["PAPER_METRICS", "paper_scores"]

#: the rows of Table 1, in the paper's order
PAPER_METRICS = ("F score", "V score", "ARI", "ACC*", "K")


def paper_scores(y_true, y_pred) -> dict:
    """Table 1's metric row of a clustering ``y_pred`` against the classes ``y_true``.

    Args:
        y_true: ``(N,)`` class labels (any hashable labels the metrics accept).
        y_pred: ``(N,)`` cluster labels.

    Returns:
        ``{"F score": float, "V score": float, "ARI": float, "ACC*": float, "K": int}``.

    Raises:
        ValueError / TypeError: from :mod:`pyromodels.metrics` for labels of different lengths,
            empty or non-1-d labels.
    """
    k = int(contingency_matrix(y_true, y_pred).shape[1])
    return {
        "F score": float(pair_f1(y_true, y_pred).f1),
        "V score": float(v_measure(y_true, y_pred)),
        "ARI": float(ari(y_true, y_pred)),
        "ACC*": float(purity(y_true, y_pred)),
        "K": k,
    }
