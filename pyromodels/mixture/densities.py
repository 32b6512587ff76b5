"""Gaussian log densities shared by every engine of the mixture (E-step, Gibbs, log-likelihood)."""

from __future__ import annotations

import math

import torch

__all__ = ["component_log_density", "precision_to_scale_tril"]


def component_log_density(x: torch.Tensor, locs: torch.Tensor, precisions: torch.Tensor) -> torch.Tensor:
    """``log N(x_n | locs_k, precisions_k^-1)`` for every point and component.

    Args:
        x: ``(N, d)`` points.
        locs: ``(..., K, d)`` component means.
        precisions: ``(..., K, d, d)`` component precision matrices.

    Returns:
        ``(..., N, K)`` log densities.
    """
    d = x.shape[-1]
    chol = torch.linalg.cholesky(precisions)  # Lambda = L L^T
    half_log_det = torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)  # (..., K)
    # L^T (x - mu) as x L - mu L: one matrix product over all points, no (N, K, d, d) temporary
    x_l = torch.einsum("nd,...kde->...nke", x, chol)
    proj = x_l - torch.einsum("...kd,...kde->...ke", locs, chol).unsqueeze(-3)
    maha = proj.pow(2).sum(-1)
    return half_log_det.unsqueeze(-2) - 0.5 * maha - 0.5 * d * math.log(2 * math.pi)


def precision_to_scale_tril(precisions: torch.Tensor) -> torch.Tensor:
    """Lower Cholesky factor of the covariance ``precisions^-1`` (batched)."""
    chol = torch.linalg.cholesky(precisions)
    cov = torch.cholesky_inverse(chol)
    return torch.linalg.cholesky(0.5 * (cov + cov.transpose(-1, -2)))
