"""Pairwise judgements simulated from the two-coin model, for the tests of the family."""

import pytest
import torch

from pyromodels.data.pairwise import PairwiseAnnotations


def simulate_pairs(num_items, num_clusters, accuracies, pairs_per_worker, seed=0):
    """Workers with ``alpha = beta = accuracy`` judging distinct random pairs (each worker's
    pairs drawn uniformly, repeats dropped). Returns ``(pairs, z)``."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randint(num_clusters, (num_items,), generator=g)
    parts = []
    for m, acc in enumerate(accuracies):
        i = torch.randint(num_items, (pairs_per_worker,), generator=g)
        j = (i + torch.randint(1, num_items, (pairs_per_worker,), generator=g)) % num_items
        key = torch.unique(torch.minimum(i, j) * num_items + torch.maximum(i, j))
        i, j = key // num_items, key % num_items
        right = torch.rand(len(key), generator=g) < acc
        link = torch.where(z[i] == z[j], right, ~right).long()
        parts.append((i, j, torch.full_like(i, m), link))
    i, j, w, link = (torch.cat(c) for c in zip(*parts))
    pairs = PairwiseAnnotations.from_arrays(i, j, w, link, num_items=num_items,
                                            num_workers=len(accuracies))
    return pairs, z


@pytest.fixture
def make_pairs():
    return simulate_pairs
