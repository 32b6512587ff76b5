"""The statistics table of a Normal-Wishart pair drawn jointly (see :mod:`.tables` and
:mod:`.normal_wishart`).

A mean ``mu`` and the precision ``Lambda`` that scales its prior, gathered together by a
discrete site (a Gaussian mixture's ``locs[z]`` and ``precisions[z]``), change each other's
statistics every sweep, so neither has a table of its own. Jointly they have one: a Gaussian
child's log density ``1/2 log|Lambda| - 1/2 x^T Lambda x + x^T Lambda mu - 1/2 mu^T Lambda mu``
is linear in the joint statistics

    ``T(mu, Lambda) = (log|Lambda|, Lambda_ij (i <= j), Lambda mu, mu^T Lambda mu)``,

and so are the pair's priors (a Wishart, and a Normal of precision ``kappa Lambda``). A
Normal-Wishart ``NW(m, kappa, nu, W)`` has coefficients ``a = (nu - d) / 2`` on the
log-determinant, ``C = -W^-1 / 2 - kappa m m^T / 2`` on ``Lambda`` (``tr(C Lambda)``, written
over the upper triangle as ``C_ii`` and ``2 C_ij``), ``b = kappa m`` on ``Lambda mu`` and
``q = -kappa / 2`` on ``mu^T Lambda mu``; :func:`joint_posterior` inverts that.

The probes (each element alone moved, as in :mod:`.tables`) move the precision with the mean
at zero, where the statistics move in their first ``1 + d (d + 1) / 2`` coordinates (the
Wishart family's points), and the mean with the precision at the identity, where they move in
the last ``d + 1`` (the unit vectors and a half of the ones vector): together the ``p`` moves
identify all the coefficients, in two batched traces per value of the discrete site and one
for the check point. The terms that read the pair but not the discrete site (the priors) are
read the same way, once, and are the table's base. The table is checked against the joint
conditional the plan reads from the two sites' own conditionals, at a random value of the
discrete site.
"""

from __future__ import annotations

import torch

from ..conjugate import NormalWishart
from .exponential import _check_point
from .families import _wishart_features, _wishart_points, unwrap
from .tables import (
    DataCheck,
    NoTable,
    StatisticsTable,
    _reads,
    entry_rows,
    one_at_a_time,
    owner_map,
    read_entries,
    sparse_rows,
)
from .trace import _shifted_plates, tolerance, values_terms

__all__ = ["NormalWishartFeatures", "joint_features", "joint_coefficients", "joint_posterior",
           "build_pair_table"]


def joint_features(mu: torch.Tensor, lam: torch.Tensor) -> torch.Tensor:
    """``(..., p)`` the joint statistics of ``mu`` ``(..., d)`` and ``Lambda`` ``(..., d, d)``."""
    lam_mu = (lam @ mu.unsqueeze(-1)).squeeze(-1)
    return torch.cat([_wishart_features(lam), lam_mu, (mu * lam_mu).sum(-1, keepdim=True)], -1)


def _upper(d: int, device):
    return torch.triu_indices(d, d, device=device)


def joint_coefficients(posterior: NormalWishart) -> torch.Tensor:
    """``(..., p)`` the coefficients of a Normal-Wishart's log density in :func:`joint_features`."""
    m, kappa, nu = posterior.loc, posterior.kappa, posterior.nu
    d = m.shape[-1]
    c = -0.5 * posterior.inv_scale() - 0.5 * kappa[..., None, None] * m[..., :, None] * m[..., None, :]
    i, j = _upper(d, m.device)
    upper = torch.where(i == j, c[..., i, j], 2.0 * c[..., i, j])
    return torch.cat([(0.5 * (nu - d))[..., None], upper, kappa[..., None] * m, -0.5 * kappa[..., None]], -1)


