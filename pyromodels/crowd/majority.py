"""Majority vote over a long annotation table."""

from __future__ import annotations

import torch

from ..checks import check_in
from ..core.seeding import make_generator

__all__ = ["vote_fractions", "majority_vote"]


def vote_fractions(table) -> torch.Tensor:
    """``(N, K)`` fraction of each item's labels that went to each class (uniform if unlabelled)."""
    votes = table.vote_counts().to(torch.get_default_dtype())
    total = votes.sum(-1, keepdim=True)
    return torch.where(total > 0, votes / total.clamp_min(1), torch.full_like(votes, 1 / votes.shape[-1]))


def majority_vote(table, ties: str = "random", seed: int = 0) -> torch.Tensor:
    """Majority-vote labels ``(N,)``.

    Args:
        table: an annotation table.
        ties: ``"random"`` breaks ties uniformly at random (seeded), ``"smallest"`` takes the
            smallest class code, ``"first"`` the class that appears first in the table among
            those tied (crowd-kit's rule).
        seed: seed for random tie-breaking.
    """
    check_in(ties, "ties", ("random", "smallest", "first"))
    votes = table.vote_counts()
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
    return rank.argmax(-1)
