r"""The default prior of :class:`~pyromodels.crowd.estimators.DawidSkeneEstimator`'s EM: a
diagonal pseudo-count on the confusion rows of the classes too thin to identify, none elsewhere.

Maximum-likelihood EM fits every worker's confusion row of class :math:`k` from the labels that
worker gave to tasks believed to be of class :math:`k`. A row of :math:`K` probabilities has
:math:`K - 1` free ones; a row that rests on fewer labels reproduces them exactly, and a class
whose rows all do so can claim tasks of its own (the degenerate optimum described in
:mod:`pyromodels.crowd.ds.em`: a label that one worker alone uses, a class of one or two
tasks). At the majority-vote start every label :math:`k` adds its task's vote share to the
counts of class :math:`k`, so the rows of class :math:`k` hold :math:`L_k` expected labels in
all, :math:`L_k / M` per worker on average, where :math:`L_k` is the number of labels
:math:`k` in the table and :math:`M` the number of workers.
The prior tops each row up to its :math:`K - 1` free probabilities with correct pseudo-labels:

.. math::
    d_k = \max\Bigl(0,\; K - 1 - \frac{L_k}{M}\Bigr),

added on the diagonal of every worker's row of class :math:`k` (``diagonal`` of
:class:`~pyromodels.crowd.ds.model.DawidSkene`, one value per class). A class that holds
enough labels gets no prior, so EM there is maximum likelihood, crowd-kit's estimate; a class
that one worker uses once gets almost :math:`K - 1` correct pseudo-labels on each row, which
costs a class of its own a factor :math:`1/(1 + d_k)`, nearly :math:`1/K`, per worker whose
other label it must reproduce. The prior is chosen from the labels and the table's sizes
alone, never from gold.

On the ten bundled crowd sets only the music-genre set (``K = 10``, 44 workers, about 67 labels
each) has thin classes, and there the prior wins 6 gold tasks against maximum likelihood (10 in
float64); on the nine others it is zero and EM is maximum likelihood
(``scripts/ds_em_default_accuracy.py`` compares it with the earlier defaults and crowd-kit).
Two other ways of setting the strength lost tasks there: the share of the task x worker grid
that holds a label, on every class, lost one task each on ducks, dog and product; a strength
fitted by empirical Bayes (the Dirichlet-multinomial evidence of the E-step's expected counts,
one value for all rows or one per worker) settles at 2 to 15 pseudo-labels and lost 60 to 100
tasks on web-search, whose many careless workers with a few labels each it makes look accurate.

Example:
    >>> import pandas as pd
    >>> from pyromodels.data.columns import LabelCodes
    >>> df = pd.DataFrame({"task": [0, 0, 1, 1, 2, 2], "worker": [0, 1] * 3,
    ...                    "label": ["a", "a", "a", "b", "a", "c"]})
    >>> em_diagonal(LabelCodes.from_dataframe(df))  # L = (4, 1, 1), M = 2, K = 3
    (0.0, 1.5, 1.5)
"""

from __future__ import annotations

import numpy as np

from ...data.idmaps import to_numpy

__all__ = ["em_diagonal", "diagonal_from_counts"]


def em_diagonal(labels) -> tuple[float, ...]:
    r"""EM's per-class diagonal pseudo-count when ``diagonal`` is left at ``None``:
    :math:`d_k = \max(0, K - 1 - L_k / M)` (see the module doc).

    Args:
        labels: the coded labels (a :class:`~pyromodels.data.columns.LabelCodes` or an
            annotation table) with ``K`` classes and ``M`` workers.

    Returns:
        ``K`` floats (a tuple, so that models holding it compare and hash as with a number):
        the pseudo-count added on the diagonal of every worker's confusion row of each class,
        0 for a class whose rows hold at least ``K - 1`` labels per worker on average.
    """
    K = labels.num_classes
    given = np.bincount(to_numpy(labels.label_idx, "label codes").astype(np.int64),
                        minlength=K)
    return diagonal_from_counts(given, labels.num_workers)


def diagonal_from_counts(given, num_workers: int) -> tuple[float, ...]:
    """:func:`em_diagonal` from the labels per class ``given`` ``(K,)`` and the number of
    workers (what a data-parallel fit sums over its partitions)."""
    given = np.asarray(given, dtype=np.float64)
    K = len(given)
    per_worker = given / num_workers if num_workers else np.zeros(K)  # no workers: no labels
    return tuple(float(d) for d in np.maximum(0.0, (K - 1) - per_worker))
