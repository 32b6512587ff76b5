r"""Brute-force oracles of the family for tiny problems: every clustering enumerated.

The links couple the items, so the posterior over the clusters ``z`` has no factorisation;
with ``N`` items and ``K`` clusters there are ``K^N`` assignments, which these functions list
(up to :data:`MAX_ASSIGNMENTS`). The workers' coins are held at given values; the cluster
weights are either given too or integrated out under their Dirichlet prior
(Dirichlet-multinomial). The tests compare the coordinate-ascent fits with them.
"""

from __future__ import annotations

import itertools

import torch

from ..conjugate import log_multivariate_beta
from .links import link_log_prob, point_worker_logs

__all__ = ["MAX_ASSIGNMENTS", "assignments", "clustering_log_posterior", "co_cluster_matrix"]

#: the most assignments ``K^N`` the oracles enumerate
MAX_ASSIGNMENTS = 2 ** 20


def assignments(num_items: int, num_clusters: int) -> torch.Tensor:
    """Every assignment of ``num_items`` items to ``num_clusters`` clusters: ``(K^N, N)``."""
    if num_clusters ** num_items > MAX_ASSIGNMENTS:
        raise ValueError(f"{num_clusters}^{num_items} assignments is more than the "
                         f"{MAX_ASSIGNMENTS} the oracle enumerates")
    return torch.tensor(list(itertools.product(range(num_clusters), repeat=num_items)),
                        dtype=torch.long).reshape(-1, num_items)


def clustering_log_posterior(pairs, num_clusters: int, alpha: torch.Tensor, beta: torch.Tensor,
                             pi: torch.Tensor | None = None,
                             pi_concentration: float = 1.0) -> tuple[torch.Tensor, torch.Tensor]:
    r"""The normalised log posterior of every assignment given the coins.

    Args:
        pairs: :class:`~pyromodels.data.pairwise.PairwiseAnnotations` (or anything with
            ``i_idx``, ``j_idx``, ``worker_idx``, ``link`` and ``num_items``).
        num_clusters: ``K``.
        alpha, beta: ``(M,)`` the workers' coins, held fixed.
        pi: ``(K,)`` fixed cluster weights, or ``None`` to integrate them out under
            ``Dir(pi_concentration 1_K)``: :math:`p(z) = B(\alpha_0 + n) / B(\alpha_0)` with
            :math:`n` the cluster sizes.

    Returns:
        ``(z, log_post)``: the assignments ``(K^N, N)`` and their log posterior ``(K^N,)``.
    """
    z = assignments(pairs.num_items, num_clusters)
    logs = point_worker_logs(alpha, beta)
    same = (z[:, pairs.i_idx] == z[:, pairs.j_idx]).to(alpha.dtype)
    log_lik = link_log_prob(pairs.link, same, logs, pairs.worker_idx).sum(-1)
    sizes = torch.nn.functional.one_hot(z, num_clusters).sum(-2).to(alpha.dtype)
    if pi is None:
        a0 = torch.full((num_clusters,), float(pi_concentration), dtype=alpha.dtype)
        log_prior = log_multivariate_beta(a0 + sizes) - log_multivariate_beta(a0)
    else:
        log_prior = (sizes * pi.log()).sum(-1)
    log_joint = log_lik + log_prior
    return z, log_joint - torch.logsumexp(log_joint, 0)


def co_cluster_matrix(z: torch.Tensor, log_post: torch.Tensor) -> torch.Tensor:
    """``(N, N)`` posterior probability that items ``i`` and ``j`` share a cluster (invariant
    to relabelling the clusters, unlike the marginals of each ``z_n``)."""
    w = log_post.exp()
    same = (z.unsqueeze(-1) == z.unsqueeze(-2)).to(w.dtype)
    return torch.einsum("a,aij->ij", w, same)
