r"""Seeded simulators that return the data contracts together with the truth.

Every simulator draws from a ``torch.Generator`` made from ``seed`` (and, where torch has no
seeded sampler, from a numpy ``Generator`` on a seed derived from it), never from the global
RNG, in float64, so the same seed gives the same data on every run.
"""

from __future__ import annotations

import torch

from ..checks import as_float_tensor, check_int, check_stochastic
from ..core.seeding import make_generator

__all__ = ["simulate_gaussian_mixture", "DTYPE"]

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
