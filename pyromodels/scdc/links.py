r"""The two-coin link likelihood that every engine of the family shares.

Worker :math:`m` judges the pair :math:`\{i, j\}` and says "same cluster" (:math:`L = 1`, a
must link) or "different clusters" (:math:`L = 0`, a cannot link). With sensitivity
:math:`\alpha_m` and specificity :math:`\beta_m` (paper eq. 1),

.. math::

    p(L \mid z_i, z_j) = \mathrm{Bern}(L; \alpha_m)^{s} \,
    \mathrm{Bern}(L; 1 - \beta_m)^{1 - s}, \qquad s = z_i^\top z_j .

The log-likelihood is linear in :math:`s`, so under independent cluster posteriors
:math:`q_i, q_j` its expectation is the same formula at the co-clustering probability
:math:`\rho_{ij} = q_i^\top q_j` (the closed form of the relational ELBO term, spec §3.1), and
under Beta posteriors on :math:`\alpha_m, \beta_m` it takes their expected logarithms
(digammas). Its derivative in :math:`\rho` is the mean-field message weight of eq. 14,

.. math::

    w = \mathbb{E}\ln(1 - \alpha_m) - \mathbb{E}\ln\beta_m + L\,[\mathbb{E}\ln\alpha_m
        - \mathbb{E}\ln(1 - \alpha_m) + \mathbb{E}\ln\beta_m - \mathbb{E}\ln(1 - \beta_m)],

and its sufficient statistics for the workers (eqs. 28-29) are the :math:`\rho`-weighted counts
of links in each cell. Links are given as the arrays of
:class:`~pyromodels.data.pairwise.PairwiseAnnotations` (``i_idx``, ``j_idx``, ``worker_idx``,
``link``), one entry per judgement; these functions take prepared tensors and do not check them
(the public fits do).
"""

from __future__ import annotations

from typing import NamedTuple

import pyro
import pyro.distributions as dist
import torch
import torch.nn.functional as F
from pyro.ops.indexing import Vindex

__all__ = [
    "WorkerLogs",
    "WorkerCounts",
    "point_worker_logs",
    "logit_worker_logs",
    "expected_worker_logs",
    "co_cluster_probability",
    "link_log_prob",
    "message_weights",
    "pair_messages",
    "DirectedEdges",
    "both_directions",
    "directed_messages",
    "worker_counts",
    "worker_weights",
    "observe_links",
    "coins_on_plate",
]


class WorkerLogs(NamedTuple):
    r"""Per-worker (expected) logarithms of the two coins, each of shape ``(M,)``.

    ``log_alpha`` = :math:`\mathbb{E}\ln\alpha_m`, ``log1m_alpha`` =
    :math:`\mathbb{E}\ln(1 - \alpha_m)`, and the same for :math:`\beta_m`. For point estimates
    they are plain logarithms.
    """

    log_alpha: torch.Tensor
    log1m_alpha: torch.Tensor
    log_beta: torch.Tensor
    log1m_beta: torch.Tensor


class WorkerCounts(NamedTuple):
    r"""Soft link counts per worker, each of shape ``(M, 2)``.

    ``alpha[:, 0]`` counts must links among same-cluster pairs, ``alpha[:, 1]`` cannot links
    among them (the successes and failures of :math:`\alpha_m`); ``beta[:, 0]`` counts cannot
    links among different-cluster pairs, ``beta[:, 1]`` must links among them. A pair counts
    :math:`\rho_{ij}` towards "same" and :math:`1 - \rho_{ij}` towards "different". Column 0 pairs
    with :math:`\ln\alpha_m` and column 1 with :math:`\ln(1 - \alpha_m)`, the order of a Beta's
    sufficient statistics, so a Beta posterior is ``Beta(a0 + alpha[:, 0], b0 + alpha[:, 1])``.
    """

    alpha: torch.Tensor
    beta: torch.Tensor


def point_worker_logs(alpha: torch.Tensor, beta: torch.Tensor) -> WorkerLogs:
    """The logarithms of point estimates ``alpha``, ``beta`` (each ``(M,)``, in (0, 1))."""
    return WorkerLogs(alpha.log(), torch.log1p(-alpha), beta.log(), torch.log1p(-beta))


def logit_worker_logs(alpha_logit: torch.Tensor, beta_logit: torch.Tensor) -> WorkerLogs:
    """The logarithms of ``sigmoid(alpha_logit)``, ``sigmoid(beta_logit)``, computed stably.

    This is the form for coins stored as unconstrained logits and fitted by gradient.
    """
    return WorkerLogs(F.logsigmoid(alpha_logit), F.logsigmoid(-alpha_logit),
                      F.logsigmoid(beta_logit), F.logsigmoid(-beta_logit))


