r"""Mean-field variational Bayes (coordinate ascent) for the pairwise worker model.

The variational family is :math:`q(\pi)\prod_n q(z_n)\prod_m q(\alpha_m) q(\beta_m)` with
:math:`q(z_n) = \mathrm{Cat}(q_n)`, :math:`q(\pi) = \mathrm{Dir}(a)` and Beta factors for the
coins. Its evidence lower bound is, in closed form,

.. math::

    \mathcal{L} = \sum_l \mathbb{E}\ln p(L_l \mid z_{i_l}, z_{j_l}, \alpha, \beta)
    + \sum_{n,k} q_{nk}\,\mathbb{E}\ln\pi_k + \mathrm{H}[q(z)]
    - \mathrm{KL}(q(\pi)\,\|\,p(\pi))
    - \sum_m \bigl[\mathrm{KL}(q(\alpha_m)\,\|\,p) + \mathrm{KL}(q(\beta_m)\,\|\,p)\bigr],

whose link term is the two-coin log-likelihood at the co-clustering probability
:math:`\rho_l = q_{i_l}^\top q_{j_l}` with the coins' expected logarithms (spec §3.1, eq. 20;
:func:`~pyromodels.scdc.links.link_log_prob`). It is linear in :math:`\rho_l`: the message
weight :math:`w_l` times :math:`\rho_l` plus what the link would score between two
different clusters.

One step (:func:`cavi_step`) makes two moves, each of which cannot lower :math:`\mathcal{L}`:

1. **Clusters, damped parallel.** Every item's coordinate optimum given the others (eq. 14
   without the feature term),
   :math:`q^*_n = \mathrm{softmax}(\mathbb{E}\ln\pi + \sum_{l \ni n} w_l q_{\mathrm{other}(l)})`,
   is computed at once; moving all items there together can lower the bound (two items
   joined by a cannot link both flee the same cluster), so the step goes to
   :math:`q + t(q^* - q)` with the damping :math:`t \in \{0, 2^{-20}, \dots, 1/2, 1\}` that
   scores best (walking down from :math:`t = 1` until past the peak). Along that line the
   bound is a quadratic in :math:`t` (the pairs' part) plus the items' entropy, so every
   candidate is scored exactly after one more pass over the links, and :math:`t = 0` is
   among them: the move never lowers the bound. The direction goes uphill whenever :math:`q`
   is not a fixed point (each item's own bound is concave and maximised at :math:`q^*_n`),
   so a small enough :math:`t > 0` gains until the fit has converged.
2. **Globals, exact.** Given :math:`q(z)`, the bound separates into the weights and each
   worker's two coins, and each factor's optimum is its conjugate update:
   :math:`a = \alpha_0 + \sum_n q_n` (eq. 26) and the Beta posteriors of the soft link
   counts (eqs. 28-29, :func:`~pyromodels.scdc.links.worker_counts`).

A step also returns the bound of the state it started from, from the same passes over the
links. The passes are sparse products over the distinct pairs (:mod:`.pair_graph`): two
``(N, N) x (N, K)`` products (the messages, and the line search's curvature), one sampled
product for the pairs' co-clustering probabilities and two over the pairs' link counts per
worker; nothing loops over items or links in Python.
"""

from __future__ import annotations

import torch

from ..conjugate import DirichletCategorical
from ..conjugate.random import sample_dirichlet
from .links import (
    WorkerCounts,
    co_cluster_probability,
    expected_worker_logs,
    link_log_prob,
    message_weights,
)
from .pairwise_data import PairwiseData

__all__ = [
    "WORKER_START",
    "INIT_SWEEPS",
    "INIT_TEMPER",
    "DAMPINGS",
    "expected_log_weights",
    "cluster_update",
    "cluster_step",
    "soft_counts",
    "global_update",
    "elbo",
    "counted_link_term",
    "link_term",
    "cavi_step",
    "init_params",
    "settle_start",
    "posterior_means",
]

#: the coins' variational start, ``Beta(10, 1)`` for every worker's sensitivity and
#: specificity (the paper's App. B): workers start out trusted, so the first cluster update
#: follows the links (a start at chance would make every message weight zero)
WORKER_START = (10.0, 1.0)

#: the cluster updates of a start, with the workers held at :data:`WORKER_START`
INIT_SWEEPS = 25

