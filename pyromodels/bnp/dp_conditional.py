r"""Single-site assignment conditionals of the DP mixture, and the torch reference pass.

For point :math:`i`, with :math:`c_{-i}` the other assignments (the point removed, its cluster
deleted if it was alone), the conditional over the occupied clusters and a new one is

.. math::

    p(c_i = k \mid \cdot) \propto n_{-i,k}\, f_k(z_i), \qquad
    p(c_i = \text{new} \mid \cdot) \propto \alpha\, m(z_i),

where :math:`f_k` is :math:`N(z_i \mid \mu_k, \lambda_k^{-1} I_d)` under Neal's Algorithm 2
(DDPM paper eqs. 23-24) and the cluster's Normal-Gamma posterior predictive (Student-t, from
its points other than :math:`z_i`) under Algorithm 3, and :math:`m` is the prior predictive
(:func:`~pyromodels.bnp.ng_predictive.new_cluster_log_predictive`). The common factor
:math:`1/(N - 1 + \alpha)` cancels.

:func:`torch_pass` is the plain (slow, portable) implementation of one assignment pass: it
does exactly what the compiled :mod:`~pyromodels.bnp.dp_kernels` passes do, with the same
slot bookkeeping and the same random numbers, so both give the same chain for one seed; its
cluster weights come from :class:`~pyromodels.conjugate.NormalGamma` rather than the
kernels' cached formulas.
"""

from __future__ import annotations

from typing import NamedTuple

import torch

from ..checks import check_bool, check_in, check_int
from ..conjugate import NormalGamma
from .crp import check_concentration
from .dp_state import ALGORITHMS, NEXT_ID, NUM_ACTIVE, NUM_FREE, DPState
from .ng_predictive import LOG_2PI, check_data, check_prior, new_cluster_log_predictive

__all__ = ["AssignmentConditional", "assignment_log_probs", "torch_pass"]


class AssignmentConditional(NamedTuple):
    """``log_probs`` ``(K + 1,)``: normalised log probabilities of the occupied clusters
    ``cluster_ids`` ``(K,)`` (the sampler's order) followed by a new cluster."""

    log_probs: torch.Tensor
    cluster_ids: torch.Tensor


def remove_point(state: DPState, i: int, zi: torch.Tensor) -> tuple[int, bool]:
    """Take point ``i`` out of its slot, deleting the cluster if it empties."""
    s = int(state.slot[i])
    state.counts[s] -= 1
    state.sums[s] -= zi
    state.sumsq[s] -= (zi * zi).sum()
    if int(state.counts[s]) > 0:
        return s, False
    k = int(state.counters[NUM_ACTIVE]) - 1
    last, p = int(state.active[k]), int(state.position[s])
    state.active[p] = last
    state.position[last] = p
    state.counters[NUM_ACTIVE] = k
    state.free[int(state.counters[NUM_FREE])] = s
    state.counters[NUM_FREE] += 1
    state.cluster_id[s] = -1
    state.sums[s] = 0.0
    state.sumsq[s] = 0.0
    return s, True


def open_cluster(state: DPState) -> int:
    """Open a cluster with the next id in the slot on top of the free stack."""
    state.counters[NUM_FREE] -= 1
    s = int(state.free[int(state.counters[NUM_FREE])])
    k = int(state.counters[NUM_ACTIVE])
    state.active[k] = s
    state.position[s] = k
    state.counters[NUM_ACTIVE] = k + 1
    state.cluster_id[s] = state.counters[NEXT_ID]
    state.counters[NEXT_ID] += 1
    state.counts[s] = 0
    state.sums[s] = 0.0
    state.sumsq[s] = 0.0
    return s


def add_point(state: DPState, i: int, s: int, zi: torch.Tensor) -> None:
    state.counts[s] += 1
    state.sums[s] += zi
    state.sumsq[s] += (zi * zi).sum()
    state.slot[i] = s


def existing_log_weights(zi: torch.Tensor, state: DPState, prior: NormalGamma,
                         algorithm: str) -> torch.Tensor:
    """``(K,)`` unnormalised log weights ``log n_{-i,k} + log f_k(z_i)`` of the occupied
    clusters (the point already removed)."""
    s = state.active_slots
    n = state.counts[s].double()
    if algorithm == "alg2":
        lam = state.lam[s]
        dist = ((zi - state.mu[s]) ** 2).sum(-1)
        log_f = 0.5 * zi.shape[0] * (torch.log(lam) - LOG_2PI) - 0.5 * lam * dist
    else:
        # Running sums can leave a tiny negative sum of squares (about -1e-16) by rounding.
        post = prior.posterior(n, state.sums[s], state.sumsq[s].clamp(min=0.0))
        log_f = post.predictive_log_prob(zi)
    return torch.log(n) + log_f


