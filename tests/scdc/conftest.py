"""Pairwise judgements simulated from the two-coin model, for the tests of the family."""

import pytest
import torch

from pyromodels.data import simulate_random_pairs


def simulate_pairs(num_items, num_clusters, accuracies, pairs_per_worker, seed=0):
    """Clusters drawn uniformly, then workers with ``alpha = beta = accuracy`` each judging
    ``pairs_per_worker`` distinct uniform pairs. Returns ``(pairs, z)``."""
    g = torch.Generator().manual_seed(seed)
    z = torch.randint(num_clusters, (num_items,), generator=g)
    pairs, _ = simulate_random_pairs(z, len(accuracies), pairs_per_worker, alpha=accuracies,
                                     beta=accuracies, seed=seed)
    return pairs, z


@pytest.fixture
def make_pairs():
    return simulate_pairs
