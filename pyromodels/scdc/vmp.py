r"""BayesSCDC's local variational message passing (paper §3.2, eqs. 12 and 14).

Given the global factors' expected statistics and a recognition potential
:math:`\psi(x_i; o_i) = \langle r(o_i), t(x_i) \rangle` with natural parameters
:math:`(h^r_i, -\tfrac12 \mathrm{diag}\,\lambda^r_i)`, the surrogate objective :math:`\hat
{\mathcal L}` (eq. 10) is maximised over the local factors :math:`q(x_i)` (a full Gaussian) and
:math:`q(z_i)` (a categorical) by block coordinate ascent:

* **x update** (eq. 12): :math:`P_i = \sum_k q_{ik} E[\Lambda_k] + \mathrm{diag}\,\lambda^r_i`
  and :math:`h_i = \sum_k q_{ik} E[\Lambda_k \mu_k] + h^r_i`, with
  :math:`\Lambda_k = \Sigma_k^{-1}`;
* **z update** (eq. 14): :math:`q(z_i) = \mathrm{softmax}(E\log\pi + E_{q(x_i)}E\log
  N(x_i \mid \mu_k, \Sigma_k) + \sum_{j} w_{ij} q_j)` with the links' message weights
  :math:`w_{ij}` (:func:`~pyromodels.scdc.links.message_weights`).

Each sweep does the x update of every item, then the z update. ``schedule="parallel"`` updates
every :math:`q(z_i)` at once from the previous sweep's neighbours (Jacobi, as the authors'
released code); ``schedule="sequential"`` updates them colour class by colour class of a greedy
colouring of the link graph, so that no two linked items move together: that is Gauss-Seidel
over the items, and every update is an exact coordinate maximisation, so :math:`\hat{\mathcal
L}` never decreases over sweeps. The loop is plain torch, differentiable with respect to the
recognition output and the globals' expected statistics.

Everything here reads the globals through :class:`GlobalMeans`, built from the factors'
``expected_stats()`` only, which is what the natural-gradient engine's eq. 17 correction
needs.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch

from ..conjugate.gaussian import GaussianNatural
from .links import (
    WorkerLogs,
    both_directions,
    co_cluster_probability,
    directed_messages,
    link_log_prob,
    message_weights,
)

__all__ = [
    "GlobalMeans",
    "LinkBatch",
    "LocalPosterior",
    "global_means",
    "expected_log_normal",
    "x_update",
    "z_natural",
    "colour_classes",
    "run_vmp",
    "surrogate_objective",
    "local_kl_z",
    "local_kl_x",
    "annotation_term",
    "SCHEDULES",
    "Z_INITS",
]

#: the z update schedules :func:`run_vmp` offers
SCHEDULES = ("parallel", "sequential")
#: how :func:`run_vmp` starts q(z)
Z_INITS = ("responsibilities", "random")

_LOG_2PI = math.log(2 * math.pi)


class GlobalMeans(NamedTuple):
    """The globals' expected statistics the local step reads.

    Attributes:
        log_weights: ``(K,)`` :math:`E\\log\\pi_k`.
        precision: ``(K, d, d)`` :math:`E[\\Lambda_k]`.
        log_det_precision: ``(K,)`` :math:`E\\log|\\Lambda_k|`.
        precision_mean: ``(K, d)`` :math:`E[\\Lambda_k\\mu_k]`.
        mean_precision_mean: ``(K,)`` :math:`E[\\mu_k^\\top\\Lambda_k\\mu_k]`.
        workers: the workers' expected logs (:class:`~pyromodels.scdc.links.WorkerLogs`), or
            ``None`` without links.
    """

    log_weights: torch.Tensor
    precision: torch.Tensor
    log_det_precision: torch.Tensor
    precision_mean: torch.Tensor
    mean_precision_mean: torch.Tensor
    workers: WorkerLogs | None = None


class LinkBatch(NamedTuple):
    """Links among a batch's items: ``i``, ``j`` local row numbers, ``worker`` codes and
    ``link`` values, each ``(L,)``."""

    i: torch.Tensor
    j: torch.Tensor
    worker: torch.Tensor
    link: torch.Tensor


class LocalPosterior(NamedTuple):
    """The local factors after message passing.

    Attributes:
        probs: ``(N, K)`` :math:`q(z_i)`.
        log_probs: ``(N, K)`` their logarithms (the normalised :math:`\\eta^*_{z_i}`).
        x: :class:`~pyromodels.conjugate.GaussianNatural` of batch ``(N,)``, :math:`q(x_i)`.
    """

    probs: torch.Tensor
    log_probs: torch.Tensor
    x: GaussianNatural


def global_means(factors: dict) -> GlobalMeans:
    """:class:`GlobalMeans` from the global factors (``"weights"`` Dirichlet, ``"components"``
    Normal-Wishart, optional ``"alpha"``, ``"beta"`` Betas), through ``expected_stats()``."""
    comps = factors["components"].expected_stats()
    workers = None
    if "alpha" in factors:
        ea, eb = factors["alpha"].expected_stats(), factors["beta"].expected_stats()
        workers = WorkerLogs(ea[..., 0], ea[..., 1], eb[..., 0], eb[..., 1])
    return GlobalMeans(factors["weights"].expected_stats(), comps.precision,
                       comps.log_det_precision, comps.precision_mean, comps.mean_precision_mean,
                       workers)


def expected_log_normal(mean: torch.Tensor, second: torch.Tensor, g: GlobalMeans) -> torch.Tensor:
    """:math:`E_{q(x_i)}E_q\\log N(x_i \\mid \\mu_k, \\Lambda_k^{-1})`, ``(N, K)``, from
    :math:`E[x_i]` ``(N, d)`` and :math:`E[x_i x_i^\\top]` ``(N, d, d)``."""
    d = mean.shape[-1]
    trace = torch.einsum("kab,nab->nk", g.precision, second)
    return (-0.5 * trace + mean @ g.precision_mean.mT - 0.5 * g.mean_precision_mean
            + 0.5 * g.log_det_precision - 0.5 * d * _LOG_2PI)


def _z_weights(g: GlobalMeans) -> tuple[torch.Tensor, torch.Tensor]:
    r"""``(d d + d, K)`` weights ``W`` and ``(K,)`` offsets ``c`` such that
    :math:`[\mathrm{vec}\,E[x_i x_i^\top], E[x_i]]\,W + c` is :math:`E\log\pi_k +
    E\log N(x_i \mid \mu_k, \Sigma_k)` (eq. 14 without the links; the sum of
    :func:`expected_log_normal` and the log weights as one matrix product)."""
    K, d = g.precision_mean.shape
    weights = torch.cat([-0.5 * g.precision.reshape(K, d * d), g.precision_mean], -1).mT
    offsets = (g.log_weights - 0.5 * g.mean_precision_mean + 0.5 * g.log_det_precision
               - 0.5 * d * _LOG_2PI)
    return weights, offsets


def _x_natural(probs: torch.Tensor, g: GlobalMeans, h_r: torch.Tensor,
               diag_r: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 12 as ``(h, P)``: ``P = sum_k q_ik E[Lambda_k] + diag(lambda^r_i)`` (``diag_r`` the
    flattened ``(N, d d)`` diagonals) and ``h = sum_k q_ik E[Lambda_k mu_k] + h^r_i``, one
    product with the globals each."""
    n, (K, d) = probs.shape[0], g.precision_mean.shape
    precision = torch.addmm(diag_r, probs, g.precision.reshape(K, d * d)).view(n, d, d)
    return torch.addmm(h_r, probs, g.precision_mean), precision


