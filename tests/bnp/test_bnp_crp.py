"""CRP: the EPPF against sequential seating and normalisation, E[K], the sampler's partition
frequencies, the Escobar-West update's invariant law, and set-partition helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.integrate as si
import torch

from pyromodels.bnp import (
    canonical_labels,
    crp_expected_clusters,
    crp_log_prob,
    partition_frequencies,
    partition_key,
    resample_concentration,
    sample_crp,
    set_partitions,
    total_variation,
)
from pyromodels.testing import assert_mc_mean

BELL = [1, 1, 2, 5, 15, 52, 203, 877, 4140]


def sizes_of(part):
    return torch.bincount(torch.tensor(part))


def seating_log_prob(part, alpha):
    """Product of the sequential seating probabilities (eq. 8) along the labels."""
    counts, total = [], 0.0
    for i, k in enumerate(part):
        if k == len(counts):
            total += math.log(alpha / (i + alpha))
            counts.append(1)
        else:
            total += math.log(counts[k] / (i + alpha))
            counts[k] += 1
    return total


@pytest.mark.parametrize("alpha", [0.3, 1.0, 4.5])
def test_eppf_is_sequential_seating_and_sums_to_one(alpha):
    parts = set_partitions(6)
    logs = [float(crp_log_prob(sizes_of(p), alpha)) for p in parts]
    for part, value in zip(parts, logs):
        assert value == pytest.approx(seating_log_prob(part, alpha), abs=1e-12)
    assert math.fsum(math.exp(v) for v in logs) == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("alpha", [0.01, 1.0, 7.0])
def test_expected_clusters_matches_enumeration(alpha):
    parts = set_partitions(7)
    mean = math.fsum((max(p) + 1) * math.exp(float(crp_log_prob(sizes_of(p), alpha)))
                     for p in parts)
    assert crp_expected_clusters(7, alpha) == pytest.approx(mean, rel=1e-12)


def test_sample_crp_partition_frequencies_match_the_eppf():
    # Independent draws: each partition's frequency within 5 standard errors of its EPPF
    # probability (assert_mc_mean on the one-hot indicators; a correct sampler fails with
    # probability < 15 * 5.7e-7).
    gen = torch.Generator().manual_seed(3)
    parts = set_partitions(4)
    index = {p: j for j, p in enumerate(parts)}
    draws = [sample_crp(4, 1.7, gen) for _ in range(8000)]
    onehot = np.zeros((len(draws), len(parts)))
    for r, lab in enumerate(draws):
        assert partition_key(lab) == tuple(lab.tolist())  # already canonical
        onehot[r, index[tuple(lab.tolist())]] = 1
    exact = [math.exp(float(crp_log_prob(sizes_of(p), 1.7))) for p in parts]
    assert_mc_mean(onehot, exact)


def test_sample_crp_is_reproducible_from_the_generator():
    a = sample_crp(50, 2.0, torch.Generator().manual_seed(9))
    b = sample_crp(50, 2.0, torch.Generator().manual_seed(9))
    assert torch.equal(a, b) and a.dtype == torch.int64 and a.shape == (50,)


def _posterior_mean_alpha(k, n, shape, rate):
    def log_density(a):
        return ((shape - 1) * math.log(a) - rate * a + k * math.log(a) + math.lgamma(a)
                - math.lgamma(a + n))

    top = max(log_density(a) for a in np.linspace(0.01, 50, 2000))
    mass = si.quad(lambda a: math.exp(log_density(a) - top), 0, np.inf, limit=200)[0]
    first = si.quad(lambda a: a * math.exp(log_density(a) - top), 0, np.inf, limit=200)[0]
    return first / mass


@pytest.mark.parametrize("k,n", [(1, 10), (4, 30)])
def test_escobar_west_chain_has_the_posterior_mean_of_alpha(k, n):
    # The update is an exact Gibbs step on (alpha, eta), so iterating it with K fixed samples
    # p(alpha | K) ∝ Gamma(alpha | 2, 1) alpha^K Gamma(alpha) / Gamma(alpha + n), whose mean is
    # computed by quadrature. Tolerance: 5 batch-means standard errors (40 batches of 100; the
    # chain's autocorrelation is short, so batch means are nearly independent).
    gen = torch.Generator().manual_seed(11)
    alpha, draws = 1.0, []
    for _ in range(4000):
        alpha = resample_concentration(alpha, k, n, 2.0, 1.0, gen)
        draws.append(alpha)
    batches = np.asarray(draws).reshape(40, 100).mean(1)
    assert_mc_mean(batches, _posterior_mean_alpha(k, n, 2.0, 1.0))


def test_set_partitions_counts_and_canonical_form():
    for n in range(1, 9):
        parts = set_partitions(n)
        assert len(parts) == BELL[n] == len(set(parts))
        assert all(tuple(canonical_labels(list(p)).tolist()) == p for p in parts)


def test_canonical_labels_and_frequencies():
    assert canonical_labels(torch.tensor([9, 2, 9, 0, 2])).tolist() == [0, 1, 0, 2, 1]
    chain = torch.tensor([[4, 4, 1], [0, 0, 7], [2, 3, 2], [5, 5, 5]])
    freq = partition_frequencies(chain)
    assert freq == {(0, 0, 0): 0.25, (0, 0, 1): 0.5, (0, 1, 0): 0.25}
    assert total_variation(freq, {(0, 0, 1): 1.0}) == pytest.approx(0.5)


def test_crp_and_partition_errors_are_pinned():
    gen = torch.Generator()
    with pytest.raises(ValueError, match="alpha must be > 0"):
        crp_log_prob(torch.tensor([1, 2]), 0.0)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        crp_expected_clusters(3, -1.0)
    with pytest.raises(ValueError, match="alpha must be finite"):
        sample_crp(3, float("nan"), gen)
    with pytest.raises(ValueError, match="sizes must all be >= 1"):
        crp_log_prob(torch.tensor([2, 0]), 1.0)
    with pytest.raises(TypeError, match="sizes must hold integers"):
        crp_log_prob(torch.tensor([1.5]), 1.0)
    with pytest.raises(ValueError, match="sizes must be a non-empty 1-D"):
        crp_log_prob(torch.ones(2, 2, dtype=torch.int64), 1.0)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample_crp(3, 1.0, 0)
    with pytest.raises(ValueError, match="n must be an integer >= 1"):
        sample_crp(0, 1.0, gen)
    with pytest.raises(ValueError, match="num_clusters must be an integer <= 5"):
        resample_concentration(1.0, 6, 5, 1.0, 1.0, gen)
    with pytest.raises(ValueError, match="rate must be > 0"):
        resample_concentration(1.0, 2, 5, 1.0, 0.0, gen)
    with pytest.raises(TypeError, match="alpha must be a positive real number or a one-element"):
        crp_log_prob(torch.tensor([1]), torch.ones(2))
    with pytest.raises(ValueError, match="n must be an integer <= 12"):
        set_partitions(13)
    with pytest.raises(ValueError, match="labels must be 1-dimensional"):
        canonical_labels(torch.zeros(2, 2, dtype=torch.int64))
    with pytest.raises(ValueError, match="labels must be non-negative"):
        canonical_labels([0, -1])
    with pytest.raises(ValueError, match="chain must be a non-empty"):
        partition_frequencies(torch.zeros(3, dtype=torch.int64))
