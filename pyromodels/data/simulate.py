r"""Seeded simulators that return the data contracts together with the truth.

Every simulator draws from a ``torch.Generator`` made from ``seed`` (and, where torch has no
seeded sampler, from a numpy ``Generator`` on a seed derived from it), never from the global
RNG, in float64, so the same seed gives the same data on every run.
"""

from __future__ import annotations

import math

import torch

from ..checks import as_float_tensor, check_int, check_positive, check_stochastic
from ..core.seeding import make_generator

__all__ = ["simulate_gaussian_mixture", "simulate_pinwheel", "DTYPE"]

DTYPE = torch.float64


def simulate_gaussian_mixture(n: int, weights, means, covs, seed: int):
    r"""Draw ``n`` points from a Gaussian mixture.

    .. math:: z_i \sim \mathrm{Categorical}(w), \qquad x_i \mid z_i = k \sim
              \mathcal N(\mu_k, \Sigma_k).

    Args:
        n: number of points.
        weights: ``(K,)`` mixture weights on the simplex.
        means: ``(K, D)`` component means.
        covs: ``(K, D, D)`` symmetric positive-definite covariances.
        seed: integer seed.

    Returns:
        ``(X, truth)``: ``X`` float64 ``(n, D)`` and ``truth = {"z": long (n,), "weights",
        "means", "covs"}``.

    Example:
        >>> X, truth = simulate_gaussian_mixture(5, [0.5, 0.5], [[0.0], [3.0]],
        ...                                      [[[1.0]], [[1.0]]], seed=0)
        >>> X.shape, truth["z"].shape
        (torch.Size([5, 1]), torch.Size([5]))
    """
    n = check_int(n, "n", minimum=1)
    w = check_stochastic(weights, "weights", ndim=1, dtype=DTYPE)
    k = w.shape[0]
    mu = as_float_tensor(means, "means", ndim=2, dtype=DTYPE)
    if mu.shape[0] != k:
        raise ValueError(f"means must have {k} rows (one per weight), got shape {tuple(mu.shape)}")
    d = mu.shape[1]
    cov = as_float_tensor(covs, "covs", ndim=3, dtype=DTYPE)
    if tuple(cov.shape) != (k, d, d):
        raise ValueError(f"covs must have shape ({k}, {d}, {d}), got {tuple(cov.shape)}")
    if not torch.allclose(cov, cov.transpose(-1, -2), atol=1e-10, rtol=0):
        raise ValueError("covs must be symmetric matrices")
    chol, info = torch.linalg.cholesky_ex(cov)
    if bool((info != 0).any()):
        bad = int(torch.nonzero(info).flatten()[0])
        raise ValueError(f"covs[{bad}] must be positive definite")
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z = torch.multinomial(w, n, replacement=True, generator=gen)
    eps = torch.randn(n, d, generator=gen, dtype=DTYPE)
    x = mu[z] + torch.einsum("nij,nj->ni", chol[z], eps)
    return x, {"z": z, "weights": w, "means": mu, "covs": cov}


def simulate_pinwheel(num_clusters: int = 5, points_per_cluster: int = 100, *,
                      radial_std: float = 0.3, tangential_std: float = 0.05, rate: float = 0.25,
                      seed: int):
    r"""Points on the arms of a pinwheel in 2-D (Johnson et al., 2016; the semi-crowdsourced
    clustering paper's Pinwheel toy: 5 clusters of 100 points with the default arguments).

    Point :math:`n` of arm :math:`k` starts at :math:`f_n = (1 + \epsilon_1, \epsilon_2)` with
    :math:`\epsilon_1 \sim \mathcal N(0, \sigma_r^2)`, :math:`\epsilon_2 \sim
    \mathcal N(0, \sigma_t^2)` and is rotated by the angle :math:`\theta_n = 2 \pi k / K +
    \rho\, e^{f_{n,1}}` (farther points turn more):

    .. math:: x_n = 10\, R(\theta_n)^\top f_n, \qquad
              R(\theta) = \begin{pmatrix} \cos\theta & -\sin\theta \\
                                          \sin\theta & \cos\theta \end{pmatrix}.

    The points are returned in a random order, their arms in ``truth["z"]``.

    Args:
        num_clusters: :math:`K`, the number of arms.
        points_per_cluster: points per arm.
        radial_std: :math:`\sigma_r > 0`.
        tangential_std: :math:`\sigma_t > 0`.
        rate: :math:`\rho \ge 0`, how fast the arms turn.
        seed: integer seed.

    Returns:
        ``(X, truth)``: ``X`` float64 ``(K * points_per_cluster, 2)`` and ``truth = {"z": long
        (K * points_per_cluster,)}``.

    Example:
        >>> X, truth = simulate_pinwheel(seed=0)
        >>> tuple(X.shape), torch.bincount(truth["z"]).tolist()
        ((500, 2), [100, 100, 100, 100, 100])
    """
    k = check_int(num_clusters, "num_clusters", minimum=1)
    per = check_int(points_per_cluster, "points_per_cluster", minimum=1)
    scale = torch.tensor([check_positive(radial_std, "radial_std"),
                          check_positive(tangential_std, "tangential_std")], dtype=DTYPE)
    rho = check_positive(rate, "rate", strict=False)
    gen = make_generator(check_int(seed, "seed", minimum=0))
    z = torch.arange(k).repeat_interleave(per)
    f = torch.randn(k * per, 2, generator=gen, dtype=DTYPE) * scale
    f[:, 0] += 1.0
    theta = 2 * math.pi * z.to(DTYPE) / k + rho * torch.exp(f[:, 0])
    cos, sin = torch.cos(theta), torch.sin(theta)
    x = 10.0 * torch.stack([cos * f[:, 0] + sin * f[:, 1], -sin * f[:, 0] + cos * f[:, 1]], 1)
    order = torch.randperm(k * per, generator=gen)
    return x[order], {"z": z[order]}