def _z_base(h: torch.Tensor, precision: torch.Tensor, weights: torch.Tensor,
            offsets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Eq. 14 without the links, ``(N, K)``, from ``q(x_i)``'s ``h`` and precision
    (:func:`_z_weights`), and the inverses' ``info`` (non-zero where a precision is
    singular). The ``d x d`` inverses are batched LU inverses: for the small ``d`` of these
    models they cost less than a Cholesky factorisation and its inverse, forward and
    backward."""
    covariance, info = torch.linalg.inv_ex(precision)
    mean = (covariance * h.unsqueeze(-2)).sum(-1)
    second = covariance + mean.unsqueeze(-1) * mean.unsqueeze(-2)
    return torch.addmm(offsets, torch.cat([second.flatten(-2), mean], -1), weights), info


def _factored(h: torch.Tensor, precision: torch.Tensor, infos: list[torch.Tensor]) -> GaussianNatural:
    """:math:`q(x_i)` from eq. 12's ``(h, P)``, after one check (one device synchronisation)
    of every factorisation of a run, this one's Cholesky factor included."""
    tril, info = torch.linalg.cholesky_ex(precision)
    if bool(torch.stack([i.ne(0).any() for i in (*infos, info)]).any()):
        raise ValueError("message passing: the precision of q(x) (eq. 12) is not positive "
                         "definite; the recognition precisions must be positive and finite")
    return GaussianNatural.from_factored(h, precision, tril)


