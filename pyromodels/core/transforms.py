"""A bijection from unconstrained vectors to positive-definite matrices.

torch registers no transform for ``constraints.positive_definite``, so NUTS and autoguides cannot
handle a ``Wishart`` site out of the box. :class:`VechToPositiveDefinite` maps a vector of length
``d (d + 1) / 2`` to the lower-triangular ``L`` (exponentiated diagonal, row-major lower
triangle) and returns ``L L^T``. It is bijective, so no unconstrained direction is left
without a density (which a full-matrix parameterisation of only its lower triangle would).

Log-Jacobian: with ``L_ii = exp(u_i)``, ``|d(LL^T)/dL| = 2^d prod_i L_ii^(d - i + 1)``
(``i`` from 1) and ``|dL/du| = prod_i L_ii``, so
``log|J| = d log 2 + sum_i (d - i + 2) log L_ii``.
"""

from __future__ import annotations

import math

import torch
from torch.distributions import constraints
from torch.distributions.transforms import Transform

__all__ = ["VechToPositiveDefinite", "register_positive_definite_transform"]


def _dim_from_vech(n: int) -> int:
    d = int((math.isqrt(8 * n + 1) - 1) // 2)
    if d * (d + 1) // 2 != n:
        raise ValueError(f"a vech vector must have length d(d+1)/2, got {n}")
    return d


class VechToPositiveDefinite(Transform):
    """``u`` (length ``d(d+1)/2``) -> ``L L^T`` with ``L`` lower-triangular, ``diag(L) = exp(.)``."""

    domain = constraints.independent(constraints.real, 1)
    codomain = constraints.positive_definite
    bijective = True

    def __eq__(self, other):
        return isinstance(other, VechToPositiveDefinite)

    def __hash__(self):
        return hash(type(self))

    @staticmethod
    def _lower(u: torch.Tensor) -> torch.Tensor:
        d = _dim_from_vech(u.shape[-1])
        rows, cols = torch.tril_indices(d, d, device=u.device)
        L = u.new_zeros(u.shape[:-1] + (d, d))
        L[..., rows, cols] = u
        diag = torch.diagonal(L, dim1=-2, dim2=-1)
        return L - torch.diag_embed(diag) + torch.diag_embed(diag.exp())

    def _call(self, u):
        L = self._lower(u)
        m = L @ L.transpose(-1, -2)
        return 0.5 * (m + m.transpose(-1, -2))

    def _inverse(self, m):
        L = torch.linalg.cholesky(m)
        d = m.shape[-1]
        diag = torch.diagonal(L, dim1=-2, dim2=-1)
        L = L - torch.diag_embed(diag) + torch.diag_embed(diag.log())
        rows, cols = torch.tril_indices(d, d, device=m.device)
        return L[..., rows, cols]

    def log_abs_det_jacobian(self, u, m):
        d = m.shape[-1]
        rows, cols = torch.tril_indices(d, d, device=u.device)
        log_diag = u[..., rows == cols]
        powers = torch.arange(d + 1, 1, -1, dtype=u.dtype, device=u.device)
        return d * math.log(2.0) + (powers * log_diag).sum(-1)

    def forward_shape(self, shape):
        d = _dim_from_vech(shape[-1])
        return tuple(shape[:-1]) + (d, d)

    def inverse_shape(self, shape):
        if len(shape) < 2 or shape[-1] != shape[-2]:
            raise ValueError(f"expected square matrices, got shape {tuple(shape)}")
        d = shape[-1]
        return tuple(shape[:-2]) + (d * (d + 1) // 2,)


def register_positive_definite_transform() -> None:
    """Register :class:`VechToPositiveDefinite` for ``positive_definite`` if nothing is registered."""
    from torch.distributions import biject_to, transform_to

    for registry in (biject_to, transform_to):
        try:
            registry(constraints.positive_definite)
        except NotImplementedError:
            registry.register(constraints.positive_definite)(lambda c: VechToPositiveDefinite())


# every model module imports this one (through pyromodels.core.model), so the transform is
# registered before any fit, as it was when pyromodels.core imported every engine at once
register_positive_definite_transform()