#: the factor on the links' log-likelihood at a start's first sweep (it rises to 1)
INIT_TEMPER = 0.05

#: the dampings a cluster update tries, best first on a smooth bound: ``1, 1/2, ..., 2^-20``
DAMPINGS = tuple(2.0 ** -e for e in range(21))


def expected_log_weights(pi_concentration: torch.Tensor) -> torch.Tensor:
    r""":math:`\mathbb{E}\ln\pi_k = \psi(a_k) - \psi(\sum_j a_j)` under ``Dir(a)``, ``(K,)``."""
    return torch.digamma(pi_concentration) - torch.digamma(pi_concentration.sum(-1, keepdim=True))


def cluster_update(data: PairwiseData, q: torch.Tensor, e_log_pi: torch.Tensor,
                   operator: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Every item's coordinate optimum given the other items' ``q`` (eq. 14, no features).

    Args:
        data: the prepared links.
        q: ``(N, K)`` the current cluster probabilities.
        e_log_pi: ``(K,)`` :math:`\mathbb{E}\ln\pi` (or :math:`\ln\pi` for a point value).
        operator: the links' message weights as the sparse matrix
            :meth:`~pyromodels.scdc.pair_graph.PairGraph.operator`.

    Returns:
        ``(q_star, messages)``, each ``(N, K)``: ``softmax(e_log_pi + messages)`` and the
        relational messages :math:`\sum_{l \ni n} w_l q_{\mathrm{other}(l)}`
        (:func:`~pyromodels.scdc.links.pair_messages`).
    """
    messages = data.graph.messages(operator, q)
    return torch.softmax(e_log_pi + messages, -1), messages


def _entropy(q: torch.Tensor) -> torch.Tensor:
    """Entropy of the rows of ``q`` summed (``0 log 0 = 0``)."""
    return -torch.special.xlogy(q, q).sum()


def _global_kl(data: PairwiseData, pi_conc, alpha_conc, beta_conc) -> torch.Tensor:
    """KL of the Dirichlet and Beta factors from their priors, summed."""
    kl = DirichletCategorical(pi_conc).kl(DirichletCategorical(data.pi_prior))
    for conc, prior in ((alpha_conc, data.alpha_prior), (beta_conc, data.beta_prior)):
        kl = kl + DirichletCategorical(conc).kl(DirichletCategorical(prior)).sum()
    return kl


def _different_cluster_term(data: PairwiseData, logs) -> torch.Tensor:
    """The link log-likelihood if every pair sat in different clusters, summed."""
    totals = data.link_totals
    return (totals[:, 0] * logs.log1m_beta + totals[:, 1] * logs.log_beta).sum()


def soft_counts(data: PairwiseData, pair_rho: torch.Tensor) -> WorkerCounts:
    r"""The workers' soft link counts (eqs. 28-29) from the distinct pairs' co-clustering
    probabilities ``(P,)``: :func:`~pyromodels.scdc.links.worker_counts` of the links, summed
    per (worker, link value) group through the pair graph."""
    sums = data.graph.group_sums(pair_rho).to(data.dtype).view(data.num_workers, 2)
    same_ml, same_cl = sums[:, 1], sums[:, 0]
    n_ml, n_cl = data.link_totals[:, 0], data.link_totals[:, 1]
    return WorkerCounts(torch.stack([same_ml, same_cl], -1),
                        torch.stack([n_cl - same_cl, n_ml - same_ml], -1))


def global_update(data: PairwiseData, q: torch.Tensor, pair_rho: torch.Tensor) -> dict:
    r"""The conjugate optima of :math:`q(\pi)`, :math:`q(\alpha_m)`, :math:`q(\beta_m)` given
    the cluster probabilities ``q`` ``(N, K)`` and the distinct pairs' co-clustering
    probabilities ``pair_rho`` ``(P,)`` (eqs. 26, 28, 29); returns the concentrations and the
    posterior means."""
    counts = soft_counts(data, pair_rho)
    params = {"q": q, "pi_concentration": data.pi_prior + q.sum(0),
              "alpha_concentration": data.alpha_prior + counts.alpha,
              "beta_concentration": data.beta_prior + counts.beta}
    return {**params, **posterior_means(params)}


def posterior_means(params: dict) -> dict:
    """``pi``, ``alpha`` and ``beta``: the means of the variational factors."""
    a, b = params["alpha_concentration"], params["beta_concentration"]
    pi = params["pi_concentration"]
    return {"pi": pi / pi.sum(), "alpha": a[:, 0] / a.sum(-1), "beta": b[:, 0] / b.sum(-1)}


def elbo(data: PairwiseData, params: dict) -> torch.Tensor:
    """The evidence lower bound of ``params`` (module docstring), computed from scratch."""
    q = params["q"]
    e_log_pi = expected_log_weights(params["pi_concentration"])
    return (counted_link_term(data, params) + (q.sum(0) * e_log_pi).sum() + _entropy(q)
            - _global_kl(data, params["pi_concentration"], params["alpha_concentration"],
                         params["beta_concentration"]))


def counted_link_term(data: PairwiseData, params: dict) -> torch.Tensor:
    """The link term of :func:`elbo`: linear in each link's co-clustering probability, it is
    a sum over the workers of their soft counts (:func:`soft_counts`, one sampled product)
    times the coins' expected logarithms."""
    logs = expected_worker_logs(params["alpha_concentration"], params["beta_concentration"])
    counts = soft_counts(data, data.graph.pair_co_cluster(params["q"]))
    return (counts.alpha[:, 0] * logs.log_alpha + counts.alpha[:, 1] * logs.log1m_alpha
            + counts.beta[:, 0] * logs.log_beta + counts.beta[:, 1] * logs.log1m_beta).sum()


def link_term(data: PairwiseData, params: dict) -> torch.Tensor:
    """:func:`counted_link_term` by the reference route: :func:`.links.link_log_prob` of every
    link at its co-clustering probability, summed (``L x K`` gathers)."""
    p = data.pairs
    logs = expected_worker_logs(params["alpha_concentration"], params["beta_concentration"])
    rho = co_cluster_probability(params["q"], p.i_idx, p.j_idx)
    return link_log_prob(p.link, rho, logs, p.worker_idx).sum()


def _best_damping(q, q_star, e_log_pi, a1, a2) -> float:
    """The damping ``t`` of :data:`DAMPINGS` (or 0) whose point ``(1 - t) q + t q_star`` has
    the highest bound; ``a1 t + a2 t^2`` is the pairs' part of the bound along the line.

    The candidates are scored from ``t = 1`` down and the walk stops once a candidate that
    gains over ``t = 0`` is followed by a lower one (past the peak)."""
    slope = ((q_star - q) * e_log_pi).sum()
    best_t, best = 0.0, _entropy(q)
    previous = None
    for t in DAMPINGS:
        value = a1 * t + a2 * t * t + slope * t + _entropy((1 - t) * q + t * q_star)
        if previous is not None and best_t > 0 and value < previous:
            break
        if value > best:
            best_t, best = t, value
        previous = value
    return best_t


def _damped_cluster_move(data: PairwiseData, q, e_log_pi, operator):
    r"""The damped parallel cluster update (step 1 of the module docstring).

    Returns ``(new_q, damping, pairs_value)`` where ``pairs_value`` is
    :math:`\sum_l w_l \rho_l` at the old ``q``.
    """
    q_star, messages = cluster_update(data, q, e_log_pi, operator)
    d = q_star - q
    a1 = (d * messages).sum()
    a2 = 0.5 * (d * data.graph.messages(operator, d)).sum()
    t = _best_damping(q, q_star, e_log_pi, a1, a2)
    new_q = (1 - t) * q + t * q_star if t > 0 else q
    # each link is counted twice in the messages, once from either end
    return new_q, t, 0.5 * (q * messages).sum()


def cluster_step(data: PairwiseData, params: dict) -> tuple[torch.Tensor, float]:
    """The damped parallel cluster update alone (step 1 of the module docstring), at the
    globals of ``params``; returns the new ``q`` ``(N, K)`` and the damping taken."""
    _, operator = _coin_operator(data, params)
    e_log_pi = expected_log_weights(params["pi_concentration"])
    new_q, t, _ = _damped_cluster_move(data, params["q"], e_log_pi, operator)
    return new_q, t


def _coin_weights(data: PairwiseData, alpha_conc: torch.Tensor, beta_conc: torch.Tensor):
    """The coins' expected logarithms and the message weight of each group ``2 m + L`` (a
    link's weight depends only on its worker and value)."""
    logs = expected_worker_logs(alpha_conc, beta_conc)
    groups = torch.arange(2 * data.num_workers, device=data.device)
    return logs, message_weights(groups % 2, logs, groups // 2)


def _coin_operator(data: PairwiseData, params: dict):
    """The coins' expected logarithms and the links' message weights as a sparse matrix."""
    logs, weights = _coin_weights(data, params["alpha_concentration"],
                                  params["beta_concentration"])
    return logs, data.graph.operator(weights)


def cavi_step(data: PairwiseData, params: dict) -> tuple[dict, torch.Tensor, float]:
    """One coordinate-ascent step (module docstring): the damped parallel cluster update,
    then the globals' conjugate updates.

    Returns:
        ``(new_params, elbo_of_params, damping)``: the new state, the bound of the state the
        step started from (:func:`elbo`, from the same passes), and the damping taken.
    """
    q = params["q"]
    logs, operator = _coin_operator(data, params)
    e_log_pi = expected_log_weights(params["pi_concentration"])
    new_q, t, pairs_value = _damped_cluster_move(data, q, e_log_pi, operator)
    start = (pairs_value + _different_cluster_term(data, logs) + (q.sum(0) * e_log_pi).sum()
             + _entropy(q) - _global_kl(data, params["pi_concentration"],
                                        params["alpha_concentration"],
                                        params["beta_concentration"]))
    return global_update(data, new_q, data.graph.pair_co_cluster(new_q)), start, t


def init_params(data: PairwiseData, generator: torch.Generator | None = None,
                sweeps: int = INIT_SWEEPS) -> dict:
    r"""A random start, settled on the links by annealing (the model's ``start="random"``).

    Each item's ``q_n`` is a draw from ``Dir(1_K)``; then :func:`settle_start` runs ``sweeps``
    damped cluster updates with every worker trusted and the links' log-likelihood tempered by
    a factor rising linearly from :data:`INIT_TEMPER` to 1 (deterministic annealing: at a low
    factor the clusters follow the links' broad structure and no item locks into its
    neighbours' random clusters). Without the annealing, a million random links took two to
    three times as many steps to converge. The annealing can also fail: where the uniform
    clustering is stable at the low factors (stratified designs with half of the links must
    links), the clusters melt to nearly uniform before the factor is high enough to split
    them, the first global update judges every worker to be at chance and the fit stays
    there (:mod:`.pairwise_start` has the start from the links' spectrum that avoids it).
    """
    N, K = data.num_items, data.num_clusters
    ones = torch.ones(N, K, dtype=data.dtype, device=data.device)
    q = sample_dirichlet(ones, generator).clamp_min(torch.finfo(data.dtype).tiny)
    return settle_start(data, q / q.sum(-1, keepdim=True), sweeps, INIT_TEMPER)


def settle_start(data: PairwiseData, q: torch.Tensor, sweeps: int = INIT_SWEEPS,
                 temper: float = 1.0) -> dict:
    r"""Settle the start ``q`` ``(N, K)`` on the links, then give the globals their updates.

    ``sweeps`` damped cluster updates run with every worker's coins held at
    :data:`WORKER_START` (trusted workers) and the links' log-likelihood tempered by a factor
    rising linearly from ``temper`` to 1 (``temper = 1``: no annealing); the globals are then
    their conjugate updates given those clusters. Without the settling, the first global
    update would see clusters that do not follow the links yet, judge every worker to be near
    chance (message weights near zero, which is a fixed point: with zero weights the cluster
    update ignores the links) and the fit would stay at the uniform clustering.
    """
    M = data.num_workers
    start = torch.tensor(WORKER_START, dtype=data.dtype, device=data.device).expand(M, 2)
    _, weights = _coin_weights(data, start, start)
    e_log_pi = expected_log_weights(data.pi_prior)
    for s in range(sweeps):
        factor = temper + (1 - temper) * s / max(1, sweeps - 1)
        q, _, _ = _damped_cluster_move(data, q, e_log_pi, data.graph.operator(factor * weights))
    return global_update(data, q, data.graph.pair_co_cluster(q))
