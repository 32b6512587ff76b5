"""Closed-form log densities of a full DP-mixture state ``(c, mu, lambda, z)``.

These are the terms of the complete-data log joint of the paper (eqs. 16-19)::

    log p(H, c, Y | theta) = sum_i log N(f(y_i) | mu_{c_i}, lambda_{c_i}^-1 I_d)
                           + sum_k [log N(mu_k | mu0, (kappa0 lambda_k)^-1 I_d)
                                    + log Gamma(lambda_k | alpha0, rate beta0)]
                           + log CRP(c; alpha)
                           + sum_i log |det df/dy_i|

with the CRP's exchangeable partition probability function
``p(c) = alpha^K Gamma(alpha) / Gamma(alpha + N) prod_k Gamma(n_k)``
(:func:`pyromodels.bnp.crp_log_prob` of the cluster sizes). The Pyro program of
:mod:`pyromodels.ddpm.model` defines the same joint; its tests check these against it. The
new-cluster predictive of eq. 24 and the collapsed joint are the DP-mixture part's
(:func:`pyromodels.bnp.new_cluster_log_predictive`, :func:`pyromodels.bnp.collapsed_log_joint`,
with the base measure :meth:`DPMixturePrior.normal_gamma`).

A state's labels ``c`` take the values ``0..K-1``, each at least once, and ``mu[k]``,
``lam[k]`` belong to label ``k`` (any order of the labels: the joint is invariant).

Example:
    >>> import torch
    >>> from pyromodels.ddpm import DPMixturePrior
    >>> z = torch.tensor([[0.0], [0.5], [3.0]], dtype=torch.float64)
    >>> c = torch.tensor([0, 0, 1])
    >>> mu = torch.tensor([[0.2], [3.1]], dtype=torch.float64)
    >>> lam = torch.tensor([1.0, 2.0], dtype=torch.float64)
    >>> prior = DPMixturePrior(alpha=1.0)
    >>> parts = (gaussian_log_likelihood(z, c, mu, lam) + cluster_log_prior(mu, lam, prior)
    ...          + math.log(1 / 6))  # the EPPF: 1 * Gamma(1)/Gamma(4) * Gamma(2) Gamma(1)
    >>> bool(torch.isclose(complete_log_joint(z, c, mu, lam, prior), parts))
    True
"""

from __future__ import annotations

import math

import torch

from ..bnp import crp_log_prob
from ..checks import as_float_tensor, as_label_tensor
from .prior import DPMixturePrior

__all__ = ["cluster_log_prior", "gaussian_log_likelihood", "complete_log_joint", "isotropic_log_densities"]

_LOG_2PI = math.log(2 * math.pi)


def _occupied_labels(labels, num_clusters: int | None = None) -> torch.Tensor:
    c = as_label_tensor(labels, "labels")
    k = int(c.max()) + 1
    if num_clusters is not None and k != num_clusters:
        raise ValueError(f"labels must take the values 0..{num_clusters - 1} (one per cluster), "
                         f"found labels up to {k - 1}")
    if int((torch.bincount(c, minlength=k) == 0).sum()):
        raise ValueError(f"labels must use every value in 0..{k - 1} (no empty cluster)")
    return c


def _state(z, labels, mu, lam):
    z = as_float_tensor(z, "z", ndim=2)
    mu = as_float_tensor(mu, "mu", ndim=2, dtype=z.dtype)
    lam = as_float_tensor(lam, "lam", ndim=1, dtype=z.dtype)
    if mu.shape[1] != z.shape[1]:
        raise ValueError(f"mu must have {z.shape[1]} columns (the dimension of z), got {mu.shape[1]}")
    if lam.shape[0] != mu.shape[0]:
        raise ValueError(f"lam must have one entry per row of mu ({mu.shape[0]}), got {lam.shape[0]}")
    if not bool((lam > 0).all()):
        raise ValueError("lam must be > 0 (cluster precisions)")
    c = _occupied_labels(labels, mu.shape[0])
    if c.shape[0] != z.shape[0]:
        raise ValueError(f"labels must have one entry per row of z ({z.shape[0]}), got {c.shape[0]}")
    return z, c, mu, lam


