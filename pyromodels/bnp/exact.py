r"""The exact posterior over the partitions of a tiny data set: the oracle for DP-mixture samplers.

With the cluster parameters integrated out (:func:`~pyromodels.bnp.collapsed_log_joint`), a
partition :math:`c` of :math:`N` points into blocks of sizes :math:`n_1, \dots, n_K` has

.. math::

    p(c \mid Z) \propto \alpha^K \prod_{k=1}^K \Gamma(n_k)\, m(Z_k),

:math:`m(Z_k)` the Normal-Gamma marginal likelihood of block :math:`k`'s points. Enumerating the
Bell(N) partitions (52 for :math:`N = 5`, 203 for 6, 4140 for 8, 115975 for 10) normalises it;
a Gibbs sampler of the DP mixture (Neal's Algorithms 2 and 3) must visit the partitions with
these frequencies.

Example:
    >>> import torch
    >>> from pyromodels.conjugate import NormalGamma
    >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 1.0, 1.0)
    >>> labels, probs = exact_partition_posterior(torch.zeros(4, 1), prior, 1.0)
    >>> labels.shape, round(float(probs.sum()), 12)
    (torch.Size([15, 4]), 1.0)
"""

from __future__ import annotations

import torch

from ..conjugate import NormalGamma
from .crp import check_concentration
from .dp_joint import collapsed_log_joint
from .ng_predictive import check_data, check_prior
from .partitions import set_partitions

__all__ = ["exact_partition_posterior", "MAX_EXACT_POINTS"]

#: the most points enumerated (Bell(10) = 115975 partitions, about 20 s)
MAX_EXACT_POINTS = 10


def exact_partition_posterior(z, prior: NormalGamma, alpha) -> tuple[torch.Tensor, torch.Tensor]:
    """Every partition of the rows of ``z`` with its posterior probability under the DP mixture.

    Args:
        z: ``(N, d)`` points, ``1 <= N <= 10``.
        prior: the Normal-Gamma base measure, of dimension ``d``.
        alpha: DP concentration (> 0).

    Returns:
        ``(labels, probs)``: ``(B, N)`` int64 canonical labelings (blocks numbered in order of
        first appearance, in the lexicographic order of
        :func:`~pyromodels.bnp.set_partitions`; ``B = Bell(N)``) and ``(B,)`` float64
        probabilities summing to 1.

    Raises:
        ValueError: more than 10 rows, or the errors of
            :func:`~pyromodels.bnp.collapsed_log_joint` (``z`` not ``(N, d)`` and finite, a
            prior of another dimension, ``alpha <= 0``).
        TypeError: a prior that is not a ``NormalGamma``.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 1.0, 1.0)
        >>> z = torch.tensor([[0.0], [0.1], [9.0]], dtype=torch.float64)
        >>> labels, probs = exact_partition_posterior(z, prior, 1.0)
        >>> labels[int(probs.argmax())].tolist()
        [0, 0, 1]
    """
    z = check_data(z)
    if z.shape[0] > MAX_EXACT_POINTS:
        raise ValueError(f"z must have at most {MAX_EXACT_POINTS} rows for enumeration, got "
                         f"{z.shape[0]}")
    prior = check_prior(prior, z.shape[1])
    alpha = check_concentration(alpha)
    labels = torch.tensor(set_partitions(z.shape[0]), dtype=torch.int64)
    log_joint = torch.stack([collapsed_log_joint(z, row, prior, alpha) for row in labels])
    return labels, torch.softmax(log_joint, 0)
