"""The Normal-inverse-Wishart parametrisation ``(m, kappa, S, nu)`` as conversions of
:class:`~pyromodels.conjugate.NormalWishart`.

The semi-crowdsourced clustering paper (Appendix A) writes the prior of a Gaussian's
``(mu, Sigma)`` as

.. math::

    \\Sigma \\sim \\mathrm{InvWishart}(S, \\nu), \\qquad \\mu \\mid \\Sigma \\sim N(m, \\Sigma / \\kappa),

so ``E[Sigma^{-1}] = nu S^{-1}``. That is the Normal-Wishart with ``W = S^{-1}`` on the
precision ``Lambda = Sigma^{-1}``; the functions here convert between the two and express the
paper's natural parameters and statistics, which are a rearrangement of the Normal-Wishart's:

=====================================  ===========================================
paper's natural parameter              paired statistic
=====================================  ===========================================
``kappa m``                            ``Sigma^{-1} mu``
``S + kappa m m^T``                    ``-Sigma^{-1} / 2``
``kappa``                              ``-mu^T Sigma^{-1} mu / 2``
``nu + d + 2``                         ``-log|Sigma| / 2``
=====================================  ===========================================

with log normaliser ``(nu / 2)(d log 2 - log|S|) + log Gamma_d(nu / 2) - (d / 2) log kappa``,
which equals :meth:`NormalWishart.log_normalizer`. The two parametrisations differ in the
base measure (Lebesgue in ``Sigma`` against Lebesgue in ``Lambda``; the Jacobian is
``|Lambda|^{d+1}``), which is why the last natural parameter is ``nu + d + 2`` here and
``(nu - d) / 2`` there. The expected statistics (the paper's A.2) are

.. math::

    E[t] = (\\nu S^{-1} m,\\; -\\tfrac12 \\nu S^{-1},\\;
    -\\tfrac12 (d / \\kappa + \\nu m^T S^{-1} m),\\;
    \\tfrac12 (\\psi_d(\\nu / 2) + d \\log 2 - \\log|S|)).

Example:
    >>> import torch
    >>> eye = torch.eye(2, dtype=torch.float64)
    >>> nw = niw_to_normal_wishart(torch.zeros(2, dtype=torch.float64), 0.5, 2.5 * eye, 2.5)
    >>> torch.allclose(nw.mean()[1], eye)  # E[Sigma^{-1}] = nu S^{-1}
    True
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ._base import coerce_params
from .normal_wishart import NormalWishart, NormalWishartStats

__all__ = [
    "NIWParams",
    "NIWStats",
    "niw_to_normal_wishart",
    "normal_wishart_to_niw",
    "niw_natural_params",
    "niw_from_natural",
    "niw_stats",
    "niw_expected_stats",
]


class NIWParams(NamedTuple):
    """The paper's hyperparameters: ``loc`` ``m`` ``(..., d)``, ``kappa`` ``(...)``,
    ``scale`` ``S`` ``(..., d, d)`` and degrees of freedom ``df`` ``nu`` ``(...)``."""

    loc: torch.Tensor
    kappa: torch.Tensor
    scale: torch.Tensor
    df: torch.Tensor


class NIWStats(NamedTuple):
    """Statistics of ``(mu, Sigma)`` in the paper's order (or the paired natural parameters):
    ``precision_mean = Sigma^{-1} mu`` ``(..., d)``, ``neg_half_precision = -Sigma^{-1} / 2``
    ``(..., d, d)``, ``neg_half_quad = -mu^T Sigma^{-1} mu / 2`` ``(...)`` and
    ``neg_half_log_det = -log|Sigma| / 2`` ``(...)``."""

    precision_mean: torch.Tensor
    neg_half_precision: torch.Tensor
    neg_half_quad: torch.Tensor
    neg_half_log_det: torch.Tensor


def niw_to_normal_wishart(loc, kappa, scale, df) -> NormalWishart:
    """The :class:`NormalWishart` of ``Sigma ~ InvWishart(S, nu)``, ``mu | Sigma ~
    N(m, Sigma / kappa)``: ``W = S^{-1}``, same ``m``, ``kappa``, ``nu``.

    Args:
        loc: ``(..., d)`` ``m``.
        kappa: ``(...)`` ``kappa > 0``.
        scale: ``(..., d, d)`` symmetric positive definite ``S``.
        df: ``(...)`` ``nu > d - 1``.

    Raises:
        ValueError: as :class:`NormalWishart` (``scale`` is named ``inv_scale`` there).
    """
    return NormalWishart.from_inverse_scale(loc, kappa, df, scale)


def normal_wishart_to_niw(prior: NormalWishart) -> NIWParams:
    """The paper's ``(m, kappa, S, nu)`` of a :class:`NormalWishart` (``S = W^{-1}``)."""
    if not isinstance(prior, NormalWishart):
        raise TypeError(f"prior must be a NormalWishart, got {type(prior).__name__}")
    return NIWParams(prior.loc, prior.kappa, prior.inv_scale(), prior.nu)


def niw_stats(stats: NormalWishartStats) -> NIWStats:
    """The paper's statistics from the Normal-Wishart's ``(Lambda, log|Lambda|, Lambda mu,
    mu^T Lambda mu)`` (a point's statistics or their expectations): a linear map, so it is
    differentiable and commutes with expectations."""
    lam, log_det, lam_mu, quad = NormalWishartStats(*stats)
    return NIWStats(lam_mu, -0.5 * lam, -0.5 * quad, 0.5 * log_det)


def niw_expected_stats(prior: NormalWishart) -> NIWStats:
    """``E[t(mu, Sigma)]`` in the paper's order (its Appendix A.2)."""
    return niw_stats(prior.expected_stats())


def niw_natural_params(prior: NormalWishart) -> NIWStats:
    """The paper's natural parameters ``(kappa m, S + kappa m m^T, kappa, nu + d + 2)``, in
    the fields of :class:`NIWStats` they pair with."""
    eta = prior.natural_params()
    d = prior.dim
    return NIWStats(
        eta.precision_mean,
        -2 * eta.precision,
        -2 * eta.mean_precision_mean,
        2 * eta.log_det_precision + 2 * d + 2,
    )


def niw_from_natural(eta) -> NormalWishart:
    """The :class:`NormalWishart` with the paper's natural parameters ``eta`` (a
    :class:`NIWStats` or a 4-tuple; inverse of :func:`niw_natural_params`).

    Raises:
        ValueError: if ``eta`` is outside the natural parameter space (``kappa <= 0``,
            ``nu <= d - 1`` or ``S`` not positive definite).
    """
    kappa_m, outer, kappa, shifted_df = NIWStats(*eta)
    d = coerce_params(kappa_m=kappa_m)["kappa_m"].shape[-1]
    return NormalWishart.from_natural(
        NormalWishartStats(-0.5 * outer, 0.5 * (shifted_df - 2 * d - 2), kappa_m, -0.5 * kappa)
    )
