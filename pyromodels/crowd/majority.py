"""Majority vote over a long annotation table, plain or weighted by worker."""

from __future__ import annotations

import torch

from ..checks import check_in
from ..core.seeding import make_generator

__all__ = ["vote_scores", "vote_fractions", "majority_vote"]


def vote_scores(table, weights: torch.Tensor | None = None) -> torch.Tensor:
    """``(N, K)`` votes per item and class: counts, or with ``weights`` ``(L,)`` (one per row of
    the table, e.g. its worker's skill) the sum of the weights of the labels given."""
    if weights is None:
        return table.vote_counts().to(torch.get_default_dtype())
    flat = table.item_idx * table.num_classes + table.label_idx
    scores = torch.zeros(table.num_items * table.num_classes, dtype=weights.dtype,
                         device=weights.device)
    return scores.index_add_(0, flat, weights).reshape(table.num_items, table.num_classes)


def vote_fractions(table, weights: torch.Tensor | None = None) -> torch.Tensor:
    """``(N, K)`` fraction of each item's votes (weighted by ``weights`` ``(L,)``, see
    :func:`vote_scores`) that went to each class; uniform for an item without votes."""
    votes = vote_scores(table, weights)
    total = votes.sum(-1, keepdim=True)
    return torch.where(total > 0, votes / total.clamp_min(torch.finfo(votes.dtype).tiny),
                       torch.full_like(votes, 1 / votes.shape[-1]))


def majority_vote(table, ties: str = "random", seed: int = 0,
                  weights: torch.Tensor | None = None) -> torch.Tensor:
    """Majority-vote labels ``(N,)``.

    Args:
        table: an annotation table.
        ties: ``"random"`` breaks ties uniformly at random (seeded), ``"smallest"`` takes the
            smallest class code, ``"first"`` the class that appears first in the table among
            those tied (crowd-kit's rule).
        seed: seed for random tie-breaking.
        weights: optional ``(L,)`` weight of each row of the table (a weighted vote, see
            :func:`vote_scores`).
    """
    check_in(ties, "ties", ("random", "smallest", "first"))
    votes = vote_scores(table, weights)
    best = votes == votes.max(-1, keepdim=True).values
    if ties == "smallest":
        return best.to(torch.int8).argmax(-1)
    if ties == "random":
        noise = torch.rand(best.shape, generator=make_generator(seed)).to(votes.device)
        return torch.where(best, noise, torch.full_like(noise, -1.0)).argmax(-1)
    first_seen = torch.full((table.num_classes,), table.num_labels, dtype=torch.long, device=votes.device)
    order = torch.arange(table.num_labels, device=votes.device)
    first_seen = first_seen.scatter_reduce(0, table.label_idx, order, reduce="amin")
    rank = torch.where(best, -first_seen.expand_as(votes), torch.full_like(votes, -(table.num_labels + 1)))
    return rank.argmax(-1).long()
