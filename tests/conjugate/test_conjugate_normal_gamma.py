"""Isotropic Normal-Gamma against scipy, quadrature and Monte Carlo.

Monte Carlo checks use ``N = 200_000`` fixed-seed draws and allow 5 Monte Carlo standard errors
(sample standard deviation / sqrt(N)).
"""

import math

import numpy as np
import pytest
import scipy.stats as st
import torch

from pyromodels.conjugate import NormalGamma, NormalGammaStats
from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean

N = 200_000
F64 = torch.float64
M = np.array([0.5, -1.0])
KAPPA, A, B = 0.7, 2.3, 1.6
X = np.random.default_rng(0).normal(loc=[1.0, 0.0], scale=0.8, size=(7, 2))


def prior(loc=M, kappa=KAPPA, a=A, b=B):
    return NormalGamma(torch.tensor(loc, dtype=F64), kappa, a, b)


def stats(x):
    return len(x), torch.tensor(x.sum(0)), torch.tensor((x * x).sum())


def scipy_log_prior(mu, tau, loc=M, kappa=KAPPA, a=A, b=B):
    d = len(loc)
    gauss = st.multivariate_normal.logpdf(mu, loc, np.eye(d) / (kappa * tau))
    return gauss + st.gamma.logpdf(tau, a, scale=1 / b)


def test_log_prob_matches_scipy():
    rng = np.random.default_rng(1)
    for _ in range(5):
        mu, tau = rng.normal(size=2), rng.gamma(2.0)
        got = float(prior().log_prob(torch.tensor(mu), tau))
        assert got == pytest.approx(scipy_log_prior(mu, tau), rel=1e-12)


def test_posterior_density_is_prior_times_likelihood_over_marginal():
    post = prior().posterior(*stats(X))
    log_ml = float(prior().log_marginal_likelihood(*stats(X)))
    rng = np.random.default_rng(2)
    for _ in range(5):
        mu, tau = rng.normal(loc=1.0, size=2), rng.gamma(3.0)
        lik = st.multivariate_normal.logpdf(X, mu, np.eye(2) / tau).sum()
        expected = scipy_log_prior(mu, tau) + lik - log_ml
        assert float(post.log_prob(torch.tensor(mu), tau)) == pytest.approx(expected, rel=1e-11)


def test_predictive_is_scipy_student_t():
    p = prior()
    scale_sq = B * (KAPPA + 1) / (A * KAPPA)
    ref = st.multivariate_t(loc=M, shape=scale_sq * np.eye(2), df=2 * A)
    np.testing.assert_allclose(
        p.predictive_log_prob(torch.tensor(X)).numpy(), ref.logpdf(X), rtol=1e-12
    )
    one = prior(np.array([0.3]))
    x1 = X[:, :1]
    ref1 = st.t(df=2 * A, loc=0.3, scale=math.sqrt(scale_sq))
    np.testing.assert_allclose(
        one.predictive_log_prob(torch.tensor(x1)).numpy(), ref1.logpdf(x1[:, 0]), rtol=1e-12
    )


def test_marginal_likelihood_is_product_of_sequential_predictives():
    post, total = prior(), 0.0
    for x in X:
        xt = torch.tensor(x)
        total += float(post.predictive_log_prob(xt))
        post = post.posterior(1, xt, (xt * xt).sum())
    assert float(prior().log_marginal_likelihood(*stats(X))) == pytest.approx(total, rel=1e-12)


def test_one_dimensional_marginal_likelihood_equals_quadrature(log_normal, posterior_mass):
    x = X[:4, :1]
    p = prior(np.array([0.2]))
    log_ml = float(p.log_marginal_likelihood(*stats(x)))
    post = p.posterior(*stats(x))
    tau_hi = st.gamma.ppf(1 - 1e-13, float(post.a), scale=1 / float(post.b))

    def log_integrand(mu, tau):
        # Prior times likelihood (written out by hand: scipy.stats is too slow per call here)
        # divided by the claimed marginal: integrates to 1 if the marginal is right.
        log_gamma = A * math.log(B) - math.lgamma(A) + (A - 1) * math.log(tau) - B * tau
        log_joint = (
            log_normal(mu, 0.2, KAPPA * tau)
            + log_gamma
            + sum(log_normal(v, mu, tau) for v in x[:, 0])
        )
        return log_joint - log_ml

    assert posterior_mass(log_integrand, post, tau_hi) == pytest.approx(1.0, abs=1e-7)


def test_sampling_moments_match_scipy():
    p = prior()
    mu, tau = p.sample(make_generator(0), (N,))
    assert mu.shape == (N, 2) and tau.shape == (N,)
    assert_mc_mean(tau.numpy(), st.gamma(A, scale=1 / B).mean())
    assert_mc_mean(mu.numpy(), M)
    # Var(mu_j) = E[1 / (kappa tau)] with 1 / tau ~ InvGamma(a, b).
    var = st.invgamma(A, scale=B).mean() / KAPPA
    assert_mc_mean(((mu.numpy() - M) ** 2), [var, var])