def x_update(probs: torch.Tensor, g: GlobalMeans, h_r: torch.Tensor,
             precision_r: torch.Tensor) -> GaussianNatural:
    """Eq. 12: :math:`q^*(x_i)` given :math:`q(z_i)` ``(N, K)`` and the potential ``h_r``,
    ``precision_r`` (each ``(N, d)``)."""
    h, precision = _x_natural(probs, g, h_r, torch.diag_embed(precision_r).flatten(-2))
    return _factored(h, precision, [])


def z_natural(qx: GaussianNatural, g: GlobalMeans, messages: torch.Tensor | None = None) -> torch.Tensor:
    r"""Eq. 14's :math:`\eta^*_{z_i}` ``(N, K)`` (unnormalised) given :math:`q(x_i)` and the
    relational messages :math:`\sum_j w_{ij} q_j` (``None``: none)."""
    eta, _ = _z_base(qx.h, qx.precision(), *_z_weights(g))
    return eta if messages is None else eta + messages


def colour_classes(i: torch.Tensor, j: torch.Tensor, num_items: int) -> list[torch.Tensor]:
    """A greedy colouring of the link graph: lists of item rows, no two linked items in the
    same class (unlinked items all in the first class)."""
    neighbours: list[set] = [set() for _ in range(num_items)]
    for a, b in zip(i.tolist(), j.tolist(), strict=True):
        if a != b:
            neighbours[a].add(b)
            neighbours[b].add(a)
    colour = [-1] * num_items
    for item in sorted(range(num_items), key=lambda n: -len(neighbours[n])):
        taken = {colour[n] for n in neighbours[item]}
        c = 0
        while c in taken:
            c += 1
        colour[item] = c
    classes: dict[int, list[int]] = {}
    for item, c in enumerate(colour):
        classes.setdefault(c, []).append(item)
    device = i.device
    return [torch.tensor(classes[c], dtype=torch.long, device=device) for c in sorted(classes)]


def _initial_probs(init, g: GlobalMeans, h_r, diag_r, zw, generator) -> torch.Tensor:
    n, K = h_r.shape[0], g.log_weights.shape[-1]
    if isinstance(init, torch.Tensor):
        if init.shape != (n, K):
            raise ValueError(f"z_init must be a string or a ({n}, {K}) tensor of probabilities, "
                             f"got shape {tuple(init.shape)}")
        return init.to(h_r.dtype)
    if init == "random":  # the released code: uniform draws, normalised
        u = torch.rand(n, K, generator=generator, dtype=h_r.dtype, device=h_r.device)
        return u / u.sum(-1, keepdim=True)
    prior = torch.softmax(g.log_weights, -1).expand(n, K)
    eta, info = _z_base(*_x_natural(prior, g, h_r, diag_r), *zw)
    if bool(info.ne(0).any()):
        raise ValueError("message passing: the precision of q(x) (eq. 12) is singular; the "
                         "recognition precisions must be positive and finite")
    return torch.softmax(eta, -1)


def run_vmp(h_r: torch.Tensor, precision_r: torch.Tensor, g: GlobalMeans,
            links: LinkBatch | None = None, *, num_sweeps: int = 4,
            schedule: str = "parallel", z_init="responsibilities",
            generator: torch.Generator | None = None, trace=None) -> LocalPosterior:
    r"""Alternate eqs. 12 and 14 for ``num_sweeps`` sweeps.

    Args:
        h_r, precision_r: ``(N, d)`` the recognition potential (``precision_r > 0``).
        g: the globals' expected statistics.
        links: the batch's links (row numbers into the ``N`` items) or ``None``.
        num_sweeps: sweeps of (x update, z update), at least 1.
        schedule: ``"parallel"`` (Jacobi z updates) or ``"sequential"`` (Gauss-Seidel over
            colour classes of the link graph).
        z_init: ``"responsibilities"``: the mixture responsibilities
            :math:`\mathrm{softmax}(E\log\pi + E\log N)` at the x update from the expected
            weights, without links; ``"random"``: normalised uniform draws (released code); or
            an ``(N, K)`` tensor of starting probabilities.
        generator: for ``z_init="random"``.
        trace: optional list; after each sweep the sweep's ``(probs, qx)`` is appended.

    Returns:
        :class:`LocalPosterior` (its ``x`` is the x update from the final ``q(z)``, so the
        pair is the last block-coordinate state).

    Raises:
        ValueError: if a precision of :math:`q(x_i)` is not positive definite (a recognition
            precision not positive or not finite).

    Each sweep is a few batched products: the x update's precisions and linear parts in one
    product each with the globals, one batch of ``d x d`` inverses, and the z update's expected
    log densities in one product of :math:`[\mathrm{vec}\,E[x x^\top], E[x]]` with the
    globals' statistics; the links' messages are one gather and one scatter-add.
    """
    zw = _z_weights(g)
    diag_r = torch.diag_embed(precision_r).flatten(-2)  # the same every sweep
    probs = _initial_probs(z_init, g, h_r, diag_r, zw, generator)
    use_links = links is not None and links.link.numel() > 0 and g.workers is not None
    edges = (both_directions(links.i, links.j, message_weights(links.link, g.workers,
                                                                links.worker))
             if use_links else None)
    classes = (colour_classes(links.i, links.j, h_r.shape[0])
               if use_links and schedule == "sequential" else None)
    log_probs, infos = probs.log(), []
    for _ in range(num_sweeps):
        base, info = _z_base(*_x_natural(probs, g, h_r, diag_r), *zw)
        infos.append(info)
        if not use_links:
            log_probs = torch.log_softmax(base, -1)
            probs = log_probs.exp()
        elif classes is None:
            log_probs = torch.log_softmax(base + directed_messages(probs, edges), -1)
            probs = log_probs.exp()
        else:
            for rows in classes:
                eta = base[rows] + directed_messages(probs, edges)[rows]
                new = torch.log_softmax(eta, -1)
                log_probs = log_probs.index_put((rows,), new)
                probs = probs.index_put((rows,), new.exp())
        if trace is not None:
            trace.append((probs, x_update(probs, g, h_r, precision_r)))
    return LocalPosterior(probs, log_probs, _factored(*_x_natural(probs, g, h_r, diag_r), infos))