def gaussian_log_likelihood(z, labels, mu, lam) -> torch.Tensor:
    """``sum_i log N(z_i | mu_{c_i}, lam_{c_i}^-1 I_d)`` (eq. 6).

    Args:
        z: ``(N, d)`` points (transformed, ``z = f(y)``).
        labels: ``(N,)`` labels ``0..K-1``.
        mu: ``(K, d)`` cluster means.
        lam: ``(K,)`` cluster precisions.
    """
    z, c, mu, lam = _state(z, labels, mu, lam)
    d = z.shape[1]
    sq = ((z - mu[c]) ** 2).sum(-1)
    return (0.5 * d * (torch.log(lam[c]) - _LOG_2PI) - 0.5 * lam[c] * sq).sum()


def isotropic_log_densities(z, mu, lam) -> torch.Tensor:
    """``log N(z_i | mu_k, lam_k^-1 I_d)`` for every point and cluster, batched over draws.

    Args:
        z: ``(N, d)`` points.
        mu: ``(..., K, d)`` cluster means.
        lam: ``(..., K)`` cluster precisions.

    Returns:
        ``(..., N, K)`` log densities (the ``(..., N, K, d)`` differences are built at once).
    """
    sq = ((z.unsqueeze(-2) - mu.unsqueeze(-3)) ** 2).sum(-1)
    return 0.5 * z.shape[-1] * (torch.log(lam).unsqueeze(-2) - _LOG_2PI) - 0.5 * lam.unsqueeze(-2) * sq


def cluster_log_prior(mu, lam, prior: DPMixturePrior, data=None) -> torch.Tensor:
    """``sum_k log NG(mu_k, lam_k | mu0, kappa0, alpha0, beta0)`` (eq. 7).

    Args:
        mu: ``(K, d)`` cluster means.
        lam: ``(K,)`` cluster precisions.
        prior: the hyperparameters.
        data: ``(N, d)`` points, used only to resolve ``mu0 = "empirical"``.
    """
    mu = as_float_tensor(mu, "mu", ndim=2)
    lam = as_float_tensor(lam, "lam", ndim=1, dtype=mu.dtype)
    ng = prior.normal_gamma(mu.shape[1], data, dtype=mu.dtype, device=mu.device)
    return ng.log_prob(mu, lam).sum()


def complete_log_joint(z, labels, mu, lam, prior: DPMixturePrior, log_abs_det=None) -> torch.Tensor:
    """The complete-data log joint of eqs. 16-19 (see the module docstring).

    Args:
        z: ``(N, d)`` transformed points ``f(y)``.
        labels: ``(N,)`` labels ``0..K-1``, every value used.
        mu: ``(K, d)`` cluster means; ``lam``: ``(K,)`` cluster precisions.
        prior: the hyperparameters (``mu0 = "empirical"`` resolves against ``z``).
        log_abs_det: ``(N,)`` values of ``log |det df/dy_i|`` (0 for a volume-preserving flow;
            ``None`` means 0).

    Returns:
        0-d tensor in ``z``'s dtype.
    """
    z, c, mu, lam = _state(z, labels, mu, lam)
    total = (gaussian_log_likelihood(z, c, mu, lam) + cluster_log_prior(mu, lam, prior, z)
             + crp_log_prob(torch.bincount(c), prior.alpha).to(z.dtype))
    if log_abs_det is not None:
        det = as_float_tensor(log_abs_det, "log_abs_det", ndim=1, dtype=z.dtype)
        if det.shape[0] != z.shape[0]:
            raise ValueError(f"log_abs_det must have one entry per row of z ({z.shape[0]}), "
                             f"got {det.shape[0]}")
        total = total + det.sum()
    return total
