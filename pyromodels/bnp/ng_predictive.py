r"""Predictive densities of the isotropic Normal-Gamma base measure used by the DP mixture.

Base measure (DDPM paper, eq. 7): :math:`\lambda \sim \mathrm{Gamma}(\alpha_0, \beta_0)` (rate
:math:`\beta_0`), :math:`\mu \mid \lambda \sim N(\mu_0, (\kappa_0\lambda)^{-1} I_d)`, and
:math:`z \mid \mu, \lambda \sim N(\mu, \lambda^{-1} I_d)`. The prior predictive of one point
(the new-cluster weight of eq. 24) is, with :math:`\kappa' = \kappa_0 + 1`,
:math:`\alpha' = \alpha_0 + d/2` and :math:`\beta' = \beta_0 + \kappa_0 \|z - \mu_0\|^2 /
(2\kappa')`,

.. math::

    \log m(z) = \log\Gamma(\alpha') - \log\Gamma(\alpha_0) + \alpha_0 \log\beta_0
        - \alpha' \log\beta' + \tfrac{d}{2}(\log\kappa_0 - \log\kappa')
        - \tfrac{d}{2}\log 2\pi,

the multivariate Student-t with :math:`2\alpha_0` degrees of freedom, location :math:`\mu_0`
and scale :math:`\beta_0 \kappa' / (\alpha_0 \kappa_0)\, I_d`. The paper prints
:math:`\tfrac12(\log\kappa_0 - \log\kappa')`, which is right only for :math:`d = 1`
(an error in the DDPM paper); ``paper_literal=True`` reproduces it. The same formula with the
posterior hyperparameters of a cluster (its points excluding :math:`z`) is the cluster's
posterior predictive used by the collapsed sampler (Neal's Algorithm 3).

Example:
    >>> import torch
    >>> from pyromodels.conjugate import NormalGamma
    >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 1.0, 2.0, 1.0)
    >>> z = torch.tensor([[0.5, -0.5]], dtype=torch.float64)
    >>> torch.allclose(new_cluster_log_predictive(z, prior), prior.predictive_log_prob(z))
    True
"""

from __future__ import annotations

import math

import torch

from ..checks import as_float_tensor, check_bool
from ..conjugate import NormalGamma

__all__ = ["new_cluster_log_predictive", "log_predictive", "check_prior", "check_data", "LOG_2PI"]

LOG_2PI = math.log(2.0 * math.pi)


def check_prior(prior, dim: int | None = None) -> NormalGamma:
    """A single (unbatched) :class:`~pyromodels.conjugate.NormalGamma` in float64 on the CPU.

    Raises:
        TypeError: ``prior`` is not a ``NormalGamma``.
        ValueError: a batched prior, or one whose dimension is not ``dim``.
    """
    if not isinstance(prior, NormalGamma):
        raise TypeError(f"prior must be a pyromodels.conjugate.NormalGamma, got "
                        f"{type(prior).__name__}")
    if prior.batch_shape != torch.Size([]):
        raise ValueError(f"prior must be a single Normal-Gamma (batch shape ()), got batch "
                         f"shape {tuple(prior.batch_shape)}")
    if dim is not None and prior.dim != dim:
        raise ValueError(f"prior has dimension {prior.dim} but z has {dim} columns")
    if prior.loc.dtype != torch.float64 or prior.loc.device.type != "cpu":
        prior = NormalGamma(prior.loc.double().cpu(), prior.kappa.double().cpu(),
                            prior.a.double().cpu(), prior.b.double().cpu())
    return prior


def check_data(z) -> torch.Tensor:
    """``z`` as a finite ``(N, d)`` float64 CPU tensor (``N, d >= 1``).

    Raises:
        ValueError: ``'z must be 2-dimensional'``, empty or non-finite values.
        TypeError: non-numeric values.
    """
    t = as_float_tensor(z, "z", ndim=2, dtype=torch.float64)
    if t.shape[1] == 0:
        raise ValueError(f"z must have at least one column, got shape {tuple(t.shape)}")
    return t.detach().cpu().contiguous()


def new_cluster_log_predictive(z, prior: NormalGamma, paper_literal: bool = False) -> torch.Tensor:
    r"""Log prior predictive :math:`\log m(z_i)` of each point (eq. 24, corrected).

    Args:
        z: ``(N, d)`` points.
        prior: the base measure, a ``NormalGamma(mu_0, kappa_0, alpha_0, beta_0)`` of
            dimension ``d``.
        paper_literal: use the paper's :math:`\tfrac12(\log\kappa_0 - \log\kappa')` in place
            of :math:`\tfrac{d}{2}(\cdots)`; for ``d > 1`` the result is then not a normalised
            density (it exceeds the correct value by :math:`\tfrac{d-1}{2}\log(\kappa'/\kappa_0)`).

    Returns:
        ``(N,)`` float64 tensor.

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 0.5, 3.0, 2.0)
        >>> z = torch.tensor([[1.0]], dtype=torch.float64)
        >>> bool(new_cluster_log_predictive(z, prior) == new_cluster_log_predictive(
        ...     z, prior, paper_literal=True))
        True
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    return log_predictive(z, prior, check_bool(paper_literal, "paper_literal"))


def log_predictive(z: torch.Tensor, prior: NormalGamma, paper_literal: bool) -> torch.Tensor:
    """The body of :func:`new_cluster_log_predictive` on checked arguments (float64 CPU ``z``
    and prior, as :func:`check_data` and :func:`check_prior` return them)."""
    d = z.shape[1]
    k0, a0, b0 = float(prior.kappa), float(prior.a), float(prior.b)
    k1, a1 = k0 + 1.0, a0 + 0.5 * d
    b1 = b0 + k0 * ((z - prior.loc) ** 2).sum(-1) / (2.0 * k1)
    kappa_factor = 0.5 if paper_literal else 0.5 * d
    const = (math.lgamma(a1) - math.lgamma(a0) + a0 * math.log(b0)
             + kappa_factor * (math.log(k0) - math.log(k1)) - 0.5 * d * LOG_2PI)
    return const - a1 * torch.log(b1)