def choose(log_w: torch.Tensor, u: float) -> int:
    """Inverse CDF of ``softmax(log_w)`` at ``u`` (the kernels' rule, the same summation)."""
    w = torch.exp(log_w - log_w.max())
    cum = torch.cumsum(w, 0)
    j = int((cum <= u * float(cum[-1])).sum())
    if j >= w.numel():
        j = int(torch.nonzero(w > 0).max())
    return j


def torch_pass(z, state: DPState, prior: NormalGamma, algorithm: str, u, log_new,
               pool_gamma, pool_normal, pool_pos: list, start: int, seat: bool = False) -> int:
    """One assignment pass from point ``start`` in plain torch; returns where it stopped
    (see :mod:`~pyromodels.bnp.dp_kernels` for the contract; ``seat`` seats points that are
    in no cluster yet, under the collapsed conditional)."""
    k0, b0 = float(prior.kappa), float(prior.b)
    m0 = prior.loc
    for i in range(start, z.shape[0]):
        if int(state.counters[NUM_FREE]) == 0 or (
                algorithm == "alg2" and pool_pos[0] == pool_gamma.shape[0]):
            return i
        zi = z[i]
        if not seat:
            remove_point(state, i, zi)
        log_w = torch.cat([existing_log_weights(zi, state, prior, algorithm), log_new[i:i + 1]])
        choice = choose(log_w, float(u[i]))
        if choice == log_w.numel() - 1:
            s = open_cluster(state)
            if algorithm == "alg2":
                p = pool_pos[0]
                pool_pos[0] = p + 1
                rate = b0 + k0 * float(((zi - m0) ** 2).sum()) / (2.0 * (k0 + 1.0))
                lam = float(pool_gamma[p]) / rate
                state.lam[s] = lam
                state.mu[s] = ((k0 * m0 + zi) / (k0 + 1.0)
                               + pool_normal[p] / ((k0 + 1.0) * lam) ** 0.5)
        else:
            s = int(state.active[choice])
        add_point(state, i, s, zi)
    return z.shape[0]


def assignment_log_probs(z, state: DPState, i: int, prior: NormalGamma, alpha,
                         algorithm: str = "alg2", paper_literal: bool = False
                         ) -> AssignmentConditional:
    """The normalised conditional of :math:`c_i` that a sweep samples from (the state is not
    changed).

    Args:
        z: ``(N, d)`` data.
        state: the chain state (with parameters for ``"alg2"``).
        i: the point, ``0 <= i < N``.
        prior: Normal-Gamma base measure.
        alpha: DP concentration (> 0).
        algorithm: ``"alg2"`` (instantiated parameters) or ``"alg3"`` (collapsed).
        paper_literal: new-cluster weight with the paper's eq. 24 as printed.

    Returns:
        :class:`AssignmentConditional`; if point ``i`` is alone in its cluster, that cluster
        is not among ``cluster_ids`` (it is the new-cluster option).

    Example:
        >>> from pyromodels.conjugate import NormalGamma
        >>> from pyromodels.bnp import init_state
        >>> z = torch.tensor([[0.0], [0.2], [3.0]], dtype=torch.float64)
        >>> prior = NormalGamma(torch.zeros(1, dtype=torch.float64), 1.0, 2.0, 1.0)
        >>> st = init_state(z, [0, 0, 1], prior, algorithm="alg3")
        >>> out = assignment_log_probs(z, st, 0, prior, 1.0, algorithm="alg3")
        >>> out.cluster_ids.tolist(), round(float(out.log_probs.exp().sum()), 12)
        ([0, 1], 1.0)
    """
    z = check_data(z)
    prior = check_prior(prior, z.shape[1])
    if not isinstance(state, DPState):
        raise TypeError(f"state must be a DPState, got {type(state).__name__}")
    if state.num_points != z.shape[0]:
        raise ValueError(f"state has {state.num_points} points but z has {z.shape[0]} rows")
    i = check_int(i, "i", minimum=0, maximum=z.shape[0] - 1)
    alpha = check_concentration(alpha)
    check_in(algorithm, "algorithm", ALGORITHMS)
    check_bool(paper_literal, "paper_literal")
    if algorithm == "alg2" and not state.has_params:
        raise ValueError("algorithm='alg2' needs cluster parameters: call resample_params first")
    work = state.copy()
    work.refresh_stats(z)
    remove_point(work, i, z[i])
    log_new = torch.log(torch.tensor(alpha, dtype=torch.float64)) + new_cluster_log_predictive(
        z[i:i + 1], prior, paper_literal)
    log_w = torch.cat([existing_log_weights(z[i], work, prior, algorithm), log_new])
    return AssignmentConditional(torch.log_softmax(log_w, 0), work.occupied_ids.clone())
