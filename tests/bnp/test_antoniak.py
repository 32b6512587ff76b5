"""Antoniak table counts: Stirling numbers, the pmf against brute-force seating, the table-count
augmentation's joint identity, the moments and the sampler."""

import itertools
import math

import numpy as np
import pytest
import torch
from scipy import stats

from pyromodels.bnp import antoniak
from pyromodels.bnp.antoniak import (
    antoniak_log_prob,
    antoniak_mean,
    antoniak_variance,
    log_stirling1_table,
    sample_tables,
)


def _stirling_exact(n_max):
    """Unsigned Stirling numbers of the first kind as Python integers (exact)."""
    s = [[1]]
    for n in range(n_max):
        prev = s[-1] + [0]
        s.append([(n * prev[k] if k <= n else 0) + (prev[k - 1] if k else 0) for k in range(n + 2)])
    return s


def _seatings(n, a):
    """``{tables: probability}`` by enumerating every CRP seating of ``n`` customers."""
    out = {}

    def walk(i, sizes, prob):
        if i == n:
            out[len(sizes)] = out.get(len(sizes), 0.0) + prob
            return
        for j in range(len(sizes)):
            walk(i + 1, sizes[:j] + [sizes[j] + 1] + sizes[j + 1:], prob * sizes[j] / (i + a))
        walk(i + 1, sizes + [1], prob * a / (i + a))

    walk(0, [], 1.0)
    return out


def test_log_stirling_table_matches_exact_integers_and_row_sums():
    exact = _stirling_exact(30)
    table = log_stirling1_table(30)
    for n in range(31):
        for k in range(31):
            value = exact[n][k] if k < len(exact[n]) else 0
            if value == 0:
                assert table[n, k] == -math.inf
            else:
                assert math.isclose(float(table[n, k]), math.log(value), rel_tol=1e-13, abs_tol=1e-12)
    # sum_k s(n, k) = n!, far beyond float64 range of the numbers themselves
    big = log_stirling1_table(400)
    assert math.isclose(float(torch.logsumexp(big[400], 0)), math.lgamma(401), rel_tol=1e-12)


@pytest.mark.parametrize("a", [0.3, 1.0, 2.5])
def test_pmf_equals_brute_force_seating(a):
    for n in range(0, 8):
        brute = _seatings(n, a)
        t = torch.arange(-1, n + 2)
        p = antoniak_log_prob(t, n, a).exp()
        expected = torch.tensor([brute.get(int(k), 0.0) for k in t], dtype=torch.float64)
        assert torch.allclose(p, expected, rtol=1e-12, atol=1e-15)


def test_table_count_augmentation_joint_identity_by_franchise_enumeration():
    """Customers of a Dirichlet-multinomial Dir(gamma beta) urn seated in a Chinese restaurant
    franchise: the probability of an ordered dish sequence with counts n and table counts t is
    Gamma(gamma)/Gamma(gamma + N) prod_k s(n_k, t_k) (gamma beta_k)^t_k, i.e. the Dirichlet-
    multinomial probability times prod_k Antoniak(t_k | n_k, gamma beta_k)."""
    gamma, beta, N = 1.7, [0.3, 0.5, 0.2], 5
    brute = {}

    def walk(i, tables, dishes, prob):  # tables: list of (size, dish)
        if i == N:
            t = tuple(sum(1 for _, d in tables if d == k) for k in range(3))
            key = (tuple(dishes), t)
            brute[key] = brute.get(key, 0.0) + prob
            return
        for j, (size, dish) in enumerate(tables):
            new = tables[:j] + [(size + 1, dish)] + tables[j + 1:]
            walk(i + 1, new, dishes + [dish], prob * size / (i + gamma))
        for k in range(3):
            walk(i + 1, tables + [(1, k)], dishes + [k], prob * gamma * beta[k] / (i + gamma))

    walk(0, [], [], 1.0)
    assert math.isclose(sum(brute.values()), 1.0, rel_tol=1e-12)
    a = torch.tensor(beta, dtype=torch.float64) * gamma
    checked = 0
    for (dishes, t), prob in brute.items():
        n = torch.tensor([dishes.count(k) for k in range(3)])
        dm = math.lgamma(gamma) - math.lgamma(gamma + N) + float(
            (torch.lgamma(a + n) - torch.lgamma(a)).sum())
        formula = dm + float(antoniak_log_prob(torch.tensor(t), n, a).sum())
        assert math.isclose(math.log(prob), formula, rel_tol=1e-11, abs_tol=1e-11)
        checked += 1
    # every one of the 3^N dish sequences occurs, several with more than one table vector
    assert len({d for d, _ in brute}) == len(list(itertools.product(range(3), repeat=N)))
    assert checked == len(brute) > 3 ** N


