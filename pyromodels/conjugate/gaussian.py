"""A multivariate Gaussian in natural parameters ``(h, J)``.

Density, with base measure 1 on ``R^d``:

.. math::

    q(x) = \\exp\\{\\langle h, x \\rangle + \\langle J, x x^T \\rangle - A(h, J)\\}, \\qquad
    A(h, J) = \\tfrac12 h^T P^{-1} h - \\tfrac12 \\log|P| + \\tfrac{d}{2} \\log 2\\pi,

with precision ``P = -2 J`` (symmetric positive definite), mean ``P^{-1} h`` and covariance
``P^{-1}``. Sufficient statistics ``T(x) = (x, x x^T)``; expected statistics
``(m, Sigma + m m^T)``. This is the form in which a recognition network's potential and a
mixture's expected component statistics add up (the local ``x`` update of a structured
variational autoencoder); everything goes through the lower Cholesky factor ``L`` of ``P``, so
no covariance is ever inverted. The ``(d / 2) log 2 pi`` term is part of ``A`` here: the
density is a proper one and its log-probabilities match ``torch.distributions``.

Example:
    >>> import torch
    >>> q = GaussianNatural(torch.tensor([1.0, 0.0], dtype=torch.float64),
    ...                     -0.5 * torch.eye(2, dtype=torch.float64))
    >>> q.mean()
    tensor([1., 0.], dtype=torch.float64)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import torch

from ._base import (
    LOG_2PI,
    ConjugateFamily,
    as_data_tensor,
    build_unchecked,
    check_generator,
    check_last_dim,
    coerce_params,
    spd_cholesky,
)
from .random import _normal

__all__ = ["GaussianNatural", "GaussianStats"]


class GaussianStats(NamedTuple):
    """Statistics of a Gaussian (or the paired natural parameters): ``linear`` ``(..., d)``
    pairs with ``x``, ``quadratic`` ``(..., d, d)`` with ``x x^T``."""

    linear: torch.Tensor
    quadratic: torch.Tensor


def _solve(tril: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """``P^{-1} v`` for ``P = L L^T`` and vectors ``v`` ``(..., d)``."""
    return torch.cholesky_solve(v.unsqueeze(-1), tril).squeeze(-1)


@dataclass(frozen=True, eq=False)
class GaussianNatural(ConjugateFamily):
    """Gaussian ``q(x) ∝ exp(<h, x> + <J, x x^T>)`` with precision ``P = -2 J``.

    Args:
        h: ``(..., d)`` precision-weighted mean ``P m``.
        J: ``(..., d, d)`` symmetric, with ``-2 J`` positive definite.

    Leading axes broadcast into a batch of independent Gaussians. The lower Cholesky factor of
    ``P`` is kept as ``precision_tril``. All methods are differentiable in ``h`` and ``J``.

    Raises:
        ValueError: ``'-2 J (the precision) must be symmetric positive definite'`` or
            mismatched shapes.

    Example:
        >>> P = torch.tensor([[2.0, 0.5], [0.5, 1.0]], dtype=torch.float64)
        >>> q = GaussianNatural.from_moments(torch.zeros(2, dtype=torch.float64), P.inverse())
        >>> torch.allclose(q.precision(), P)
        True
    """

    h: torch.Tensor
    J: torch.Tensor
    precision_tril: torch.Tensor = field(init=False, repr=False)

    event_dims = (1, 2)
    _anchor = "h"
    _anchor_event_ndim = 1

    def __post_init__(self):
        p = coerce_params(h=self.h, J=self.J)
        if p["h"].dim() < 1:
            raise ValueError(f"h must have shape (..., d), got shape {tuple(p['h'].shape)}")
        d = p["h"].shape[-1]
        check_last_dim(p["J"], "J", d, "d x d, matching h", trailing=2)
        self._store_broadcast(p, h=1, J=2)
        self.validate()

    def validate(self) -> GaussianNatural:
        """Raise ``ValueError`` unless ``-2 J`` is symmetric positive definite; cache its
        Cholesky factor ``precision_tril``; return ``self``."""
        tril = spd_cholesky(-2 * self.J, "-2 J (the precision)")
        object.__setattr__(self, "precision_tril", tril)
        return self

    @classmethod
    def from_moments(cls, loc, covariance) -> GaussianNatural:
        """The Gaussian with mean ``loc`` ``(..., d)`` and covariance ``(..., d, d)``."""
        p = coerce_params(loc=loc, covariance=covariance)
        tril = spd_cholesky(p["covariance"], "covariance")
        precision = torch.cholesky_inverse(tril)
        precision = 0.5 * (precision + precision.mT)
        h = (precision @ p["loc"].unsqueeze(-1)).squeeze(-1)
        return cls(h, -0.5 * precision)

    @classmethod
    def from_factored(cls, h: torch.Tensor, precision: torch.Tensor,
                      precision_tril: torch.Tensor) -> GaussianNatural:
        """The Gaussian with ``h`` ``(..., d)`` and precision ``P`` ``(..., d, d)`` (same batch
        shape) whose lower Cholesky factor ``precision_tril`` the caller has already computed
        and checked (``torch.linalg.cholesky_ex`` with its ``info`` all zero), so nothing is
        factored or checked again: for inner loops that build many Gaussians. Differentiable
        through the three tensors as given."""
        return build_unchecked(cls, h=h, J=-0.5 * precision, precision_tril=precision_tril)

    @property
    def dim(self) -> int:
        """Dimension ``d``."""
        return self.event_size

    def precision(self) -> torch.Tensor:
        """``P = -2 J``, shape ``(..., d, d)``."""
        return -2 * self.J

    def mean(self) -> torch.Tensor:
        """``m = P^{-1} h``, shape ``(..., d)``."""
        return _solve(self.precision_tril, self.h)

    def covariance(self) -> torch.Tensor:
        """``Sigma = P^{-1}``, shape ``(..., d, d)``."""
        return torch.cholesky_inverse(self.precision_tril)

    def natural_params(self) -> GaussianStats:
        """``(h, J)``."""
        return GaussianStats(self.h, self.J)

    @classmethod
    def from_natural(cls, eta) -> GaussianNatural:
        """The Gaussian with natural parameters ``eta = (h, J)`` (a :class:`GaussianStats`
        or a pair)."""
        h, J = eta
        return cls(h, J)

    def sufficient_stats(self, x) -> GaussianStats:
        """``T(x) = (x, x x^T)`` for points ``x`` ``(..., d)``."""
        x = check_last_dim(as_data_tensor(x, "x", self.h, min_ndim=1), "x", self.dim, "d")
        return GaussianStats(x, x.unsqueeze(-1) * x.unsqueeze(-2))

    def expected_stats(self) -> GaussianStats:
        """``(E[x], E[x x^T]) = (m, Sigma + m m^T)``."""
        m = self.mean()
        return GaussianStats(m, self.covariance() + m.unsqueeze(-1) * m.unsqueeze(-2))

    def half_log_det_precision(self) -> torch.Tensor:
        """``log|P| / 2``, shape ``batch_shape``."""
        return torch.log(self.precision_tril.diagonal(dim1=-2, dim2=-1)).sum(-1)

    def log_normalizer(self) -> torch.Tensor:
        """``A = h^T P^{-1} h / 2 - log|P| / 2 + (d / 2) log 2 pi``."""
        return (
            0.5 * (self.h * self.mean()).sum(-1)
            - self.half_log_det_precision()
            + 0.5 * self.dim * LOG_2PI
        )

    def entropy(self) -> torch.Tensor:
        """``H[q] = A - <eta, E[T]> = (d / 2)(1 + log 2 pi) - log|P| / 2``."""
        return 0.5 * self.dim * (1 + LOG_2PI) - self.half_log_det_precision()

    def log_prob(self, x) -> torch.Tensor:
        """``log q(x)`` for points ``x`` ``(..., d)`` broadcastable with the batch."""
        t = self.sufficient_stats(x)
        quad = (t.quadratic * self.J).sum((-2, -1))
        return (t.linear * self.h).sum(-1) + quad - self.log_normalizer()

    def rsample(
        self, generator: torch.Generator | None = None, sample_shape: tuple = ()
    ) -> torch.Tensor:
        """Reparameterised draws ``x = m + L^{-T} z`` with ``z ~ N(0, I)`` and ``P = L L^T``,
        shape ``sample_shape + batch_shape + (d,)``; gradients flow to ``h`` and ``J``."""
        check_generator(generator, self.device)
        shape = torch.Size(sample_shape) + self.batch_shape
        with torch.no_grad():
            z = _normal(shape + (self.dim, 1), self.h, generator)
        tril = self.precision_tril.expand(shape + (self.dim, self.dim))
        offset = torch.linalg.solve_triangular(tril.mT, z, upper=True).squeeze(-1)
        return self.mean() + offset

    def sample(
        self, generator: torch.Generator | None = None, sample_shape: tuple = ()
    ) -> torch.Tensor:
        """Draws as :meth:`rsample`, without gradients."""
        with torch.no_grad():
            return self.rsample(generator, sample_shape)