def _beta_expected_logs(a: torch.Tensor, b: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    total = torch.digamma(a + b)
    return torch.digamma(a) - total, torch.digamma(b) - total


def expected_worker_logs(alpha_conc: torch.Tensor, beta_conc: torch.Tensor) -> WorkerLogs:
    r"""Expected logarithms under :math:`\alpha_m \sim \mathrm{Beta}(a_m, b_m)` and likewise
    :math:`\beta_m`.

    Args:
        alpha_conc: ``(M, 2)`` concentrations ``(a, b)`` of each worker's sensitivity.
        beta_conc: ``(M, 2)`` concentrations of each worker's specificity.

    Returns:
        :class:`WorkerLogs` with :math:`\mathbb{E}\ln\alpha = \psi(a) - \psi(a + b)` and
        :math:`\mathbb{E}\ln(1 - \alpha) = \psi(b) - \psi(a + b)` (spec A.2).
    """
    la, l1a = _beta_expected_logs(alpha_conc[..., 0], alpha_conc[..., 1])
    lb, l1b = _beta_expected_logs(beta_conc[..., 0], beta_conc[..., 1])
    return WorkerLogs(la, l1a, lb, l1b)


def co_cluster_probability(q: torch.Tensor, i_idx: torch.Tensor, j_idx: torch.Tensor) -> torch.Tensor:
    r""":math:`\rho_l = q_{i_l}^\top q_{j_l}` for each link: ``q`` is ``(N, K)``, the result ``(L,)``.

    With one-hot rows it is the indicator that the two items share a cluster.
    """
    return (q[i_idx] * q[j_idx]).sum(-1)


def link_log_prob(link: torch.Tensor, same: torch.Tensor, logs: WorkerLogs,
                  worker_idx: torch.Tensor) -> torch.Tensor:
    r"""Log-likelihood of each link, linear in ``same``.

    Args:
        link: ``(L,)`` links, 1 = must link, 0 = cannot link.
        same: ``(L,)`` indicator that the pair shares a cluster, or its probability
            :math:`\rho` (then the result is the expectation over independent clusters).
        logs: the workers' (expected) logarithms, :class:`WorkerLogs` of ``(M,)`` tensors.
        worker_idx: ``(L,)`` worker of each link.

    Returns:
        ``(L,)``: :math:`s[L \ln\alpha + (1 - L)\ln(1 - \alpha)] + (1 - s)[L \ln(1 - \beta) +
        (1 - L)\ln\beta]` with the worker's coins (spec §3.1 and eq. 20).
    """
    link = link.to(logs.log_alpha.dtype)
    la, l1a = logs.log_alpha[worker_idx], logs.log1m_alpha[worker_idx]
    lb, l1b = logs.log_beta[worker_idx], logs.log1m_beta[worker_idx]
    when_same = link * la + (1 - link) * l1a
    when_different = link * l1b + (1 - link) * lb
    return same * when_same + (1 - same) * when_different


def message_weights(link: torch.Tensor, logs: WorkerLogs, worker_idx: torch.Tensor) -> torch.Tensor:
    r"""The mean-field message weight :math:`w` of each link (eq. 14), shape ``(L,)``.

    It is the derivative of :func:`link_log_prob` in ``same``: positive for a must link from a
    worker better than chance, negative for a cannot link.
    """
    link = link.to(logs.log_alpha.dtype)
    la, l1a = logs.log_alpha[worker_idx], logs.log1m_alpha[worker_idx]
    lb, l1b = logs.log_beta[worker_idx], logs.log1m_beta[worker_idx]
    return (l1a - lb) + link * (la - l1a + lb - l1b)


def pair_messages(q: torch.Tensor, i_idx: torch.Tensor, j_idx: torch.Tensor,
                  weights: torch.Tensor) -> torch.Tensor:
    r""":math:`\sum_j w_{ij} q_j` for every item, over links in both directions.

    Args:
        q: ``(N, K)`` cluster probabilities (or one-hot assignments).
        i_idx, j_idx: ``(L,)`` the two items of each link.
        weights: ``(L,)`` the links' message weights (:func:`message_weights`).

    Returns:
        ``(N, K)``: the relational part of each item's natural parameter (eq. 14); an item
        with no links gets zeros. It is the gradient of
        :math:`\sum_l \rho_l w_l` in ``q`` (each link counted once).
    """
    return directed_messages(q, both_directions(i_idx, j_idx, weights))


class DirectedEdges(NamedTuple):
    """Every link as two directed edges: ``target``, ``source`` ``(2 L,)`` and ``weight``
    ``(2 L, 1)``, the link's message weight on both (:func:`both_directions`)."""

    target: torch.Tensor
    source: torch.Tensor
    weight: torch.Tensor


def both_directions(i_idx: torch.Tensor, j_idx: torch.Tensor,
                    weights: torch.Tensor) -> DirectedEdges:
    """The links ``(i, j)`` with weights ``(L,)`` as the directed edges ``i <- j`` then
    ``j <- i``: built once, they serve every sweep of message passing."""
    w = weights.unsqueeze(-1)
    return DirectedEdges(torch.cat([i_idx, j_idx]), torch.cat([j_idx, i_idx]), torch.cat([w, w]))


def directed_messages(q: torch.Tensor, edges: DirectedEdges) -> torch.Tensor:
    """``(N, K)``: each item's sum of ``weight * q[source]`` over the edges that target it
    (:func:`pair_messages` on edges from :func:`both_directions`); one gather and one
    scatter-add."""
    out = torch.zeros_like(q)
    return out.index_add_(0, edges.target, edges.weight.to(q.dtype) * q[edges.source])


def worker_counts(same: torch.Tensor, link: torch.Tensor, worker_idx: torch.Tensor,
                  num_workers: int) -> WorkerCounts:
    r"""The workers' soft link counts (the sufficient statistics of eqs. 28-29).

    Args:
        same: ``(L,)`` co-clustering indicator or probability :math:`\rho` of each link.
        link: ``(L,)`` links.
        worker_idx: ``(L,)`` worker of each link.
        num_workers: ``M``.

    Returns:
        :class:`WorkerCounts` of ``(M, 2)`` tensors.
    """
    link = link.to(same.dtype)
    cells = torch.stack([same * link, same * (1 - link),
                         (1 - same) * (1 - link), (1 - same) * link], dim=-1)
    counts = torch.zeros(num_workers, 4, dtype=same.dtype, device=same.device)
    counts.index_add_(0, worker_idx, cells)
    return WorkerCounts(counts[:, :2], counts[:, 2:])


def worker_weights(alpha: torch.Tensor, beta: torch.Tensor) -> torch.Tensor:
    r"""Each worker's reliability weight :math:`\mathrm{logit}\,\alpha_m + \mathrm{logit}\,\beta_m`
    (the paper's Fig. 3c): 0 for a worker at chance, :math:`2\,\mathrm{logit}(0.9) \approx 4.39`
    for one right 90% of the time on both kinds of pair.
    """
    return torch.logit(alpha) + torch.logit(beta)


def coins_on_plate(coins: torch.Tensor) -> torch.Tensor:
    """Coins drawn as one ``(M,)`` event outside every plate, with the workers moved to the
    rightmost plate dimension: ``(M,)`` stays, ``(draws, 1, M)`` under a plate of draws (the
    ``1`` standing for the rightmost plate) becomes ``(draws, M)``, so each draw's links meet
    that draw's coins in :func:`observe_links`."""
    workers = torch.arange(coins.shape[-1], device=coins.device)
    return Vindex(coins)[..., workers]


def observe_links(z: torch.Tensor, i_idx: torch.Tensor, j_idx: torch.Tensor,
                  worker_idx: torch.Tensor, link: torch.Tensor, alpha: torch.Tensor,
                  beta: torch.Tensor, name: str = "links") -> None:
    r"""The links as an observed Pyro site (eq. 2): the story every model of the family tells.

    Args:
        z: cluster of each item, shape ``(..., N)`` (leading enumeration or batch dimensions
            are kept).
        i_idx, j_idx, worker_idx, link: ``(L,)`` tensors of the judgements.
        alpha, beta: the workers' coins, shape ``(..., M)``, the workers on the rightmost
            plate dimension (as a workers plate draws them; coins drawn as one event,
            ``(..., 1, M)`` under a plate of draws, go through :func:`coins_on_plate` first).
        name: the site's name; its plate is ``name + "_plate"`` (size ``L``, rightmost dim).

    Sample sites:
        ``name``: Bernoulli, support {0, 1}, shape ``(L,)``, observed, with
        :math:`P(L = 1) = \alpha_m` when the items share a cluster, else :math:`1 - \beta_m`.
    """
    same = z[..., i_idx] == z[..., j_idx]
    probs_one = torch.where(same, alpha[..., worker_idx], 1 - beta[..., worker_idx])
    with pyro.plate(name + "_plate", link.shape[-1], dim=-1):
        pyro.sample(name, dist.Bernoulli(probs=probs_one), obs=link.to(probs_one.dtype))
