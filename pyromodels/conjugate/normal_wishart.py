"""Normal-Wishart prior over a mean vector and a precision matrix (Normal-inverse-Wishart family).

Model, parameterised by the precision ``Lambda``:

.. math::

    \\Lambda \\sim \\mathrm{Wishart}(\\nu, W), \\qquad
    \\mu \\mid \\Lambda \\sim N(m, (\\kappa \\Lambda)^{-1}), \\qquad
    x_i \\mid \\mu, \\Lambda \\sim N(\\mu, \\Lambda^{-1}),

with ``E[Lambda] = nu W``; equivalently ``Sigma = Lambda^{-1} ~ InvWishart(nu, W^{-1})``. From
``n``, ``s = sum_i x_i`` and ``S = sum_i x_i x_i^T`` the posterior is

.. math::

    \\kappa_n = \\kappa + n, \\quad m_n = (\\kappa m + s) / \\kappa_n, \\quad \\nu_n = \\nu + n,
    \\quad W_n^{-1} = W^{-1} + S + \\kappa m m^T - \\kappa_n m_n m_n^T.

As an exponential family in ``(mu, Lambda)``: ``T = (Lambda, log|Lambda|, Lambda mu,
mu^T Lambda mu)``, ``eta = (-(W^{-1} + kappa m m^T) / 2, (nu - d) / 2, kappa m, -kappa / 2)``,
``A = (nu d / 2) log 2 + (nu / 2) log|W| + log Gamma_d(nu / 2) - (d / 2) log kappa`` and
``h = (2 pi)^(-d/2)``. The marginal likelihood is ``exp(A_n - A) (2 pi)^(-n d / 2)`` and the
predictive is a multivariate Student-t with ``nu - d + 1`` degrees of freedom, location ``m``
and shape ``(kappa + 1) / (kappa (nu - d + 1)) W^{-1}``.

Example:
    >>> import torch
    >>> eye = torch.eye(2, dtype=torch.float64)
    >>> prior = NormalWishart(torch.zeros(2, dtype=torch.float64), 1.0, 3.0, eye)
    >>> x = torch.tensor([[1.0, 0.0], [0.0, 1.0]], dtype=torch.float64)
    >>> post = prior.posterior(2, x.sum(0), x.T @ x)
    >>> float(post.nu)
    5.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from ._base import (
    LOG_2PI,
    NormalMeanFamily,
    as_data_tensor,
    build_unchecked,
    check_generator,
    check_last_dim,
    check_positive_tensor,
    coerce_params,
    multidigamma,
    spd_cholesky,
    student_t_log_density,
)
from .random import _bartlett_factor, _normal

__all__ = ["NormalWishart", "NormalWishartStats"]

_LOG_2 = math.log(2.0)


class NormalWishartStats(NamedTuple):
    """Sufficient statistics of ``(mu, Lambda)`` (or their expectations, or the paired natural
    parameters): ``precision`` ``(..., d, d)``, ``log_det_precision`` ``(...)``,
    ``precision_mean = Lambda mu`` ``(..., d)``, ``mean_precision_mean = mu^T Lambda mu``
    ``(...)``."""

    precision: torch.Tensor
    log_det_precision: torch.Tensor
    precision_mean: torch.Tensor
    mean_precision_mean: torch.Tensor


def _half_log_det(tril: torch.Tensor) -> torch.Tensor:
    return torch.log(tril.diagonal(dim1=-2, dim2=-1)).sum(-1)


def _quad(matrix: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return (v * (matrix @ v.unsqueeze(-1)).squeeze(-1)).sum(-1)


@dataclass(frozen=True, eq=False)
class NormalWishart(NormalMeanFamily):
    """Normal-Wishart prior: ``Lambda ~ Wishart(nu, W)``, ``mu | Lambda ~ N(m, (kappa Lambda)^-1)``.

    Args:
        loc: ``(..., d)`` prior mean ``m``.
        kappa: ``(...)`` prior pseudo-count of the mean (> 0).
        nu: ``(...)`` Wishart degrees of freedom (> d - 1).
        scale: ``(..., d, d)`` symmetric positive definite Wishart scale ``W``.

    Leading axes broadcast into a batch of independent priors. The Cholesky factor of ``W`` is
    kept as ``scale_tril``. Use :meth:`from_inverse_scale` to give ``W^{-1}`` (the
    inverse-Wishart scale of ``Sigma``) instead.

    Raises:
        ValueError: ``'kappa must be > 0'``, ``'nu must be > d - 1'``,
            ``'scale (W) must be symmetric positive definite'`` or mismatched shapes.

    Example:
        >>> eye = torch.eye(3, dtype=torch.float64)
        >>> NormalWishart(torch.zeros(4, 3, dtype=torch.float64), 0.1, 5.0, eye).batch_shape
        torch.Size([4])
    """

    loc: torch.Tensor
    kappa: torch.Tensor
    nu: torch.Tensor
    scale: torch.Tensor
    scale_tril: torch.Tensor = field(init=False, repr=False)

    event_dims = (2, 0, 1, 0)
    _stats_type = NormalWishartStats
    #: the names of the two parts of a :meth:`sample` draw
    sample_fields = ("mean", "precision")

    def __post_init__(self):
        p = coerce_params(loc=self.loc, kappa=self.kappa, nu=self.nu, scale=self.scale)
        d = self._check_loc(p["loc"]).shape[-1]
        check_last_dim(p["scale"], "scale (W)", d, "d x d, matching loc", trailing=2)
        self._store_broadcast(p, loc=1, scale=2)
        self.validate()

    def validate(self) -> NormalWishart:
        """Raise ``ValueError`` naming the offending hyperparameter; return ``self``.

        Also caches the Cholesky factor ``scale_tril`` of ``W`` found while checking it.
        """
        d = self.dim
        check_positive_tensor(self.kappa, "kappa")
        check_positive_tensor(self.nu, "nu", bound=d - 1, label=f"d - 1 = {d - 1}")
        object.__setattr__(self, "scale_tril", spd_cholesky(self.scale, "scale (W)"))
        return self

    @classmethod
    def from_inverse_scale(cls, loc, kappa, nu, inv_scale) -> NormalWishart:
        """The prior with ``W = inv_scale^{-1}``, i.e. ``Sigma ~ InvWishart(nu, inv_scale)``."""
        inv = coerce_params(inv_scale=inv_scale)["inv_scale"]
        scale = torch.cholesky_inverse(spd_cholesky(inv, "inv_scale"))
        return cls(loc, kappa, nu, 0.5 * (scale + scale.mT))

    def inv_scale(self) -> torch.Tensor:
        """``W^{-1}``, shape ``(..., d, d)``."""
        return torch.cholesky_inverse(self.scale_tril)

    def posterior(self, count, sum_x, sum_xx) -> NormalWishart:
        """Posterior from ``n`` points summarised by their count, sum and sum of outer products.

        Args:
            count: ``(...)`` number (or total weight) of points.
            sum_x: ``(..., d)`` sum of the points.
            sum_xx: ``(..., d, d)`` sum of ``x x^T``.

        Raises:
            ValueError: if the statistics are inconsistent (``W_n^{-1}`` is not positive
                definite).
        """
        d = self.dim
        n, s = self._count_and_sum(count, sum_x)
        ss = as_data_tensor(sum_xx, "sum_xx", self.loc, min_ndim=2)
        check_last_dim(ss, "sum_xx", d, "d x d", trailing=2)
        kappa_n, loc_n = self._mean_update(n, s)
        inv_n = (
            self.inv_scale()
            + ss
            + self.kappa[..., None, None] * self.loc.unsqueeze(-1) * self.loc.unsqueeze(-2)
            - kappa_n[..., None, None] * loc_n.unsqueeze(-1) * loc_n.unsqueeze(-2)
        )
        inv_tril, info = torch.linalg.cholesky_ex(0.5 * (inv_n + inv_n.mT))
        if bool((info != 0).any()):
            raise ValueError(
                "sum_xx is inconsistent with count and sum_x: the updated inverse scale is not "
                "positive definite"
            )
        scale_n = torch.cholesky_inverse(inv_tril)
        scale_n = 0.5 * (scale_n + scale_n.mT)
        batch = scale_n.shape[:-2]
        return build_unchecked(
            NormalWishart,
            loc=loc_n.expand(batch + (d,)),
            kappa=kappa_n.expand(batch),
            nu=(self.nu + n).expand(batch),
            scale=scale_n,
            scale_tril=torch.linalg.cholesky(scale_n),
        )

    def observation_stats(self, count, sum_x, sum_xx) -> NormalWishartStats:
        """The statistics of ``n`` Gaussian points in the coordinates of the natural parameters.

        ``log N(x | mu, Lambda^{-1}) = <T(mu, Lambda), (-x x^T / 2, 1 / 2, x, -1 / 2)> -
        (d / 2) log 2 pi``, so the points contribute ``(-sum_xx / 2, count / 2, sum_x,
        -count / 2)`` and ``posterior(count, sum_x, sum_xx).natural_params() ==
        natural_params() + observation_stats(count, sum_x, sum_xx)``. With soft counts these
        are the expected statistics a natural-gradient step adds (differentiable in its
        arguments).

        Args:
            count: ``(...)`` number (or total weight) of points.
            sum_x: ``(..., d)`` sum of the points.
            sum_xx: ``(..., d, d)`` sum of ``x x^T``.
        """
        n, s = self._count_and_sum(count, sum_x)
        ss = as_data_tensor(sum_xx, "sum_xx", self.loc, min_ndim=2)
        check_last_dim(ss, "sum_xx", self.dim, "d x d", trailing=2)
        return NormalWishartStats(-0.5 * ss, 0.5 * n, s, -0.5 * n)

    def predictive_log_prob(self, x) -> torch.Tensor:
        """Log density of a new point under the multivariate Student-t predictive.

        Degrees of freedom ``nu' = nu - d + 1``, location ``m``, shape
        ``Sigma = (kappa + 1) / (kappa nu') W^{-1}``.

        Args:
            x: ``(..., d)`` points, broadcastable with the batch shape.
        """
        d = self.dim
        x = self._vector(x, "x")
        df = self.nu - d + 1
        ratio = (self.kappa + 1) / (self.kappa * df)
        y = (self.scale_tril.mT @ (x - self.loc).unsqueeze(-1)).squeeze(-1)
        maha = (y * y).sum(-1) / ratio
        half_log_det = 0.5 * d * torch.log(ratio) - _half_log_det(self.scale_tril)
        return student_t_log_density(df, d, maha, half_log_det)

    def mean(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(E[mu], E[Lambda]) = (m, nu W)``."""
        return self.loc, self.nu[..., None, None] * self.scale

    def mode(self) -> tuple[torch.Tensor, torch.Tensor]:
        """Joint mode in precision coordinates, ``(m, (nu - d) W)``; requires ``nu > d``."""
        if not bool((self.nu > self.dim).all()):
            raise ValueError(f"mode requires nu > d = {self.dim}")
        return self.loc, (self.nu - self.dim)[..., None, None] * self.scale

    def sample(
        self, generator: torch.Generator | None = None, sample_shape: tuple = ()
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Joint draws ``(mu, Lambda)`` of shapes ``S + batch + (d,)`` and ``S + batch + (d, d)``.

        ``Lambda = F F^T`` from the Bartlett factor ``F``, then ``mu = m + F^{-T} z / sqrt(kappa)``
        with ``z ~ N(0, I)``, whose covariance is ``(kappa Lambda)^{-1}``.
        """
        check_generator(generator, self.device)
        shape = torch.Size(sample_shape) + self.batch_shape
        with torch.no_grad():
            factor = _bartlett_factor(self.nu.expand(shape), self.scale_tril, generator)
            z = _normal(shape + (self.dim, 1), self.loc, generator)
            offset = torch.linalg.solve_triangular(factor.mT, z, upper=True).squeeze(-1)
            mu = self.loc + offset * torch.rsqrt(self.kappa).unsqueeze(-1)
            return mu, factor @ factor.mT

    def natural_params(self) -> NormalWishartStats:
        """Natural parameters paired with :meth:`sufficient_stats`."""
        k = self.kappa
        outer = self.loc.unsqueeze(-1) * self.loc.unsqueeze(-2)
        return NormalWishartStats(
            precision=-0.5 * (self.inv_scale() + k[..., None, None] * outer),
            log_det_precision=0.5 * (self.nu - self.dim),
            precision_mean=k.unsqueeze(-1) * self.loc,
            mean_precision_mean=-0.5 * k,
        )

    @classmethod
    def _from_natural_precision(cls, loc, kappa, eta_precision, eta_log_det) -> NormalWishart:
        """The rest of :meth:`from_natural`: ``(nu, W)`` from the natural parameters paired with
        ``Lambda`` and ``log|Lambda|``, given the mean's ``(m, kappa)``."""
        inv = -2 * eta_precision - kappa[..., None, None] * loc.unsqueeze(-1) * loc.unsqueeze(-2)
        nu = 2 * eta_log_det + loc.shape[-1]
        return cls.from_inverse_scale(loc, kappa, nu, 0.5 * (inv + inv.mT))

    def _point(self, mu, precision):
        d = self.dim
        mu = self._vector(mu, "mu")
        lam = as_data_tensor(precision, "precision", self.loc, min_ndim=2)
        check_last_dim(lam, "precision", d, "d x d", trailing=2)
        return mu, lam, spd_cholesky(lam, "precision")

    def sufficient_stats(self, mu, precision) -> NormalWishartStats:
        """``T(mu, Lambda) = (Lambda, log|Lambda|, Lambda mu, mu^T Lambda mu)``."""
        mu, lam, tril = self._point(mu, precision)
        lam_mu = (lam @ mu.unsqueeze(-1)).squeeze(-1)
        return NormalWishartStats(lam, 2 * _half_log_det(tril), lam_mu, (mu * lam_mu).sum(-1))

    def expected_stats(self) -> NormalWishartStats:
        """``E[Lambda] = nu W``, ``E[log|Lambda|] = psi_d(nu/2) + d log 2 + log|W|``,
        ``E[Lambda mu] = nu W m``, ``E[mu^T Lambda mu] = d / kappa + nu m^T W m``."""
        d, nu = self.dim, self.nu
        e_lam = nu[..., None, None] * self.scale
        e_lam_mu = (e_lam @ self.loc.unsqueeze(-1)).squeeze(-1)
        return NormalWishartStats(
            precision=e_lam,
            log_det_precision=multidigamma(nu / 2, d)
            + d * _LOG_2
            + 2 * _half_log_det(self.scale_tril),
            precision_mean=e_lam_mu,
            mean_precision_mean=d / self.kappa + (self.loc * e_lam_mu).sum(-1),
        )

    def log_normalizer(self) -> torch.Tensor:
        """``A = (nu d / 2) log 2 + (nu / 2) log|W| + log Gamma_d(nu / 2) - (d / 2) log kappa``."""
        d, nu = self.dim, self.nu
        return (
            0.5 * nu * d * _LOG_2
            + nu * _half_log_det(self.scale_tril)
            + torch.mvlgamma(nu / 2, d)
            - 0.5 * d * torch.log(self.kappa)
        )

    def log_prob(self, mu, precision) -> torch.Tensor:
        """``log Wishart(Lambda | nu, W) + log N(mu | m, (kappa Lambda)^{-1})``."""
        mu, lam, tril = self._point(mu, precision)
        d = self.dim
        trace = torch.cholesky_solve(lam, self.scale_tril).diagonal(dim1=-2, dim2=-1).sum(-1)
        return (
            (self.nu - d) * _half_log_det(tril)
            - 0.5 * trace
            - 0.5 * self.kappa * _quad(lam, mu - self.loc)
            - self.log_normalizer()
            - 0.5 * d * LOG_2PI
        )
