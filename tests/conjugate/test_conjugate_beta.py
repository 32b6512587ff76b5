"""Beta-Bernoulli against scipy, a grid, quadrature and Monte Carlo.

Monte Carlo checks use ``N = 200_000`` fixed-seed draws and allow 5 Monte Carlo standard errors
(sample standard deviation / sqrt(N)).
"""

import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st
import torch

from pyromodels.conjugate import BetaBernoulli
from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean

N = 200_000
F64 = torch.float64
A, B = 0.8, 2.5
OUTCOMES = np.array([1, 0, 0, 1, 1, 1, 0, 1, 1])


def prior(a=A, b=B):
    return BetaBernoulli(torch.tensor(a, dtype=F64), b)


def test_posterior_equals_normalised_prior_times_likelihood_on_a_grid():
    s = int(OUTCOMES.sum())
    f = len(OUTCOMES) - s
    grid = np.linspace(0, 1, 200_001)[1:-1]
    unnormalised = st.beta.pdf(grid, A, B) * grid**s * (1 - grid) ** f
    density = unnormalised / np.trapezoid(unnormalised, grid)
    post = prior().posterior(s, f)
    assert (float(post.alpha), float(post.beta)) == (A + s, B + f)
    inner = slice(1000, -1000)  # away from the integrable endpoint singularity of the prior
    np.testing.assert_allclose(
        post.log_prob(torch.tensor(grid[inner])).exp().numpy(), density[inner], rtol=1e-5
    )


def test_marginal_likelihood_equals_quadrature():
    s = int(OUTCOMES.sum())
    f = len(OUTCOMES) - s
    value, _ = si.quad(
        lambda p: st.beta.pdf(p, A, B) * p**s * (1 - p) ** f,
        0,
        1,
        epsabs=1e-14,
        epsrel=1e-12,
        limit=200,
    )
    assert float(prior().log_marginal_sequence(OUTCOMES)) == pytest.approx(
        math.log(value), rel=1e-9
    )


def test_marginal_likelihood_is_product_of_sequential_predictives():
    post, total = prior(), 0.0
    for x in OUTCOMES:
        total += float(post.predictive_log_prob(torch.tensor(x)))
        post = post.posterior(x, 1 - x)
    assert float(prior().log_marginal_sequence(torch.tensor(OUTCOMES))) == pytest.approx(
        total, rel=1e-12
    )


def test_unordered_marginal_is_scipy_beta_binomial():
    got = prior().log_marginal_likelihood(torch.tensor([0.0, 3.0, 7.0]), 4, ordered=False)
    n = np.array([4, 7, 11])
    expected = st.betabinom.logpmf([0, 3, 7], n, A, B)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_log_prob_mean_mode_match_scipy():
    p = prior(2.5, 4.0)
    grid = np.linspace(0.01, 0.99, 7)
    np.testing.assert_allclose(
        p.log_prob(torch.tensor(grid)).numpy(), st.beta.logpdf(grid, 2.5, 4.0), rtol=1e-12
    )
    assert float(p.mean()) == pytest.approx(st.beta.mean(2.5, 4.0), rel=1e-14)
    mode = float(p.mode())
    assert all(st.beta.pdf(mode, 2.5, 4.0) > st.beta.pdf(mode + h, 2.5, 4.0) for h in (-1e-4, 1e-4))
    assert float(p.predictive_log_prob(1)) == pytest.approx(math.log(2.5 / 6.5), rel=1e-14)
    assert float(p.predictive_log_prob(0)) == pytest.approx(math.log(4.0 / 6.5), rel=1e-14)


def test_sampling_expected_stats_and_kl_match_monte_carlo(mc_expected_stats, mc_kl):
    p, q = prior(), prior(2.0, 1.3)
    draws = p.sample(make_generator(3), (N,))
    assert draws.shape == (N,)
    assert_mc_mean(draws.numpy(), st.beta.mean(A, B))
    mc_expected_stats(p, (draws,))
    mc_kl(p, q, (draws,))
    assert float(p.kl(prior())) == 0.0


def test_log_normalizer_gradient_is_expected_statistics(log_normalizer_gradient):
    p = prior()
    log_normalizer_gradient(p, rtol=1e-12)
    points = torch.tensor([0.1, 0.5, 0.95], dtype=F64)
    natural = (p.natural_params() * p.sufficient_stats(points)).sum(-1) - p.log_normalizer()
    torch.testing.assert_close(p.log_prob(points), natural, rtol=1e-12, atol=1e-12)


def test_batched_priors():
    p = BetaBernoulli(torch.tensor([1.0, 2.0, 3.0], dtype=F64), torch.tensor([[1.0], [4.0]]))
    assert p.batch_shape == (2, 3)
    got = p.log_marginal_likelihood(2, 1)
    expected = st.betabinom.logpmf(2, 3, p.alpha.numpy(), p.beta.numpy()) - math.log(3)
    np.testing.assert_allclose(got.numpy(), expected, rtol=1e-12)


def test_beta_errors_are_pinned():
    with pytest.raises(ValueError, match="alpha must be > 0"):
        BetaBernoulli(-1.0, 1.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        BetaBernoulli(1.0, 0.0)
    p = prior()
    with pytest.raises(ValueError, match="successes must be >= 0"):
        p.posterior(-1, 2)
    with pytest.raises(ValueError, match=r"outcomes must lie in \[0, 1\]"):
        p.log_marginal_sequence([0, 1, 2])
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\]"):
        p.log_prob(1.5)
    with pytest.raises(ValueError, match="mode requires alpha > 1 and beta > 1"):
        p.mode()
    with pytest.raises(TypeError, match="other must be a BetaBernoulli"):
        p.kl(object())