def joint_posterior(coef: torch.Tensor, d: int) -> NormalWishart | None:
    """The Normal-Wishart with coefficients ``coef`` ``(..., p)``, or ``None`` where they give
    no proper one."""
    coef = coef.to(torch.float64)
    n = d * (d + 1) // 2
    a, upper, b, q = coef[..., 0], coef[..., 1:1 + n], coef[..., 1 + n:1 + n + d], coef[..., -1]
    kappa, nu = -2.0 * q, 2.0 * a + d
    if not bool((kappa > 0).all() and (nu > d - 1).all()):
        return None
    m = b / kappa[..., None]
    i, j = _upper(d, coef.device)
    c = torch.zeros(coef.shape[:-1] + (d, d), dtype=torch.float64, device=coef.device)
    half = torch.where(i == j, upper, 0.5 * upper)
    c[..., i, j] = half
    c[..., j, i] = half
    inv_scale = -2.0 * c - kappa[..., None, None] * m[..., :, None] * m[..., None, :]
    if bool((torch.linalg.cholesky_ex(inv_scale).info != 0).any()):
        return None
    return NormalWishart.from_inverse_scale(m, kappa, nu, 0.5 * (inv_scale + inv_scale.mT))


class NormalWishartFeatures:
    """The joint statistics of a (precision, mean) pair at a state, ``(E, p)`` float64, and the
    random value of every element the checks use."""

    def __init__(self, precision: str, mean: str):
        self.precision, self.mean, self.sites = precision, mean, (precision, mean)

    def __call__(self, state: dict) -> torch.Tensor:
        mu = state[self.mean].to(torch.float64)
        lam = state[self.precision].to(torch.float64)
        d = mu.shape[-1]
        return joint_features(mu.reshape(-1, d), lam.reshape(-1, d, d))

    def random_values(self, state: dict) -> dict:
        mu, lam = state[self.mean], state[self.precision]
        d = mu.shape[-1]
        count = max(1, mu.numel() // d)
        lam_check = _check_point(_wishart_points((d, d), lam), torch.Size([count]), (d, d), lam)
        gen = torch.Generator().manual_seed(3)
        mu_check = torch.randn(count, d, generator=gen, dtype=torch.float64).to(mu.device)
        return {self.mean: mu_check.to(mu.dtype).reshape(mu.shape),
                self.precision: lam_check.to(lam.dtype).reshape(lam.shape)}


def _moves(d: int, ref):
    """``(lam_points, mu_points)``: the precision's moves (with the mean at zero) and the
    mean's (with the precision at the identity), after the first point ``(0, I)``."""
    lam_points = _wishart_points((d, d), ref)[1:-1]
    eye = torch.eye(d, dtype=torch.float64, device=ref.device)
    return lam_points, torch.cat([eye, 0.5 * torch.ones(1, d, dtype=torch.float64, device=ref.device)])


def _design(d: int, ref) -> torch.Tensor:
    lam_points, mu_points = _moves(d, ref)
    eye = torch.eye(d, dtype=torch.float64, device=ref.device)
    zeros = torch.zeros(len(lam_points) + 1, d, dtype=torch.float64, device=ref.device)
    lams = torch.cat([eye[None], lam_points, eye.expand(len(mu_points), d, d)])
    mus = torch.cat([zeros, mu_points])
    return joint_features(mus, lams)


def _probe(model, args, kwargs, state, update, names, count, d, check) -> tuple:
    """``((E p + 2, T), shapes)``: the log densities of the terms ``names`` at the probes (see
    :func:`~.tables.read_entries` for their order), and each term's shape."""
    mean, precision = update.mean.site, update.precision.site
    mu_shape, lam_shape = state[mean].shape, state[precision].shape
    dtype = state[mean].dtype
    lam_points, mu_points = _moves(d, state[mean])
    eye = torch.eye(d, dtype=dtype, device=state[mean].device).expand(count, d, d).clone()
    zeros = torch.zeros(count, d, dtype=dtype, device=state[mean].device)
    at_zero = {**state, mean: zeros.reshape(mu_shape)}
    by_lam = values_terms(model, args, kwargs, at_zero, precision,
                          [eye.reshape(lam_shape)] + one_at_a_time(eye, lam_points, count, lam_shape))
    at_eye = {**state, precision: eye.reshape(lam_shape)}
    by_mu = values_terms(model, args, kwargs, at_eye, mean, one_at_a_time(zeros, mu_points, count, mu_shape))
    at_check = {**state, precision: check[precision]}
    last = values_terms(model, args, kwargs, at_check, mean, [check[mean]])

    lam_rows, mu_rows = entry_rows(by_lam, names), entry_rows(by_mu, names)
    moves = torch.cat([lam_rows[1:].reshape(count, len(lam_points), -1),
                       mu_rows.reshape(count, len(mu_points), -1)], 1)
    shapes = {n: tuple(last[n].shape[1:]) for n in names}
    return torch.cat([lam_rows[:1], moves.reshape(-1, moves.shape[-1]), entry_rows(last, names)]), shapes


def build_pair_table(model, args, kwargs, state: dict, update, z: str, support: torch.Tensor,
                     deps: dict, latent: set) -> StatisticsTable:
    """The :class:`~.tables.StatisticsTable` of a joint Normal-Wishart block ``update``
    (:class:`~.normal_wishart.NormalWishartUpdate`) over discrete site ``z``, its base the
    priors' coefficients, checked at a random ``z`` against the joint conditional read from
    the program. Raises :class:`~.tables.NoTable` where no table applies."""
    mean, precision = update.mean.site, update.precision.site
    pair = {mean, precision}
    reads = {name: r for name, r in _reads(deps, latent, mean).items()}
    reads.update(_reads(deps, latent, precision))
    gathered = [n for n, r in reads.items() if z in r]
    priors = [n for n, r in reads.items() if z not in r]
    others = {s for r in reads.values() for s in r} - pair - {z}
    if not gathered:
        raise NoTable(f"no term reads {z!r} beside the pair")
    if others:
        raise NoTable(f"their terms also read {sorted(others)}, which change every sweep")
    d = state[mean].shape[-1]
    count = max(1, unwrap(update.mean.fn).batch_shape.numel())
    features = NormalWishartFeatures(precision, mean)
    check = features.random_values(state)
    check_features = features(check)
    design = _design(d, state[mean])
    tol = tolerance(state[mean].dtype)
    z_value = state[z]
    z_shape = z_value.shape[:z_value.dim() - (support.dim() - 1)]
    maps, z_plates = _shifted_plates(model, args, kwargs, state, z, z_shape)
    k_count, p = support.shape[0], design.shape[1]
    parts, owner = [], None
    base = torch.zeros(count, p, dtype=torch.float64, device=state[mean].device)
    for k in range(k_count):
        at_k = {**state, z: support[k].to(z_value.dtype).expand(z_value.shape).clone()}
        y, shapes = _probe(model, args, kwargs, at_k, update, gathered + priors, count, d, check)
        if owner is None:
            owner = torch.cat([owner_map(shapes[n], z_shape, maps.get(n, {}), z_plates)
                               for n in gathered]).to(state[mean].device)
        stats, entry_reads = read_entries(design, y, count, check_features, tol)
        mine = len(owner)
        parts.append(sparse_rows(stats[None, :, :mine], entry_reads[None, :, :mine], owner,
                                 torch.tensor([k], device=owner.device), k_count))
        if k == 0:
            base = stats[:, mine:].sum(1)
    rows, cols, values = (torch.cat(part) for part in zip(*parts))
    table = StatisticsTable(features, z, support, rows, cols, values,
                            (max(1, z_shape.numel()) * k_count, count * p), p, len(owner),
                            DataCheck(args, kwargs))
    table.base = base.reshape(-1)
    _check_pair(state, update, table, support, args, kwargs)
    return table


def _check_pair(state, update, table, support, args, kwargs) -> None:
    """The table's joint conditional at a random ``z`` against the program's."""
    from ..core.bound import ModelArgs

    z_value = state[table.z]
    shape = z_value.shape[:z_value.dim() - (support.dim() - 1)]
    gen = torch.Generator().manual_seed(1)
    k = torch.randint(0, support.shape[0], tuple(shape), generator=gen).to(z_value.device)
    moved = {**state, table.z: support[k].to(z_value.dtype)}
    own = joint_coefficients(update.posterior(moved, ModelArgs(args, kwargs), plain=True))
    mine = table.coefficients(moved)
    tol = tolerance(state[update.mean.site].dtype) * (1.0 + float(own.abs().max()))
    if not bool(((mine - own.reshape(mine.shape)).abs() <= tol).all()):
        raise NoTable(f"at a random {table.z!r} the table's joint conditional differs from the "
                      f"program's")