@pytest.mark.parametrize("n", [0, 1, 5, 40])
@pytest.mark.parametrize("a", [0.01, 0.5, 3.0, 50.0])
def test_mean_and_variance_closed_forms_equal_pmf_sums(n, a):
    t = torch.arange(0, n + 1, dtype=torch.float64)
    p = antoniak_log_prob(torch.arange(0, n + 1), n, a).exp()
    assert math.isclose(float(p.sum()), 1.0, rel_tol=1e-12)
    mean = float((t * p).sum())
    var = float((t * t * p).sum()) - mean ** 2
    assert math.isclose(float(antoniak_mean(n, a)), mean, rel_tol=1e-11, abs_tol=1e-12)
    assert math.isclose(float(antoniak_variance(n, a)), var, rel_tol=1e-9, abs_tol=1e-11)


@pytest.mark.parametrize(("n", "a"), [(12, 0.8), (30, 5.0)])
def test_sampler_frequencies_match_pmf(n, a):
    """Chi-square goodness of fit over cells with expected count >= 5 (the rest pooled): a
    correct sampler gives p < 1e-4 with probability 1e-4; the seed is fixed."""
    size = 20000
    draws = sample_tables(torch.full((size,), n), a, torch.Generator().manual_seed(3))
    assert int(draws.min()) >= 1 and int(draws.max()) <= n
    p = antoniak_log_prob(torch.arange(n + 1), n, a).exp().numpy()
    counts = np.bincount(draws.numpy(), minlength=n + 1)
    big = p * size >= 5
    obs = np.append(counts[big], counts[~big].sum())
    exp = np.append(p[big], p[~big].sum()) * size
    keep = exp > 0
    assert stats.chisquare(obs[keep], exp[keep]).pvalue > 1e-4


def test_sampler_mean_for_many_customers_across_chunks():
    """n = 600 spans three chunks of 256 customers; the mean of 4000 draws lies within 4.5
    standard errors (sd from the closed-form variance) of the closed-form mean."""
    draws = sample_tables(torch.full((4000,), 600), 2.0, torch.Generator().manual_seed(5))
    se = math.sqrt(float(antoniak_variance(600, 2.0)) / 4000)
    assert abs(float(draws.double().mean()) - float(antoniak_mean(600, 2.0))) < 4.5 * se


def test_sampler_broadcasts_and_edge_cases():
    g = torch.Generator().manual_seed(0)
    n = torch.tensor([[0, 1, 7], [3, 0, 2]])
    a = torch.tensor([1e-300, 0.5, 2.0], dtype=torch.float64)
    t = sample_tables(n, a, g)
    assert t.shape == (2, 3) and t.dtype == torch.int64
    assert int(t[0, 0]) == 0 and int(t[1, 1]) == 0 and int(t[0, 1]) == 1
    assert int(t[1, 0]) == 1  # a = 1e-300: only the first customer opens a table
    assert sample_tables(torch.zeros(0, dtype=torch.int64), 1.0, g).shape == (0,)
    again = sample_tables(n, a, torch.Generator().manual_seed(0))
    assert torch.equal(t, again)


def test_bad_input_messages():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="n must be >= 0"):
        sample_tables(torch.tensor([-1]), 1.0, g)
    with pytest.raises(TypeError, match="n must hold integers"):
        sample_tables(torch.tensor([1.5]), 1.0, g)
    with pytest.raises(ValueError, match="a must be > 0"):
        sample_tables(3, 0.0, g)
    with pytest.raises(ValueError, match="a must be finite"):
        antoniak_mean(3, float("nan"))
    with pytest.raises(TypeError, match="a must be a floating tensor"):
        antoniak_log_prob(1, 3, torch.tensor(2))
    with pytest.raises(TypeError, match="t must hold integers"):
        antoniak_log_prob(torch.tensor(1.0), 3, 1.0)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample_tables(3, 1.0, 0)
    with pytest.raises(ValueError, match="n_max must be an integer >= 0"):
        log_stirling1_table(-1)


def test_variance_tail_closed_form_matches_direct_sum_beyond_the_split():
    n = torch.tensor([1023, 1024, 1025, 5000])
    for a in (0.2, 7.0):
        i = torch.arange(5000, dtype=torch.float64)
        terms = a * i / (a + i) ** 2
        direct = torch.stack([terms[: int(k)].sum() for k in n])
        assert torch.allclose(antoniak_variance(n, a), direct, rtol=1e-11)


def test_streamed_stirling_rows_for_large_n_match_the_cached_table(monkeypatch):
    n = torch.tensor([0, 1, 7, 300, 300, 2999])
    t = torch.tensor([0, 1, 3, 1, 40, 12])
    cached = antoniak_log_prob(t, n, 1.3)
    monkeypatch.setattr(antoniak, "_CACHED_MAX", 5)
    streamed = antoniak_log_prob(t, n, 1.3)
    assert torch.allclose(streamed, cached, rtol=1e-12)
    monkeypatch.setattr(antoniak, "_CACHED_MAX", 2048)
    big = antoniak_log_prob(torch.arange(0, 3001), 3000, 0.7)
    assert math.isclose(float(torch.logsumexp(big, 0)), 0.0, abs_tol=1e-9)
