"""Brute-force inference in a latent tree model: enumerate every joint latent state.

The oracle the message passing is tested against, for tiny trees only: it costs
:math:`\\prod_j K_j` evaluations of the joint density. It shares no code with
:mod:`~pyromodels.trees.message_passing` (the Gaussian densities come from
``torch.distributions.MultivariateNormal``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import torch

from .message_passing import prepare_points
from .params import TreeParams

__all__ = ["BruteForce", "brute_force"]

MAX_STATES = 100_000


@dataclass(frozen=True)
class BruteForce:
    """Exact results by enumeration for ``N`` points.

    Attributes:
        log_likelihood: ``(N,)``.
        node_marginals: per latent node ``(N, K_j)``.
        edge_marginals: per latent node ``(N, K_parent, K_j)`` (``None`` at the root).
        map_states: ``(N, l)`` long, the most probable joint state (first in enumeration
            order on ties).
        map_log_joint: ``(N,)``, ``log p(z, y*)``.
        states: ``(S, l)`` every joint state; ``log_joint``: ``(N, S)``.
    """

    log_likelihood: torch.Tensor
    node_marginals: tuple[torch.Tensor, ...]
    edge_marginals: tuple[torch.Tensor | None, ...]
    map_states: torch.Tensor
    map_log_joint: torch.Tensor
    states: torch.Tensor
    log_joint: torch.Tensor


def brute_force(params: TreeParams, z) -> BruteForce:
    """Exact log-likelihood, marginals and MAP by summing over every joint latent state.

    Raises:
        ValueError: more than 100,000 joint states.

    Example:
        >>> import torch
        >>> from pyromodels.trees import LatentTree, TreeParams, tree_log_likelihood
        >>> params = TreeParams.random(LatentTree([2, 3], [None, 0], [[0], [1]], [0, 1]))
        >>> z = torch.zeros(2, 2, dtype=torch.float64)
        >>> torch.allclose(brute_force(params, z).log_likelihood, tree_log_likelihood(params, z))
        True
    """
    z = prepare_points(params, z)
    tree = params.tree
    total = 1
    for k in tree.cardinalities:
        total *= k
    if total > MAX_STATES:
        raise ValueError(f"brute_force enumerates {total} joint states, more than {MAX_STATES}")
    states = torch.tensor(list(itertools.product(*(range(k) for k in tree.cardinalities))),
                          dtype=torch.long, device=z.device)  # (S, l)
    columns = []
    for y in states.tolist():
        lp = params.root_probs[y[tree.root]].log().expand(z.shape[0])
        for j, p in enumerate(tree.parents):
            if p is not None:
                lp = lp + params.cpts[j][y[p], y[j]].log()
        for b, (block, p) in enumerate(zip(tree.pouches, tree.pouch_parents)):
            gauss = torch.distributions.MultivariateNormal(
                params.means[b][y[p]], scale_tril=params.scale_trils[b][y[p]],
                validate_args=False)
            lp = lp + gauss.log_prob(z[:, list(block)])
        columns.append(lp)
    log_joint = torch.stack(columns, dim=1)  # (N, S)
    log_lik = torch.logsumexp(log_joint, dim=1)
    post = (log_joint - log_lik.unsqueeze(1)).exp()
    nodes = tuple(
        torch.stack([post[:, states[:, j] == k].sum(1) for k in range(tree.cardinalities[j])], 1)
        for j in range(tree.num_latents))
    edges = []
    for j, p in enumerate(tree.parents):
        if p is None:
            edges.append(None)
            continue
        table = z.new_zeros(z.shape[0], tree.cardinalities[p], tree.cardinalities[j])
        for a in range(tree.cardinalities[p]):
            for c in range(tree.cardinalities[j]):
                table[:, a, c] = post[:, (states[:, p] == a) & (states[:, j] == c)].sum(1)
        edges.append(table)
    best, idx = log_joint.max(dim=1)
    return BruteForce(log_lik, nodes, tuple(edges), states[idx], best, states, log_joint)
