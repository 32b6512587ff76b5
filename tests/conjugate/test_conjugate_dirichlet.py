"""Dirichlet-categorical against scipy, numerical integration and Monte Carlo.

Monte Carlo checks use ``N = 200_000`` fixed-seed draws and allow 5 Monte Carlo standard errors
(sample standard deviation / sqrt(N)).
"""

import math

import numpy as np
import pytest
import scipy.integrate as si
import scipy.stats as st
import torch

from pyromodels.conjugate import DirichletCategorical, log_multivariate_beta
from pyromodels.core.seeding import make_generator

N = 200_000
F64 = torch.float64
ALPHA = np.array([0.7, 2.0, 1.5])
LABELS = np.array([0, 2, 2, 1, 0, 2, 1, 1, 2, 2, 0, 2])


def prior(alpha=ALPHA):
    return DirichletCategorical(torch.tensor(alpha, dtype=F64))


def test_posterior_density_is_prior_times_likelihood_over_marginal():
    post = prior().posterior(np.bincount(LABELS, minlength=3))
    counts = np.bincount(LABELS, minlength=3)
    np.testing.assert_allclose(post.concentration.numpy(), ALPHA + counts)
    log_ml = float(prior().log_marginal_sequence(torch.tensor(LABELS)))
    points = st.dirichlet.rvs(ALPHA + 1, size=20, random_state=0)
    expected = st.dirichlet.logpdf(points.T, ALPHA) + (counts * np.log(points)).sum(-1) - log_ml
    np.testing.assert_allclose(post.log_prob(torch.tensor(points)).numpy(), expected, rtol=1e-12)


def test_log_prob_matches_scipy_and_exponential_family_form():
    p = prior()
    points = torch.tensor(st.dirichlet.rvs(ALPHA, size=10, random_state=1))
    np.testing.assert_allclose(
        p.log_prob(points).numpy(), st.dirichlet.logpdf(points.numpy().T, ALPHA), rtol=1e-12
    )
    natural = (p.natural_params() * p.sufficient_stats(points)).sum(-1) - p.log_normalizer()
    torch.testing.assert_close(p.log_prob(points), natural, rtol=1e-12, atol=1e-12)


def test_marginal_likelihood_is_product_of_sequential_predictives():
    post, total = prior(), 0.0
    for z in LABELS:
        total += float(post.predictive_log_prob(torch.tensor(z)))
        post = post.posterior(torch.nn.functional.one_hot(torch.tensor(z), 3))
    assert float(prior().log_marginal_sequence(LABELS)) == pytest.approx(total, rel=1e-12)


def test_marginal_likelihood_equals_integral_over_the_simplex():
    alpha = np.array([1.5, 2.0, 2.5])
    counts = np.array([2, 0, 3])

    def integrand(p2, p1):
        p = np.array([p1, p2, 1.0 - p1 - p2])
        return st.dirichlet.pdf(p, alpha) * np.prod(p**counts)

    value, _ = si.dblquad(integrand, 0, 1, 0, lambda p1: 1 - p1, epsabs=1e-13, epsrel=1e-11)
    log_ml = prior(alpha).log_marginal_likelihood(torch.tensor(counts))
    assert float(log_ml) == pytest.approx(math.log(value), abs=1e-8)


def test_unordered_marginal_is_scipy_dirichlet_multinomial():
    counts = np.array([3, 0, 5])
    got = prior().log_marginal_likelihood(torch.tensor(counts), ordered=False)
    expected = st.dirichlet_multinomial.logpmf(counts, ALPHA, counts.sum())
    assert float(got) == pytest.approx(expected, rel=1e-12)


def test_predictive_mean_and_mode():
    p = prior(np.array([1.5, 3.0, 2.5]))
    np.testing.assert_allclose(p.mean().numpy(), st.dirichlet.mean([1.5, 3.0, 2.5]), rtol=1e-14)
    np.testing.assert_allclose(p.predictive_log_probs().exp().numpy(), p.mean().numpy())
    mode = p.mode().numpy()
    # The mode beats nearby points of the simplex under scipy's density.
    rng = np.random.default_rng(2)
    steps = rng.normal(scale=1e-3, size=(200, 3))
    steps -= steps.mean(-1, keepdims=True)
    best = st.dirichlet.logpdf(mode, [1.5, 3.0, 2.5])
    assert all(st.dirichlet.logpdf(mode + s, [1.5, 3.0, 2.5]) < best for s in steps)


def test_batched_priors_broadcast_against_counts_and_labels():
    alpha = torch.tensor([[0.5, 1.0, 2.0], [3.0, 1.0, 1.0]], dtype=F64)
    batch = DirichletCategorical(alpha)
    counts = torch.tensor([1.0, 4.0, 0.0])
    got = batch.log_marginal_likelihood(counts)
    expected = [DirichletCategorical(a).log_marginal_likelihood(counts) for a in alpha]
    torch.testing.assert_close(got, torch.stack(expected))
    labels = torch.tensor([[0], [2]])
    assert batch.predictive_log_prob(labels).shape == (2, 2)
    assert batch.sample(make_generator(0), (5,)).shape == (5, 2, 3)


def test_expected_log_probabilities_match_monte_carlo(mc_expected_stats):
    p = prior()
    draws = p.sample(make_generator(1), (N,))
    mc_expected_stats(p, (draws,))


def test_kl_matches_monte_carlo_and_vanishes_for_identical_arguments(mc_kl):
    p, q = prior(), prior(np.array([1.2, 0.8, 3.0]))
    draws = p.sample(make_generator(2), (N,))
    mc_kl(p, q, (draws,))
    assert float(p.kl(prior())) == 0.0


def test_log_normalizer_gradient_is_expected_statistics(log_normalizer_gradient):
    log_normalizer_gradient(prior(), rtol=1e-12)
    assert float(log_multivariate_beta(torch.tensor([1.0, 1.0], dtype=F64))) == 0.0


def test_dirichlet_errors_are_pinned():
    with pytest.raises(ValueError, match="concentration must be > 0"):
        DirichletCategorical(torch.tensor([1.0, 0.0]))
    with pytest.raises(ValueError, match="at least 2 categories"):
        DirichletCategorical(torch.tensor([1.0]))
    p = prior()
    with pytest.raises(ValueError, match="counts must be >= 0"):
        p.posterior(torch.tensor([1.0, -1.0, 0.0]))
    with pytest.raises(ValueError, match=r"counts must end with shape \(3,\)"):
        p.posterior(torch.ones(2))
    with pytest.raises(ValueError, match=r"labels must lie in \[0, 2\]"):
        p.log_marginal_sequence(torch.tensor([0, 3]))
    with pytest.raises(ValueError, match=r"probs must sum to 1, got sum 0\.9 "):
        p.log_prob(torch.tensor([0.5, 0.2, 0.2]))
    with pytest.raises(ValueError, match=r"probs must have rows summing to 1 \(last axis\); row probs\[1\]"):
        p.sufficient_stats(torch.tensor([[0.5, 0.3, 0.2], [0.5, 0.5, 0.5]]))
    with pytest.raises(ValueError, match=r"probs must be non-negative, found probs\[1\] = -0\.2"):
        p.log_prob(torch.tensor([0.7, -0.2, 0.5]))
    with pytest.raises(ValueError, match="mode requires every concentration > 1"):
        p.mode()
    with pytest.raises(TypeError, match="other must be a DirichletCategorical"):
        p.kl(object())
    with pytest.raises(ValueError, match="other must have event size 3"):
        p.kl(DirichletCategorical(torch.ones(4)))
