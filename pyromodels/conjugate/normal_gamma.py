"""Isotropic Normal-Gamma prior over a mean vector and a shared precision.

Model (Gamma with rate ``b``):

.. math::

    \\tau \\sim \\mathrm{Gamma}(a, b), \\qquad
    \\mu \\mid \\tau \\sim N(m, (\\kappa \\tau)^{-1} I_d), \\qquad
    x_i \\mid \\mu, \\tau \\sim N(\\mu, \\tau^{-1} I_d).

From ``n``, ``s = sum_i x_i`` and ``q = sum_i ||x_i||^2`` the posterior is

.. math::

    \\kappa_n = \\kappa + n, \\quad m_n = (\\kappa m + s) / \\kappa_n, \\quad
    a_n = a + n d / 2, \\quad b_n = b + (q + \\kappa \\|m\\|^2 - \\kappa_n \\|m_n\\|^2) / 2.

As an exponential family in ``(mu, tau)``: ``T = (tau, log tau, tau mu, tau ||mu||^2)``,
``eta = (-(b + kappa ||m||^2 / 2), a - 1 + d/2, kappa m, -kappa / 2)``,
``A = lgamma(a) - a log b - (d/2) log kappa`` and ``h = (2 pi)^(-d/2)``. The marginal likelihood
is ``exp(A_n - A) (2 pi)^(-n d / 2)`` and the predictive is an isotropic Student-t with ``2 a``
degrees of freedom, location ``m`` and scale ``b (kappa + 1) / (a kappa)``.

Example:
    >>> import torch
    >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 1.0, 2.0, 1.0)
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> post = prior.posterior(2, x.sum(0), (x * x).sum())
    >>> float(post.a)
    4.0
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import torch

from ._base import (
    LOG_2PI,
    NormalMeanFamily,
    as_data_tensor,
    build_unchecked,
    check_nonnegative_tensor,
    check_positive_tensor,
    coerce_params,
    student_t_log_density,
)
from .random import _normal, sample_gamma

__all__ = ["NormalGamma", "NormalGammaStats"]


class NormalGammaStats(NamedTuple):
    """Sufficient statistics of ``(mu, tau)`` (or their expectations, or the paired natural
    parameters): ``tau`` and ``log_tau`` of shape ``(...)``, ``tau_mu`` of shape ``(..., d)``,
    ``tau_mu_sq = tau ||mu||^2`` of shape ``(...)``."""

    tau: torch.Tensor
    log_tau: torch.Tensor
    tau_mu: torch.Tensor
    tau_mu_sq: torch.Tensor


@dataclass(frozen=True, eq=False)
class NormalGamma(NormalMeanFamily):
    """Normal-Gamma prior: ``tau ~ Gamma(a, b)`` (rate ``b``), ``mu | tau ~ N(m, I/(kappa tau))``.

    Args:
        loc: ``(..., d)`` prior mean ``m``.
        kappa: ``(...)`` prior pseudo-count of the mean (> 0).
        a: ``(...)`` Gamma shape (> 0).
        b: ``(...)`` Gamma rate (> 0).

    Leading axes broadcast into a batch of independent priors.

    Raises:
        ValueError: ``'kappa must be > 0'``, ``'a must be > 0'``, ``'b must be > 0'`` or a
            ``loc`` without a dimension axis.

    Example:
        >>> NormalGamma(torch.zeros(3, 2), 1.0, 1.0, 1.0).batch_shape
        torch.Size([3])
    """

    loc: torch.Tensor
    kappa: torch.Tensor
    a: torch.Tensor
    b: torch.Tensor

    event_dims = (0, 0, 1, 0)
    _stats_type = NormalGammaStats

    def __post_init__(self):
        p = coerce_params(loc=self.loc, kappa=self.kappa, a=self.a, b=self.b)
        self._check_loc(p["loc"])
        self._store_broadcast(p, loc=1)
        self.validate()

    def validate(self) -> NormalGamma:
        """Raise ``ValueError`` naming the offending hyperparameter; return ``self``."""
        check_positive_tensor(self.kappa, "kappa")
        check_positive_tensor(self.a, "a")
        check_positive_tensor(self.b, "b")
        return self

    def posterior(self, count, sum_x, sum_sq) -> NormalGamma:
        """Posterior from ``n`` points summarised by their count, sum and sum of squares.

        Args:
            count: ``(...)`` number (or total weight) of points.
            sum_x: ``(..., d)`` sum of the points.
            sum_sq: ``(...)`` sum of their squared norms ``sum_i ||x_i||^2``.

        Raises:
            ValueError: if the statistics are inconsistent (the updated rate is not positive).
        """
        n, s = self._count_and_sum(count, sum_x)
        q = check_nonnegative_tensor(as_data_tensor(sum_sq, "sum_sq", self.kappa), "sum_sq")
        kappa_n, loc_n = self._mean_update(n, s)
        sq = (self.loc * self.loc).sum(-1)
        b_n = self.b + 0.5 * (q + self.kappa * sq - kappa_n * (loc_n * loc_n).sum(-1))
        if b_n.numel() and not bool((b_n > 0).all()):
            raise ValueError("sum_sq is inconsistent with count and sum_x: the rate is not > 0")
        a_n = self.a + 0.5 * self.dim * n
        batch = b_n.shape
        return build_unchecked(
            NormalGamma,
            loc=loc_n.expand(batch + (self.dim,)),
            kappa=kappa_n.expand(batch),
            a=a_n.expand(batch),
            b=b_n,
        )

    def predictive_log_prob(self, x) -> torch.Tensor:
        """Log density of a new point under the isotropic Student-t predictive.

        Degrees of freedom ``2a``, location ``m``, scale matrix ``sigma^2 I`` with
        ``sigma^2 = b (kappa + 1) / (a kappa)``.

        Args:
            x: ``(..., d)`` points, broadcastable with the batch shape.
        """
        x = self._vector(x, "x")
        scale_sq = self.b * (self.kappa + 1) / (self.a * self.kappa)
        maha = ((x - self.loc) ** 2).sum(-1) / scale_sq
        return student_t_log_density(
            2 * self.a, self.dim, maha, 0.5 * self.dim * torch.log(scale_sq)
        )

    def mean(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(E[mu], E[tau]) = (m, a / b)``."""
        return self.loc, self.a / self.b

    def mode(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Joint mode ``(m, (a - 1 + d/2) / b)``; defined only when ``a > 1 - d/2``."""
        shape = self.a - 1 + 0.5 * self.dim
        if not bool((shape > 0).all()):
            raise ValueError(f"mode requires a > 1 - d/2 = {1 - 0.5 * self.dim:g}")
        return self.loc, shape / self.b

    def sample(
        self, generator: torch.Generator | None = None, sample_shape: tuple = ()
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Joint draws ``(mu, tau)`` of shapes ``S + batch + (d,)`` and ``S + batch``."""
        shape = torch.Size(sample_shape) + self.batch_shape
        tau = sample_gamma(self.a.expand(shape), generator) / self.b
        scale = torch.rsqrt(self.kappa * tau).unsqueeze(-1)
        mu = self.loc + scale * _normal(shape + (self.dim,), self.loc, generator)
        return mu, tau

    def observation_stats(self, count, sum_x, sum_sq) -> NormalGammaStats:
        """The statistics of ``n`` points in the coordinates of the natural parameters,
        ``(-sum_sq / 2, n d / 2, sum_x, -n / 2)``: ``posterior(count, sum_x, sum_sq)
        .natural_params() == natural_params() + observation_stats(count, sum_x, sum_sq)``.

        Args:
            count: ``(...)`` number (or total weight) of points.
            sum_x: ``(..., d)`` sum of the points.
            sum_sq: ``(...)`` sum of their squared norms.
        """
        n, s = self._count_and_sum(count, sum_x)
        q = check_nonnegative_tensor(as_data_tensor(sum_sq, "sum_sq", self.kappa), "sum_sq")
        return NormalGammaStats(-0.5 * q, 0.5 * self.dim * n, s, -0.5 * n)

    def natural_params(self) -> NormalGammaStats:
        """Natural parameters paired with :meth:`sufficient_stats`."""
        k = self.kappa
        return NormalGammaStats(
            tau=-(self.b + 0.5 * k * (self.loc * self.loc).sum(-1)),
            log_tau=self.a - 1 + 0.5 * self.dim,
            tau_mu=k.unsqueeze(-1) * self.loc,
            tau_mu_sq=-0.5 * k,
        )

    @classmethod
    def _from_natural_precision(cls, loc, kappa, eta_tau, eta_log_tau) -> NormalGamma:
        """The rest of :meth:`from_natural`: ``(a, b)`` from the natural parameters paired with
        ``tau`` and ``log tau``, given the mean's ``(m, kappa)``."""
        b = -eta_tau - 0.5 * kappa * (loc * loc).sum(-1)
        return cls(loc, kappa, eta_log_tau + 1 - 0.5 * loc.shape[-1], b)

    def _point(self, mu, tau):
        mu = self._vector(mu, "mu")
        tau = check_positive_tensor(as_data_tensor(tau, "tau", self.loc), "tau")
        return mu, tau

    def sufficient_stats(self, mu, tau) -> NormalGammaStats:
        """``T(mu, tau) = (tau, log tau, tau mu, tau ||mu||^2)``."""
        mu, tau = self._point(mu, tau)
        return NormalGammaStats(
            tau, torch.log(tau), tau.unsqueeze(-1) * mu, tau * (mu * mu).sum(-1)
        )

    def expected_stats(self) -> NormalGammaStats:
        """``E[tau] = a/b``, ``E[log tau] = psi(a) - log b``, ``E[tau mu] = (a/b) m``,
        ``E[tau ||mu||^2] = (a/b) ||m||^2 + d / kappa``."""
        e_tau = self.a / self.b
        return NormalGammaStats(
            tau=e_tau,
            log_tau=torch.digamma(self.a) - torch.log(self.b),
            tau_mu=e_tau.unsqueeze(-1) * self.loc,
            tau_mu_sq=e_tau * (self.loc * self.loc).sum(-1) + self.dim / self.kappa,
        )

    def log_normalizer(self) -> torch.Tensor:
        """``A = lgamma(a) - a log b - (d/2) log kappa``."""
        return (
            torch.lgamma(self.a)
            - self.a * torch.log(self.b)
            - 0.5 * self.dim * torch.log(self.kappa)
        )

    def log_prob(self, mu, tau) -> torch.Tensor:
        """``log N(mu | m, I/(kappa tau)) + log Gamma(tau | a, b)``."""
        mu, tau = self._point(mu, tau)
        log_tau = torch.log(tau)
        d = self.dim
        gauss = 0.5 * d * (torch.log(self.kappa) + log_tau - LOG_2PI) - 0.5 * self.kappa * tau * (
            (mu - self.loc) ** 2
        ).sum(-1)
        gamma = (
            self.a * torch.log(self.b)
            - torch.lgamma(self.a)
            + (self.a - 1) * log_tau
            - self.b * tau
        )
        return gauss + gamma
