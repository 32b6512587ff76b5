"""The exponential families a conjugate update reads, and how each is read.

Each :class:`Family` gives the sufficient statistics ``T(x)`` of a prior, the values of the
site at which the model's log density is scored to read the coefficients ``c`` of
``log p(x | rest) = c . T(x) + const`` (see :mod:`.exponential`), and the posterior those
coefficients define. The Wishart (of a precision matrix) has ``T = (log |L|, L_ij for
i <= j)``: its log conditional ``a log |L| + sum_{i<=j} C_ij L_ij`` is the
Wishart(``2 a + d + 1``, ``S^-1``) with ``S_ii = -2 C_ii`` and ``S_ij = S_ji = -C_ij``; its
derivatives are read along the symmetric directions ``E_ij + E_ji`` only, which mean the same
whichever triangle of the matrix the program reads.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, replace

import pyro.distributions as dist
import torch

from ..conjugate import sample_beta, sample_dirichlet, sample_gamma, sample_normal, sample_wishart

__all__ = ["FAMILIES", "Family", "family_of", "unwrap", "directions"]


@dataclass(frozen=True)
class Family:
    """An exponential family as read off a log density.

    Attributes:
        name: the prior's distribution name.
        features: ``T(x)``: ``(..., *event) -> (..., p)``.
        points: ``(event) -> (p + 2, *event)`` values of the site in its support: ``p + 1`` for
            the solve and the last for the linearity check.
        params: ``c (..., p) -> {name: tensor}`` the posterior's parameters.
        valid: ``params -> bool tensor`` whether they define a proper distribution.
        make: ``params -> torch distribution`` of the posterior (for the check).
        sample: ``(params, generator) -> draw``.
        simplex: the site lives on the simplex, where only derivatives along it are meaningful.
        symmetric: the site is a symmetric matrix, whose derivatives are read along the
            symmetric directions only.
    """

    name: str
    features: object
    points: object
    params: object
    valid: object
    make: object
    sample: object
    simplex: bool = False
    symmetric: bool = False


def _scalar_points(*xs):
    return lambda event, ref: torch.tensor(xs, dtype=torch.float64, device=ref.device)


def _dirichlet_points(event, ref):
    d = event[-1]
    eye = torch.eye(d, dtype=torch.float64, device=ref.device)
    uniform = torch.full((1, d), 1.0 / d, dtype=torch.float64, device=ref.device)
    check = torch.arange(1, d + 1, dtype=torch.float64, device=ref.device)
    return torch.cat([uniform, 0.5 * uniform + 0.5 * eye, (check / check.sum())[None]])


def _mvn_points(event, ref):
    """``0``, ``+-e_i`` and ``e_i + e_j`` (``i < j``) identify the constant, the linear and the
    quadratic coefficients; the last row, a generic point, is the check."""
    d = event[-1]
    eye = torch.eye(d, dtype=torch.float64, device=ref.device)
    i, j = torch.triu_indices(d, d, offset=1, device=ref.device)
    check = torch.linspace(-0.6, 0.9, d, dtype=torch.float64, device=ref.device)
    return torch.cat([torch.zeros(1, d, dtype=torch.float64, device=ref.device), eye, -eye,
                      eye[i] + eye[j], check[None]])


def _mvn_features(x):
    i, j = torch.triu_indices(x.shape[-1], x.shape[-1], device=x.device)
    return torch.cat([x, x[..., i] * x[..., j]], -1)


def _negative_symmetric(upper_coef, d):
    """``(M, L, bad)``: ``M = -(C + C^T)`` from the coefficients of the upper triangle ``C``
    (``(..., d (d + 1) / 2)``, row-major), its Cholesky factor ``L`` (the identity where ``M``
    is not positive definite) and where it is not (``bad``)."""
    i, j = torch.triu_indices(d, d, device=upper_coef.device)
    upper = upper_coef.new_zeros(upper_coef.shape[:-1] + (d, d))
    upper[..., i, j] = upper_coef
    matrix = -(upper + upper.transpose(-1, -2))
    tril, info = torch.linalg.cholesky_ex(matrix)
    bad = info != 0
    eye = torch.eye(d, dtype=upper_coef.dtype, device=upper_coef.device)
    return matrix, torch.where(bad[..., None, None], eye, tril), bad


def _mvn_params(c):
    """``c = (c_x, c_xx)``: log density ``c_x . x + sum_{i <= j} c_ij x_i x_j`` gives the
    precision ``P_ii = -2 c_ii``, ``P_ij = -c_ij`` and the mean ``P^-1 c_x``; a precision that is
    not positive definite gives a NaN mean (refused by ``valid``)."""
    d = int(round((-3 + (9 + 8 * int(c.shape[-1])) ** 0.5) / 2))  # an int, also while traced
    precision, tril, bad = _negative_symmetric(c[..., d:], d)
    loc = torch.cholesky_solve(c[..., :d, None], tril)[..., 0]
    loc = torch.where(bad[..., None], torch.full_like(loc, float("nan")), loc)
    return {"loc": loc, "precision_matrix": precision}


def _sample_mvn(p, g):
    """``loc + L^-T z`` with ``P = L L^T``: covariance ``P^-1``."""
    tril = torch.linalg.cholesky(p["precision_matrix"])
    z = torch.randn(p["loc"].shape, dtype=p["loc"].dtype, device=p["loc"].device, generator=g)
    return p["loc"] + torch.linalg.solve_triangular(tril.transpose(-1, -2), z[..., None], upper=True)[..., 0]


def _wishart_points(event, ref):
    """``I``, ``3 I``, ``I`` with one diagonal entry doubled (each), ``I`` with one
    off-diagonal pair at ``1/2`` (each): ``2 + d (d + 1) / 2`` points whose statistics are
    affinely independent (with ``2 I`` they would not be: its log-determinant is the sum of
    the doubled diagonals'); the last row, a generic positive definite matrix, is the check."""
    d = event[-1]
    eye = torch.eye(d, dtype=torch.float64, device=ref.device)
    i, j = torch.triu_indices(d, d, offset=1, device=ref.device)
    diag = eye + torch.diag_embed(eye)                     # (d, d, d): I + E_kk
    off = eye.expand(len(i), d, d).clone()
    off[torch.arange(len(i)), i, j] = 0.5
    off[torch.arange(len(i)), j, i] = 0.5
    check = torch.diag(torch.linspace(0.6, 1.4, d, dtype=torch.float64, device=ref.device)) \
        + 0.2 * (torch.ones(d, d, dtype=torch.float64, device=ref.device) - eye)
    return torch.cat([eye[None], 3 * eye[None], diag, off, check[None]])


def _wishart_features(x):
    i, j = torch.triu_indices(x.shape[-1], x.shape[-1], device=x.device)
    return torch.cat([torch.logdet(x)[..., None], x[..., i, j]], -1)


def _wishart_params(c):
    """``c = (a, C)``: ``df = 2 a + d + 1`` and ``S = W^-1`` from the upper triangle ``C``; an
    ``S`` that is not positive definite gives a NaN scale (refused by ``valid``)."""
    d = int(round((-1 + (1 + 8 * (int(c.shape[-1]) - 1)) ** 0.5) / 2))  # an int, also while traced
    _, tril, bad = _negative_symmetric(c[..., 1:], d)
    scale_tril = torch.linalg.cholesky(torch.cholesky_inverse(tril))   # of W = S^-1
    scale_tril = torch.where(bad[..., None, None], torch.full_like(scale_tril, float("nan")), scale_tril)
    return {"df": 2 * c[..., 0] + d + 1, "scale_tril": scale_tril}


def _wishart_valid(p):
    d = p["scale_tril"].shape[-1]
    return (p["df"] > d - 1) & torch.isfinite(p["scale_tril"]).flatten(-2).all(-1)


FAMILIES = {
    dist.Beta: Family(
        "Beta", lambda x: torch.stack([x.log(), torch.log1p(-x)], -1), _scalar_points(0.2, 0.5, 0.7, 0.35),
        lambda c: {"concentration1": c[..., 0] + 1, "concentration0": c[..., 1] + 1},
        lambda p: (p["concentration1"] > 0) & (p["concentration0"] > 0),
        lambda p: dist.Beta(p["concentration1"], p["concentration0"]),
        lambda p, g: sample_beta(p["concentration1"], p["concentration0"], g, check=False)),
    dist.Gamma: Family(
        "Gamma", lambda x: torch.stack([x.log(), x], -1), _scalar_points(0.5, 1.0, 2.0, 3.0),
        lambda c: {"concentration": c[..., 0] + 1, "rate": -c[..., 1]},
        lambda p: (p["concentration"] > 0) & (p["rate"] > 0),
        lambda p: dist.Gamma(p["concentration"], p["rate"]),
        lambda p, g: sample_gamma(p["concentration"], g, check=False) / p["rate"]),
    dist.InverseGamma: Family(
        "InverseGamma", lambda x: torch.stack([x.log(), x.reciprocal()], -1),
        _scalar_points(0.5, 1.0, 2.0, 3.0),
        lambda c: {"concentration": -c[..., 0] - 1, "rate": -c[..., 1]},
        lambda p: (p["concentration"] > 0) & (p["rate"] > 0),
        lambda p: dist.InverseGamma(p["concentration"], p["rate"]),
        lambda p, g: p["rate"] / sample_gamma(p["concentration"], g, check=False)),
    dist.Normal: Family(
        "Normal", lambda x: torch.stack([x, x * x], -1), _scalar_points(-1.0, 0.0, 1.0, 2.0),
        lambda c: {"loc": -c[..., 0] / (2 * c[..., 1]), "scale": (-2 * c[..., 1]).clamp_min(0).rsqrt()},
        lambda p: torch.isfinite(p["scale"]) & (p["scale"] > 0),
        lambda p: dist.Normal(p["loc"], p["scale"]),
        lambda p, g: sample_normal(p["loc"], p["scale"], g, check=False)),
    dist.Dirichlet: Family(
        "Dirichlet", lambda x: x.log(), _dirichlet_points,
        lambda c: {"concentration": c + 1},
        lambda p: (p["concentration"] > 0).all(-1),
        lambda p: dist.Dirichlet(p["concentration"]),
        lambda p, g: sample_dirichlet(p["concentration"], g, check=False), simplex=True),
    dist.MultivariateNormal: Family(
        "MultivariateNormal", _mvn_features, _mvn_points, _mvn_params,
        lambda p: torch.isfinite(p["loc"]).all(-1),
        lambda p: dist.MultivariateNormal(p["loc"], precision_matrix=p["precision_matrix"]),
        _sample_mvn),
    dist.Wishart: Family(
        "Wishart", _wishart_features, _wishart_points, _wishart_params, _wishart_valid,
        lambda p: dist.Wishart(p["df"], scale_tril=p["scale_tril"]),
        lambda p, g: sample_wishart(p["df"], p["scale_tril"], g, check=False), symmetric=True),
}
# an Exponential prior is a Gamma of shape 1: the same statistics, a Gamma posterior
FAMILIES[dist.Exponential] = replace(FAMILIES[dist.Gamma], name="Exponential")


def unwrap(fn):
    """A site's distribution with its ``to_event`` dimensions made batch dimensions again: the
    elements a conjugate update reads one by one (its base distribution)."""
    while isinstance(fn, torch.distributions.Independent):
        fn = fn.base_dist
    return fn


def family_of(fn) -> Family | None:
    """The :class:`Family` of a site's distribution (seen through ``to_event``), or ``None`` for
    one this increment does not read: these classes, or a subclass of one that keeps its
    density and support (a Wishart with another sampler, say); a Normal must be univariate.
    The answer depends on the class alone (and a Normal's event shape), so it is looked up
    once per class: the sweeps ask at every update."""
    fn = unwrap(fn)
    if isinstance(fn, dist.Normal) and fn.event_shape != ():
        return None
    return _family_of_class(type(fn))


@functools.cache
def _family_of_class(cls) -> Family | None:
    for klass in cls.__mro__:
        if klass in FAMILIES:
            same = (cls.log_prob is klass.log_prob
                    and getattr(cls, "support", None) is getattr(klass, "support", None))
            return FAMILIES[klass] if same else None
    return None


def directions(family, event_shape, ref):
    """``(dE, q)``: the directions along which the site's derivatives are read: every
    coordinate; on the simplex the tangent ones ``e_j - e_D``; for a symmetric matrix
    ``E_ii`` and ``E_ij + E_ji`` (``i < j``), in the order of its statistics."""
    size = max(1, torch.Size(event_shape).numel())
    eye = torch.eye(size, dtype=torch.float64, device=ref.device)
    if family.simplex:
        return eye[:, :-1] - eye[:, -1:]
    if family.symmetric:
        d = event_shape[-1]
        i, j = torch.triu_indices(d, d, device=ref.device)
        out = torch.zeros(d, d, len(i), dtype=torch.float64, device=ref.device)
        out[i, j, torch.arange(len(i))] = 1.0
        out[j, i, torch.arange(len(i))] = 1.0
        return out.reshape(d * d, len(i))
    return eye
