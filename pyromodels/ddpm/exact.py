"""Exact posterior over partitions for tiny data sets: the oracle for DP-mixture samplers.

With the cluster parameters integrated out, a partition ``c`` of ``N`` points has

.. math::

    p(c \\mid Z) \\propto \\alpha^K \\prod_k \\Gamma(n_k)\\, m(Z_k), \\qquad
    m(Z_k) = \\int \\prod_{i \\in k} N(z_i \\mid \\mu, \\lambda^{-1} I_d)\\,
             \\mathrm{NG}(\\mu, \\lambda)\\, d\\mu\\, d\\lambda
           = \\frac{\\exp A(\\text{posterior})}{\\exp A(\\text{prior})} (2\\pi)^{-n_k d / 2},

(``A`` the Normal-Gamma log normaliser, see :class:`~pyromodels.conjugate.NormalGamma`), and
enumerating all ``Bell(N)`` partitions (52 for ``N = 5``, 203 for ``N = 6``, 4140 for ``N = 8``)
normalises it. A Gibbs sampler of the DP mixture (Neal's Algorithms 2 and 3) must visit the
partitions with these frequencies.

Example:
    >>> import torch
    >>> from pyromodels.ddpm import DPMixturePrior
    >>> labels, probs = exact_partition_posterior(torch.zeros(4, 1), DPMixturePrior())
    >>> labels.shape, round(float(probs.sum()), 12)
    (torch.Size([15, 4]), 1.0)
"""

from __future__ import annotations

import torch

from ..checks import as_float_tensor, as_label_tensor, check_int
from .joint import crp_log_eppf
from .prior import DPMixturePrior

__all__ = ["set_partitions", "partition_log_marginal", "exact_partition_posterior"]

#: largest N enumerated (Bell(10) = 115975 partitions)
MAX_POINTS = 10


def set_partitions(num_points: int) -> torch.Tensor:
    """All partitions of ``N`` points as restricted-growth label vectors.

    Each row ``c`` has ``c_0 = 0`` and ``c_i <= 1 + max(c_<i)`` (clusters numbered in order of
    first appearance), so every partition appears exactly once.

    Args:
        num_points: ``1 <= N <= 10``.

    Returns:
        ``(Bell(N), N)`` long tensor.

    Example:
        >>> set_partitions(3).tolist()
        [[0, 0, 0], [0, 0, 1], [0, 1, 0], [0, 1, 1], [0, 1, 2]]
    """
    num = check_int(num_points, "num_points", minimum=1, maximum=MAX_POINTS)
    rows = [[0]]
    for _ in range(1, num):
        rows = [row + [k] for row in rows for k in range(max(row) + 2)]
    return torch.tensor(rows, dtype=torch.long)


def partition_log_marginal(z, labels, prior: DPMixturePrior) -> torch.Tensor:
    """``log p(c, Z) = log CRP(c; alpha) + sum_k log m(Z_k)``, cluster parameters integrated out.

    Args:
        z: ``(N, d)`` points.
        labels: ``(N,)`` labels ``0..K-1``, every value used.
        prior: the hyperparameters (``mu0 = "empirical"`` resolves against ``z``).

    Returns:
        0-d tensor in ``z``'s dtype.
    """
    z = as_float_tensor(z, "z", ndim=2)
    c = as_label_tensor(labels, "labels")
    if c.shape[0] != z.shape[0]:
        raise ValueError(f"labels must have one entry per row of z ({z.shape[0]}), got {c.shape[0]}")
    log_eppf = crp_log_eppf(c, prior.alpha).to(z.dtype)
    k = int(c.max()) + 1
    one_hot = torch.nn.functional.one_hot(c, k).to(z.dtype)
    count = one_hot.sum(0)
    sums = one_hot.T @ z
    sum_sq = one_hot.T @ (z * z).sum(-1)
    ng = prior.normal_gamma(z.shape[1], z, dtype=z.dtype, device=z.device)
    return log_eppf + ng.log_marginal_likelihood(count, sums, sum_sq).sum()


def exact_partition_posterior(z, prior: DPMixturePrior) -> tuple[torch.Tensor, torch.Tensor]:
    """Every partition of the rows of ``z`` with its posterior probability.

    Args:
        z: ``(N, d)`` points, ``N <= 10``.
        prior: the hyperparameters.

    Returns:
        ``(labels, probs)``: ``(B, N)`` restricted-growth labels (see :func:`set_partitions`)
        and ``(B,)`` probabilities summing to 1.
    """
    z = as_float_tensor(z, "z", ndim=2)
    if z.shape[0] > MAX_POINTS:
        raise ValueError(f"z must have at most {MAX_POINTS} rows for enumeration, got {z.shape[0]}")
    labels = set_partitions(z.shape[0])
    logp = torch.stack([partition_log_marginal(z, row, prior) for row in labels])
    return labels, torch.softmax(logp, 0)