def local_kl_z(local: LocalPosterior, g: GlobalMeans) -> torch.Tensor:
    """Eq. 21: :math:`E_{q(\\pi)} KL(q(z_i) \\| p(z_i \\mid \\pi)) = \\sum_k q_{ik}(\\log q_{ik}
    - E\\log\\pi_k)`, ``(N,)``."""
    return (local.probs * (local.log_probs - g.log_weights)).sum(-1)


def local_kl_x(local: LocalPosterior, g: GlobalMeans) -> torch.Tensor:
    """Eq. 22: :math:`E_{q(z_i) q(\\mu, \\Sigma)} KL(q(x_i) \\| p(x_i \\mid z_i, \\mu, \\Sigma))
    = -H[q(x_i)] - \\sum_k q_{ik} E\\log N(x_i \\mid \\mu_k, \\Sigma_k)`, ``(N,)``."""
    stats = local.x.expected_stats()
    eln = expected_log_normal(stats.linear, stats.quadratic, g)
    return -local.x.entropy() - (local.probs * eln).sum(-1)


def annotation_term(probs: torch.Tensor, links: LinkBatch, g: GlobalMeans) -> torch.Tensor:
    """Eq. 20 per link, ``(L,)``: :math:`E_{q(z)q(\\alpha, \\beta)}\\log p(L_{ij} \\mid z_i,
    z_j)`, linear in :math:`\\rho_{ij} = q_i^\\top q_j`."""
    rho = co_cluster_probability(probs, links.i, links.j)
    return link_log_prob(links.link, rho, g.workers, links.worker)


def potential_expectation(qx: GaussianNatural, h_r: torch.Tensor,
                          precision_r: torch.Tensor) -> torch.Tensor:
    """:math:`E_{q(x_i)}\\langle r(o_i), t(x_i)\\rangle = h^r_i{}^\\top E x_i - \\tfrac12
    \\sum_a \\lambda^r_{ia} E[x_{ia}^2]`, ``(N,)``."""
    stats = qx.expected_stats()
    diag = stats.quadratic.diagonal(dim1=-2, dim2=-1)
    return (h_r * stats.linear).sum(-1) - 0.5 * (precision_r * diag).sum(-1)


def surrogate_objective(local: LocalPosterior, g: GlobalMeans, h_r: torch.Tensor,
                        precision_r: torch.Tensor, links: LinkBatch | None = None) -> torch.Tensor:
    """The local part of :math:`\\hat{\\mathcal L}` (eq. 10) at the given local factors:
    :math:`\\sum_i [E\\langle r_i, t(x_i)\\rangle - KL_{z,i} - KL_{x,i}]` plus the links' eq. 20
    terms; the quantity the VMP sweeps ascend. A scalar."""
    value = (potential_expectation(local.x, h_r, precision_r) - local_kl_z(local, g)
             - local_kl_x(local, g)).sum()
    if links is not None and links.link.numel() > 0 and g.workers is not None:
        value = value + annotation_term(local.probs, links, g).sum()
    return value
