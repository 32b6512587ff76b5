"""k-means wrapper and G-means: K on well separated blobs, the Anderson-Darling statistic
against scipy, the max-clusters guard, and pinned errors."""

import logging

import numpy as np
import pytest
import scipy.stats
import torch
from sklearn.cluster import KMeans
from sklearn.metrics import adjusted_rand_score

from pyromodels.ddpm import anderson_darling_normal, anderson_darling_pvalue, gmeans, kmeans


def _blobs(k, per_cluster=150, dim=2, seed=0, spread=25.0):
    gen = torch.Generator().manual_seed(seed)
    centres = spread * torch.randn(k, dim, generator=gen)
    # keep the centres at least 10 sd apart so the blobs are well separated
    while k > 1 and torch.pdist(centres).min() < 10.0:
        centres = spread * torch.randn(k, dim, generator=gen)
    labels = torch.arange(k).repeat_interleave(per_cluster)
    return centres[labels] + torch.randn(k * per_cluster, dim, generator=gen), labels


@pytest.mark.parametrize("k", [1, 3, 6])
def test_gmeans_finds_k_on_separated_blobs(k):
    x, labels = _blobs(k, seed=k)
    result = gmeans(x)
    assert result.num_clusters == k
    assert adjusted_rand_score(labels.numpy(), result.labels.numpy()) == pytest.approx(1.0)
    assert result.labels.dtype == torch.long and result.centres.shape == (k, 2)


def test_gmeans_splits_a_uniform_square_and_the_guard_caps_k(caplog):
    # a uniform square is not Gaussian: G-means must split it, and max_clusters bounds K
    x = torch.rand(2000, 2, generator=torch.Generator().manual_seed(1))
    assert gmeans(x).num_clusters > 4
    with caplog.at_level(logging.WARNING, logger="pyromodels.ddpm.baselines"):
        capped = gmeans(x, max_clusters=3)
    assert capped.num_clusters <= 3
    assert "max_clusters=3" in caplog.text


def test_gmeans_is_deterministic_for_a_seed():
    x, _ = _blobs(3, seed=4)
    a, b = gmeans(x, seed=7), gmeans(x, seed=7)
    assert torch.equal(a.labels, b.labels) and torch.equal(a.centres, b.centres)


def test_anderson_darling_statistic_equals_scipy():
    gen = np.random.default_rng(0)
    for values in (gen.normal(size=40), gen.exponential(size=200), gen.uniform(size=9)):
        ours = anderson_darling_normal(torch.as_tensor(values))
        theirs = scipy.stats.anderson(values, dist="norm", method="interpolate").statistic
        assert ours == pytest.approx(theirs, rel=1e-10)


def test_pvalue_is_uniform_enough_under_normality():
    # Under normal data P(p < a) = a. With R samples the rejection rate has binomial sd
    # sqrt(a (1 - a) / R): at a = 0.05, R = 3000 that is 0.004; 4 sd bound a false alarm by 6e-5.
    gen = np.random.default_rng(5)
    reps = 3000
    for n in (12, 60):
        rate = np.mean([anderson_darling_pvalue(gen.normal(size=n)) < 0.05 for _ in range(reps)])
        assert abs(rate - 0.05) < 4 * np.sqrt(0.05 * 0.95 / reps)


def test_pvalue_at_scipy_critical_values_is_their_level():
    # scipy's critical values are for A^2 (the same modified statistic, divided out); feeding a
    # sample whose corrected statistic equals the 5% and 1% points must give p = 5% and 1%, up
    # to the rounding of the table to 3 decimals and the fit of the formula (2% relative).
    table = {0.05: 0.752, 0.01: 1.035}
    for level, crit in table.items():
        # samples whose modified statistic A* equals crit: bisect on the weight of a blend of
        # normal scores (A* near 0) and a skewed exponential sample (A* large)
        base = np.sort(np.random.default_rng(0).exponential(size=50))
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = 0.5 * (lo + hi)
            x = (1 - mid) * scipy.stats.norm.ppf((np.arange(1, 51) - 0.5) / 50) + mid * base
            a = anderson_darling_normal(torch.as_tensor(x)) * (1 + 0.75 / 50 + 2.25 / 2500)
            lo, hi = (mid, hi) if a < crit else (lo, mid)
        assert anderson_darling_pvalue(torch.as_tensor(x)) == pytest.approx(level, rel=0.02)


def test_kmeans_wrapper_matches_sklearn():
    x, labels = _blobs(4, seed=2)
    result = kmeans(x, 4, seed=3)
    ref = KMeans(n_clusters=4, n_init=10, random_state=3).fit(x.numpy())
    assert result.num_clusters == 4
    assert np.array_equal(result.labels.numpy(), ref.labels_)
    assert adjusted_rand_score(labels.numpy(), result.labels.numpy()) == pytest.approx(1.0)


def test_bad_input():
    x = torch.zeros(10, 2)
    with pytest.raises(ValueError, match=r"num_clusters must be an integer <= 10"):
        kmeans(x, 11)
    with pytest.raises(TypeError, match="num_clusters must be an integer"):
        kmeans(x, 2.0)
    with pytest.raises(ValueError, match="data must be 2-dimensional"):
        kmeans(torch.zeros(10), 2)
    with pytest.raises(ValueError, match="data must be finite"):
        gmeans(torch.full((10, 2), float("nan")))
    with pytest.raises(ValueError, match=r"significance must lie in \(0, 1\), got 0.0"):
        gmeans(x, significance=0.0)
    with pytest.raises(ValueError, match=r"significance must lie in \[0, 1\], got 1.5"):
        gmeans(x, significance=1.5)
    with pytest.raises(ValueError, match="values must hold at least 8 numbers for the p-value"):
        anderson_darling_pvalue(torch.arange(5.0))
    with pytest.raises(ValueError, match="min_cluster_size must be an integer >= 8"):
        gmeans(x, min_cluster_size=3)
    with pytest.raises(ValueError, match="max_clusters must be an integer >= 1"):
        gmeans(x, max_clusters=0)
    with pytest.raises(ValueError, match="values must not all be equal"):
        anderson_darling_normal(torch.ones(5))
    with pytest.raises(ValueError, match="values must hold at least 2 numbers"):
        anderson_darling_normal(torch.ones(1))


def test_pvalue_of_a_far_from_normal_sample_is_zero_not_an_overflow():
    # two tight clumps far apart: A* in the thousands, beyond where the fit turns upwards
    x = np.concatenate([np.zeros(500) + 1e-3 * np.arange(500), 1e6 + 1e-3 * np.arange(500)])
    assert anderson_darling_pvalue(torch.as_tensor(x)) == 0.0
    # just below the turning point the fit still gives its (tiny, positive) value
    y = np.concatenate([np.arange(30.0), 40.0 + np.arange(30.0)])
    assert 0.0 < anderson_darling_pvalue(torch.as_tensor(y)) < 1e-3
