"""Priors of the Bayesian Gaussian mixture and the prepared-data container."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..checks import as_float_tensor, check_positive
from .scale import check_data_scale

__all__ = ["MixturePrior", "MixtureData", "resolve_prior"]


@dataclass(frozen=True)
class MixturePrior:
    """Resolved hyperparameters (tensors on the data's device and dtype).

    Attributes:
        weight_concentration: ``alpha``, the symmetric Dirichlet concentration (scalar tensor).
        mean_prior: ``m``, the prior mean of each component mean, ``(d,)``.
        mean_precision: ``kappa``, scaling of the component precision for the mean (scalar).
        degrees_of_freedom: ``nu`` of the Wishart on each precision (scalar, ``> d - 1``).
        covariance_prior: ``Psi = W^-1``, so that ``E[Lambda] = nu Psi^-1``, ``(d, d)``.
    """

    weight_concentration: torch.Tensor
    mean_prior: torch.Tensor
    mean_precision: torch.Tensor
    degrees_of_freedom: torch.Tensor
    covariance_prior: torch.Tensor

    @property
    def wishart_scale_tril(self) -> torch.Tensor:
        """Lower Cholesky factor of the Wishart scale ``W = Psi^-1``."""
        w = torch.cholesky_inverse(torch.linalg.cholesky(self.covariance_prior))
        return torch.linalg.cholesky(0.5 * (w + w.transpose(-1, -2)))


@dataclass(frozen=True)
class MixtureData:
    """Validated points ``x`` (N, d) with the prior resolved against them."""

    x: torch.Tensor
    prior: MixturePrior

    @property
    def device(self) -> torch.device:
        return self.x.device

    @property
    def num_points(self) -> int:
        return self.x.shape[0]

    @property
    def dim(self) -> int:
        return self.x.shape[1]


def resolve_prior(
    x: torch.Tensor,
    weight_concentration=None,
    mean_prior=None,
    mean_precision=None,
    degrees_of_freedom=None,
    covariance_prior=None,
) -> MixturePrior:
    """Fill ``None`` hyperparameters from the data, as scikit-learn's ``BayesianGaussianMixture``.

    Defaults: ``alpha = 1`` (uniform on the simplex), ``m`` = the data mean, ``kappa = 1``,
    ``nu = d + 2`` (so ``E[Sigma] = Psi`` exists), ``Psi`` = the empirical covariance of ``x``
    plus ``1e-6`` times its mean variance on the diagonal (positive definite even when a
    column is constant). This empirical-Bayes prior scales with the data, so the fit is
    scale-equivariant: ``c x`` gives ``c locs`` and ``precisions / c^2`` (see
    :mod:`~pyromodels.mixture.scale`).

    Raises:
        ValueError: for hyperparameters out of their support, or data whose scale the data's
            dtype cannot fit (:func:`~pyromodels.mixture.scale.check_data_scale`); with the
            default ``Psi``, also for data whose points are all identical (no scale at all).
    """
    d = x.shape[1]
    opts = {"dtype": x.dtype, "device": x.device}
    alpha = 1.0 if weight_concentration is None else weight_concentration
    alpha = torch.tensor(check_positive(alpha, "weight_concentration"), **opts)
    if mean_prior is None:
        m = x.mean(0)
    else:
        m = as_float_tensor(mean_prior, "mean_prior", ndim=1).to(**opts)
        if m.shape[0] != d:
            raise ValueError(f"mean_prior must have length {d} (the data's dimension), got {m.shape[0]}")
    kappa_value = 1.0 if mean_precision is None else mean_precision
    kappa = torch.tensor(check_positive(kappa_value, "mean_precision"), **opts)
    nu_value = d + 2.0 if degrees_of_freedom is None else degrees_of_freedom
    nu = check_positive(nu_value, "degrees_of_freedom")
    if nu <= d - 1:
        raise ValueError(f"degrees_of_freedom must be > d - 1 = {d - 1} for a proper Wishart, got {nu}")
    check_data_scale(x, "data", scaled_prior=covariance_prior is None)
    if covariance_prior is None:
        xc = x - x.mean(0)
        psi = xc.T @ xc / max(x.shape[0] - 1, 1)
        psi = psi + 1e-6 * psi.diagonal().mean() * torch.eye(d, **opts)
    else:
        psi = as_float_tensor(covariance_prior, "covariance_prior", ndim=2).to(**opts)
        if psi.shape != (d, d):
            raise ValueError(f"covariance_prior must have shape ({d}, {d}), got {tuple(psi.shape)}")
        # relative to psi's own magnitude, so that a tiny psi is checked as strictly as a large one
        if not bool(((psi - psi.T).abs() <= 1e-8 * psi.abs().amax()).all()):
            raise ValueError("covariance_prior must be symmetric")
        if torch.linalg.cholesky_ex(psi).info != 0:
            raise ValueError("covariance_prior must be positive definite")
    return MixturePrior(alpha, m, kappa, torch.tensor(nu, **opts), psi)
