"""Label-invariant statistics against brute force, Python sets and Monte Carlo."""

from collections import Counter

import numpy as np
import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.diagnostics import (
    cluster_sizes,
    coclustering,
    coclustering_from_probs,
    label_invariant_stats,
    largest_cluster_fraction,
    occupied_clusters,
)


def _labels(chains=3, draws=7, n=9, k=5, seed=0):
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.integers(0, k, size=(chains, draws, n)))


def test_sizes_occupied_and_largest_against_python_counting():
    z = _labels()
    sizes = cluster_sizes(z, num_classes=6)
    occupied = occupied_clusters(z)
    largest = largest_cluster_fraction(z)
    assert sizes.shape == (3, 7, 6) and occupied.shape == (3, 7) and largest.dtype == torch.float64
    for c in range(3):
        for d in range(7):
            labels = z[c, d].tolist()
            counts = Counter(labels)
            assert sizes[c, d].tolist() == [counts.get(k, 0) for k in range(6)]
            assert int(occupied[c, d]) == len(set(labels))
            assert float(largest[c, d]) == max(counts.values()) / len(labels)


def test_coclustering_matches_double_loop_for_any_block_size():
    z = _labels(chains=2, draws=6, n=7, k=4, seed=1)
    brute = np.zeros((7, 7))
    for c in range(2):
        for d in range(6):
            for i in range(7):
                for j in range(7):
                    brute[i, j] += z[c, d, i] == z[c, d, j]
    brute /= 12
    for budget in (1, 30, 2**22):  # one draw per block, a few, all at once
        got = coclustering(z, max_elements=budget)
        assert got.dtype == torch.float64
        np.testing.assert_allclose(got.numpy(), brute, rtol=0, atol=1e-15)


def test_coclustering_from_probs_against_formula_and_monte_carlo():
    rng = np.random.default_rng(2)
    r = rng.dirichlet(np.ones(3), size=6)
    got = coclustering_from_probs(torch.from_numpy(r)).numpy()
    expected = np.array(
        [[sum(r[i, k] * r[j, k] for k in range(3)) for j in range(6)] for i in range(6)]
    )
    np.fill_diagonal(expected, 1.0)
    np.testing.assert_allclose(got, expected, rtol=1e-14)
    # Labels drawn independently from r: the Monte Carlo co-clustering frequency of S draws has
    # standard error sqrt(p (1 - p) / S) <= 0.5 / sqrt(S); allow five of them.
    s = 4000
    u = rng.random((s, 6, 1))
    z = (u > np.cumsum(r, axis=1)[None]).sum(-1)
    mc = coclustering(torch.from_numpy(z).reshape(1, s, 6)).numpy()
    assert np.abs(mc - got).max() < 5 * 0.5 / np.sqrt(s)


def test_label_invariant_stats(toy):
    stats = label_invariant_stats(toy)
    assert list(stats) == ["lp", "occupied_clusters", "largest_cluster_fraction"]
    assert torch.equal(stats["lp"], toy.sample_stats["lp"])
    assert torch.equal(stats["occupied_clusters"], occupied_clusters(toy["z"]))
    assert all(v.shape == (2, 300) for v in stats.values())
    # Renaming the labels (0 <-> 1) leaves every statistic unchanged.
    swapped = Posterior(samples={"z": 1 - toy["z"]}, method="gibbs")
    for name, value in label_invariant_stats(swapped).items():
        assert torch.equal(value, stats[name])


def test_label_checks():
    with pytest.raises(ValueError, match=r"z must be 3-dimensional, got shape \(2, 3\)"):
        occupied_clusters(torch.zeros(2, 3, dtype=torch.long))
    with pytest.raises(ValueError, match="z must be non-negative integer labels"):
        coclustering(torch.tensor([[[0, -1]]]))
    with pytest.raises(TypeError, match="z must hold integer labels"):
        cluster_sizes(torch.tensor([[[0.5, 1.0]]]))
    with pytest.raises(ValueError, match=r"z must lie in \[0, 1\] for 2 classes"):
        cluster_sizes(torch.tensor([[[0, 2]]]), num_classes=2)
    with pytest.raises(ValueError, match=r"r must have rows summing to 1 \(last axis\); row r\[0\] "
                                         r"sums to 0\.9"):
        coclustering_from_probs(torch.tensor([[0.5, 0.4]]))
    with pytest.raises(ValueError, match=r"r must be non-negative, found r\[0, 1\] = -0\.5"):
        coclustering_from_probs(torch.tensor([[1.5, -0.5]]))
    with pytest.raises(ValueError, match=r"r must be 2-dimensional, got shape \(2,\)"):
        coclustering_from_probs(torch.tensor([0.5, 0.5]))
    post = Posterior(samples={"c": torch.zeros(1, 2, 3, dtype=torch.long)}, method="gibbs")
    with pytest.raises(ValueError, match=r"'z' is not among \['c'\]"):
        label_invariant_stats(post)
