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


def blobs(n=200, seed=0):
    """Four blobs in 2-D at (+-1.5, +-5), sd 0.5, through a random fixed MLP into 10-D,
    standardised: ``(o, side, row)`` (the recovery test's data)."""
    g = torch.Generator().manual_seed(seed)
    side = torch.randint(2, (n,), generator=g)
    row = torch.randint(2, (n,), generator=g)
    x = torch.stack([(2 * side - 1) * 1.5, (2 * row - 1) * 5.0], -1)
    x = x + 0.5 * torch.randn(n, 2, generator=g)
    w1 = torch.randn(2, 16, generator=g)
    w2 = torch.randn(16, 10, generator=g) / 4
    o = torch.tanh(x @ w1 / 3) @ w2 + 0.05 * torch.randn(n, 10, generator=g)
    return ((o - o.mean(0)) / o.std(0)).double(), side, row


@pytest.fixture
def make_blobs():
    return blobs