def test_expected_stats_and_kl_match_monte_carlo(mc_expected_stats, mc_kl):
    p, q = prior(), prior(np.array([0.0, 0.3]), 1.5, 3.0, 2.0)
    draws = p.sample(make_generator(1), (N,))
    assert isinstance(p.expected_stats(), NormalGammaStats)
    mc_expected_stats(p, draws)
    mc_kl(p, q, draws)
    assert float(p.kl(prior())) == 0.0


def test_log_normalizer_gradient_and_natural_form(log_normalizer_gradient):
    p = prior()
    log_normalizer_gradient(p, rtol=1e-12)
    mu, tau = torch.tensor([0.3, 0.1], dtype=F64), torch.tensor(1.7, dtype=F64)
    t = p.sufficient_stats(mu, tau)
    inner = sum((e * s).sum() for e, s in zip(p.natural_params(), t))
    natural = inner - p.log_normalizer() - math.log(2 * math.pi)
    torch.testing.assert_close(p.log_prob(mu, tau), natural, rtol=1e-12, atol=1e-12)


def test_mean_mode_and_batching():
    p = prior()
    assert float(p.mean()[1]) == pytest.approx(A / B)
    loc, tau_mode = p.mode()
    mu = torch.tensor(M)
    best = float(p.log_prob(mu, tau_mode))
    assert all(
        float(p.log_prob(mu + dm, tau_mode * f)) < best
        for dm in (torch.tensor([1e-3, 0.0]), torch.zeros(2))
        for f in (0.999, 1.001)
    )
    batch = NormalGamma(torch.zeros(3, 2, dtype=F64), torch.tensor([0.5, 1.0, 2.0]), A, B)
    post = batch.posterior(*stats(X))
    for k in range(3):
        single = NormalGamma(torch.zeros(2, dtype=F64), batch.kappa[k], A, B).posterior(*stats(X))
        torch.testing.assert_close(post.b[k], single.b)
    assert batch.predictive_log_prob(torch.tensor(X).unsqueeze(1)).shape == (7, 3)


def test_normal_gamma_errors_are_pinned():
    with pytest.raises(ValueError, match="kappa must be > 0"):
        prior(kappa=0.0)
    with pytest.raises(ValueError, match="a must be > 0"):
        prior(a=-1.0)
    with pytest.raises(ValueError, match="b must be > 0"):
        prior(b=0.0)
    with pytest.raises(ValueError, match=r"loc must have shape \(\.\.\., d\)"):
        NormalGamma(torch.tensor(0.0), 1.0, 1.0, 1.0)
    p = prior()
    with pytest.raises(ValueError, match="count must be >= 0"):
        p.posterior(-1, torch.zeros(2), 1.0)
    with pytest.raises(ValueError, match=r"sum_x must end with shape \(2,\)"):
        p.posterior(1, torch.zeros(3), 1.0)
    with pytest.raises(ValueError, match="sum_sq is inconsistent"):
        p.posterior(2, torch.tensor([10.0, 0.0]), 0.0)
    with pytest.raises(ValueError, match="tau must be > 0"):
        p.log_prob(torch.zeros(2), 0.0)
    with pytest.raises(ValueError, match="mode requires a > 1 - d/2"):
        NormalGamma(torch.zeros(1), 1.0, 0.4, 1.0).mode()


def test_posterior_equals_sequential_one_point_updates():
    batch = prior().posterior(*stats(X))
    seq = prior()
    for row in X:
        seq = seq.posterior(*stats(row[None]))
    for name in ("loc", "kappa", "a", "b"):
        assert torch.allclose(getattr(seq, name), getattr(batch, name), rtol=1e-12, atol=0)


def test_one_dimensional_posterior_matches_a_grid_posterior():
    # prior x likelihood normalised on a (mu, tau) grid fine enough that the trapezoid rule's
    # error (step^2 x curvature) is far below the 1e-4 tolerance on the moments
    x = X[:, :1]
    post = NormalGamma(torch.tensor([0.5], dtype=F64), KAPPA, A, B).posterior(*stats(x))
    mu = np.linspace(-3.0, 4.0, 1401)
    tau = np.linspace(1e-4, 6.0, 1200)
    mm, tt = np.meshgrid(mu, tau, indexing="ij")
    log_p = (st.norm.logpdf(mm, 0.5, 1 / np.sqrt(KAPPA * tt)) + st.gamma.logpdf(tt, A, scale=1 / B)
             + st.norm.logpdf(x[:, 0][:, None, None], mm, 1 / np.sqrt(tt)).sum(0))
    w = np.exp(log_p - log_p.max())
    w /= w.sum()
    mean_mu, mean_tau = float((w * mm).sum()), float((w * tt).sum())
    expected_mu, expected_tau = post.mean()
    assert mean_mu == pytest.approx(float(expected_mu[0]), abs=1e-4)
    assert mean_tau == pytest.approx(float(expected_tau), abs=1e-4)
    # and the grid's log density differences equal the closed form's
    i, j = (700, 300), (800, 500)
    grid_diff = log_p[i] - log_p[j]
    closed = (post.log_prob(torch.tensor([mu[i[0]]]), torch.tensor(tau[i[1]]))
              - post.log_prob(torch.tensor([mu[j[0]]]), torch.tensor(tau[j[1]])))
    assert float(closed) == pytest.approx(grid_diff, abs=1e-9)
