"""Additive sufficient statistics against brute-force numpy sums."""

import pickle

import numpy as np
import pytest
import torch

from pyromodels.conjugate import (
    NormalGamma,
    SufficientStats,
    categorical_stats,
    gaussian_stats,
)

F64 = torch.float64
RNG = np.random.default_rng(0)
X = RNG.normal(size=(40, 3))
Z = RNG.integers(0, 4, size=40)
WEIGHTS = RNG.uniform(0.1, 2.0, size=40)


def brute_force(x, z, k, w):
    count = np.array([w[z == j].sum() for j in range(k)])
    sum_x = np.stack([(w[z == j, None] * x[z == j]).sum(0) for j in range(k)])
    sum_xx = np.stack([np.einsum("n,ni,nj->ij", w[z == j], x[z == j], x[z == j]) for j in range(k)])
    return count, sum_x, sum_xx


@pytest.mark.parametrize("weighted", [False, True])
def test_gaussian_stats_equal_brute_force(weighted):
    w = WEIGHTS if weighted else np.ones(40)
    s = gaussian_stats(
        torch.tensor(X), torch.tensor(Z), 5, weights=torch.tensor(w) if weighted else None
    )
    count, sum_x, sum_xx = brute_force(X, Z, 5, w)
    np.testing.assert_allclose(s.counts.numpy(), count, rtol=1e-13)
    np.testing.assert_allclose(s["sum_x"].numpy(), sum_x, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(s["sum_xx"].numpy(), sum_xx, rtol=1e-13, atol=1e-13)
    iso = gaussian_stats(torch.tensor(X), torch.tensor(Z), 5, isotropic=True)
    np.testing.assert_allclose(
        iso["sum_sq"].numpy(),
        np.einsum("kii->k", brute_force(X, Z, 5, np.ones(40))[2]),
        rtol=1e-13,
        atol=1e-13,
    )


def test_chunked_accumulation_matches_brute_force():
    rng = np.random.default_rng(1)
    x, z = rng.normal(size=(3000, 2)), rng.integers(0, 3, size=3000)
    s = gaussian_stats(torch.tensor(x), torch.tensor(z), 3)
    np.testing.assert_allclose(
        s["sum_xx"].numpy(), brute_force(x, z, 3, np.ones(3000))[2], rtol=1e-11
    )


def test_add_then_remove_restores_the_statistics():
    s = gaussian_stats(torch.tensor(X), torch.tensor(Z), 4)
    before = {name: s[name].clone() for name in s.names}
    point = torch.tensor([0.3, -2.0, 1.1], dtype=F64)
    s.add(point, 2).remove(point, 2)
    batch = torch.tensor(X[:7] * 3)
    idx = torch.tensor([3, 0, 0, 1, 3, 2, 2])
    s.add(batch, idx, torch.tensor(WEIGHTS[:7])).remove(batch, idx, torch.tensor(WEIGHTS[:7]))
    for name in s.names:
        torch.testing.assert_close(s[name], before[name], rtol=1e-12, atol=1e-12)


def test_incremental_adds_merge_and_copy():
    full = gaussian_stats(torch.tensor(X), torch.tensor(Z), 4)
    first = gaussian_stats(torch.tensor(X[:25]), torch.tensor(Z[:25]), 4)
    second = gaussian_stats(torch.tensor(X[25:]), torch.tensor(Z[25:]), 4)
    merged = first.merge(second)
    grown = gaussian_stats(torch.empty(0, 3, dtype=F64), torch.empty(0, dtype=torch.long), 4)
    for x, z in zip(X, Z):
        grown.add(torch.tensor(x), int(z))
    for name in full.names:
        torch.testing.assert_close(merged[name], full[name])
        torch.testing.assert_close(grown[name], full[name])
    clone = full.copy()
    clone.add(torch.zeros(3, dtype=F64), 0)
    assert float(clone.counts[0]) == float(full.counts[0]) + 1
    restored = pickle.loads(pickle.dumps(full))
    torch.testing.assert_close(restored["sum_xx"], full["sum_xx"])


def test_categorical_stats_equal_bincount():
    s = categorical_stats(torch.tensor(Z), 6, weights=torch.tensor(WEIGHTS))
    np.testing.assert_allclose(s.counts.numpy(), np.bincount(Z, WEIGHTS, minlength=6))
    s.remove(None, torch.tensor(Z[:5]), torch.tensor(WEIGHTS[:5])).add(None, 5)
    expected = np.bincount(Z[5:], WEIGHTS[5:], minlength=6) + np.eye(6)[5]
    np.testing.assert_allclose(s.counts.numpy(), expected, atol=1e-13)


def test_isotropic_stats_feed_normal_gamma_posterior():
    s = gaussian_stats(torch.tensor(X), torch.tensor(Z), 4, isotropic=True)
    prior = NormalGamma(torch.zeros(3, dtype=F64), 1.0, 2.0, 1.0)
    post = prior.posterior(s.counts, s["sum_x"], s["sum_sq"])
    for k in range(4):
        xk = torch.tensor(X[Z == k])
        single = prior.posterior(len(xk), xk.sum(0), (xk * xk).sum())
        torch.testing.assert_close(post.b[k], single.b)


def test_removing_more_than_was_added_raises_and_leaves_state_unchanged():
    s = categorical_stats(torch.tensor([0, 1, 1]), 3)
    with pytest.raises(ValueError, match=r"count of component\(s\) \[2\] negative"):
        s.remove(None, 2)
    g = gaussian_stats(torch.tensor(X), torch.tensor(Z), 4)
    before = g["sum_x"].clone()
    with pytest.raises(ValueError, match="negative"):
        g.remove(torch.tensor(X[:2]), torch.tensor([0, 0]), torch.tensor([100.0, 1.0]))
    torch.testing.assert_close(g["sum_x"], before)
    np.testing.assert_allclose(s.counts.numpy(), [1.0, 2.0, 0.0])


def test_suffstats_errors_are_pinned():
    g = gaussian_stats(torch.tensor(X), torch.tensor(Z), 4)
    with pytest.raises(ValueError, match=r"component must lie in \[0, 3\]"):
        g.add(torch.zeros(3), 4)
    with pytest.raises(ValueError, match=r"x must have shape \(1, 3\)"):
        g.add(torch.zeros(2), 0)
    with pytest.raises(ValueError, match=r"x must have shape \(2, 3\)"):
        g.add(torch.zeros(3, 3), torch.tensor([0, 1]))
    with pytest.raises(ValueError, match="weight must be >= 0"):
        g.add(torch.zeros(3), 0, -1.0)
    with pytest.raises(ValueError, match="x must be None for count-only statistics"):
        categorical_stats([0, 1], 2).add(torch.zeros(1), 0)
    with pytest.raises(ValueError, match="same statistics and features"):
        g.merge(gaussian_stats(torch.tensor(X), torch.tensor(Z), 5))
    with pytest.raises(TypeError, match="other must be SufficientStats"):
        g.merge({})
    with pytest.raises(ValueError, match="x and z must have the same length"):
        gaussian_stats(torch.tensor(X), torch.tensor(Z[:3]), 4)
    with pytest.raises(ValueError, match="stats must be a mapping .* that includes 'count'"):
        SufficientStats({"sum_x": torch.zeros(2, 3)})
    with pytest.raises(ValueError, match="num_categories must be an integer >= 1"):
        categorical_stats([0], 0)
    with pytest.raises(KeyError, match="no statistic named 'sum_sq'"):
        g["sum_sq"]
