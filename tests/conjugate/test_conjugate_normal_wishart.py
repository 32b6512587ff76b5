"""Normal-Wishart against torch.distributions, scipy, quadrature and Monte Carlo.

Monte Carlo checks use ``N = 200_000`` fixed-seed draws and allow 5 Monte Carlo standard errors
(sample standard deviation / sqrt(N)).
"""

import math

import numpy as np
import pytest
import scipy.stats as st
import torch
from torch.distributions import MultivariateNormal, Wishart

from pyromodels.conjugate import (
    NormalGamma,
    NormalWishart,
    NormalWishartStats,
    gaussian_stats,
)
from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean

N = 200_000
F64 = torch.float64
M = np.array([0.5, -1.0])
KAPPA, NU = 0.8, 4.5
W = np.array([[0.6, 0.2], [0.2, 0.4]])
X = np.random.default_rng(0).multivariate_normal([1.0, 0.0], [[1.0, 0.5], [0.5, 2.0]], size=6)


def prior(loc=M, kappa=KAPPA, nu=NU, scale=W):
    return NormalWishart(torch.tensor(loc, dtype=F64), kappa, nu, torch.tensor(scale))


def stats(x):
    x = torch.tensor(x)
    return len(x), x.sum(0), x.T @ x


def random_points(seed, count=5):
    rng = np.random.default_rng(seed)
    lams = st.wishart.rvs(df=5, scale=W, size=count, random_state=rng)
    return rng.normal(size=(count, 2)), lams


def scipy_log_prior(mu, lam):
    gauss = st.multivariate_normal.logpdf(mu, M, np.linalg.inv(KAPPA * lam))
    return gauss + st.wishart.logpdf(lam, df=NU, scale=W)


def test_log_prob_matches_torch_distributions_and_inverse_wishart():
    mu, lam = random_points(1)
    p = prior()
    got = p.log_prob(torch.tensor(mu), torch.tensor(lam))
    lam_t = torch.tensor(lam)
    ref = Wishart(torch.tensor(NU, dtype=F64), covariance_matrix=torch.tensor(W)).log_prob(lam_t)
    ref = ref + MultivariateNormal(torch.tensor(M), precision_matrix=KAPPA * lam_t).log_prob(
        torch.tensor(mu)
    )
    torch.testing.assert_close(got, ref, rtol=1e-12, atol=1e-12)
    # Sigma = Lambda^{-1} ~ InvWishart(nu, W^{-1}); the Jacobian of inversion is |Lambda|^-(d+1).
    for m_i, l_i, g_i in zip(mu, lam, got.numpy()):
        inv = st.invwishart.logpdf(np.linalg.inv(l_i), df=NU, scale=np.linalg.inv(W))
        expected = (
            inv
            - 3 * np.linalg.slogdet(l_i)[1]
            + st.multivariate_normal.logpdf(m_i, M, np.linalg.inv(KAPPA * l_i))
        )
        assert g_i == pytest.approx(expected, rel=1e-11)
    inv_w = torch.tensor(np.linalg.inv(W))
    alt = NormalWishart.from_inverse_scale(torch.tensor(M), KAPPA, NU, inv_w)
    torch.testing.assert_close(alt.log_prob(torch.tensor(mu), lam_t), got)


def test_posterior_density_is_prior_times_likelihood_over_marginal():
    post = prior().posterior(*stats(X))
    log_ml = float(prior().log_marginal_likelihood(*stats(X)))
    mu, lam = random_points(2)
    for m_i, l_i in zip(mu, lam):
        lik = st.multivariate_normal.logpdf(X, m_i, np.linalg.inv(l_i)).sum()
        expected = scipy_log_prior(m_i, l_i) + lik - log_ml
        got = float(post.log_prob(torch.tensor(m_i), torch.tensor(l_i)))
        assert got == pytest.approx(expected, rel=1e-11)


def test_predictive_is_scipy_multivariate_t():
    p = prior()
    df = NU - 2 + 1
    shape = (KAPPA + 1) / (KAPPA * df) * np.linalg.inv(W)
    ref = st.multivariate_t(loc=M, shape=shape, df=df)
    np.testing.assert_allclose(
        p.predictive_log_prob(torch.tensor(X)).numpy(), ref.logpdf(X), rtol=1e-12
    )


def test_marginal_likelihood_is_product_of_sequential_predictives():
    post, total = prior(), 0.0
    for x in torch.tensor(X):
        total += float(post.predictive_log_prob(x))
        post = post.posterior(1, x, torch.outer(x, x))
    assert float(prior().log_marginal_likelihood(*stats(X))) == pytest.approx(total, rel=1e-12)


def test_one_dimensional_marginal_likelihood_equals_quadrature(log_normal, posterior_mass):
    x = X[:4, :1]
    p = NormalWishart(torch.tensor([0.2], dtype=F64), KAPPA, 3.0, torch.tensor([[0.5]]))
    log_ml = float(p.log_marginal_likelihood(*stats(x)))
    post = p.posterior(*stats(x))
    # A one-dimensional Wishart(nu, w) is Gamma(nu / 2, rate 1 / (2 w)).
    lam_hi = st.gamma.ppf(1 - 1e-13, float(post.nu) / 2, scale=2 * float(post.scale[0, 0]))

    def log_integrand(mu, lam):
        # Prior times likelihood over the claimed marginal: integrates to 1 if it is right.
        log_w = (
            (0.5 * 3.0 - 1) * math.log(lam)
            - lam / (2 * 0.5)
            - math.lgamma(1.5)
            - 1.5 * math.log(2 * 0.5)
        )
        log_joint = (
            log_normal(mu, 0.2, KAPPA * lam) + log_w + sum(log_normal(v, mu, lam) for v in x[:, 0])
        )
        return log_joint - log_ml

    assert posterior_mass(log_integrand, post, lam_hi) == pytest.approx(1.0, abs=1e-7)


def test_one_dimensional_case_agrees_with_normal_gamma():
    # d = 1: Lambda ~ Wishart(nu, w) is tau ~ Gamma(nu / 2, rate 1 / (2 w)).
    nw = NormalWishart(torch.tensor([0.2], dtype=F64), KAPPA, 3.0, torch.tensor([[0.5]]))
    ng = NormalGamma(torch.tensor([0.2], dtype=F64), KAPPA, 1.5, 1.0)
    nw2 = NormalWishart(torch.tensor([-0.4], dtype=F64), 2.0, 5.0, torch.tensor([[0.1]]))
    ng2 = NormalGamma(torch.tensor([-0.4], dtype=F64), 2.0, 2.5, 5.0)
    x = torch.tensor(X[:, :1])
    n, s, ss = stats(X[:, :1])
    torch.testing.assert_close(
        nw.log_marginal_likelihood(n, s, ss), ng.log_marginal_likelihood(n, s, ss[0, 0])
    )
    torch.testing.assert_close(nw.predictive_log_prob(x), ng.predictive_log_prob(x))
    torch.testing.assert_close(nw.kl(nw2), ng.kl(ng2))
    torch.testing.assert_close(
        nw.log_prob(x[0], torch.tensor([[1.3]])), ng.log_prob(x[0], torch.tensor(1.3))
    )


def test_sampling_moments_match_scipy():
    p = prior()
    mu, lam = p.sample(make_generator(0), (N,))
    assert mu.shape == (N, 2) and lam.shape == (N, 2, 2)
    ref = st.wishart(df=NU, scale=W)
    assert_mc_mean(lam.numpy(), ref.mean())
    assert_mc_mean((lam.numpy() - ref.mean()) ** 2, ref.var())
    assert_mc_mean(mu.numpy(), M)
    # Cov(mu) = E[(kappa Lambda)^{-1}] = E[Sigma] / kappa with Sigma ~ InvWishart(nu, W^{-1}).
    cov = st.invwishart(df=NU, scale=np.linalg.inv(W)).mean() / KAPPA
    centred = mu.numpy() - M
    assert_mc_mean(centred[:, :, None] * centred[:, None, :], cov)


def test_expected_stats_and_kl_match_monte_carlo(mc_expected_stats, mc_kl):
    p = prior()
    q = prior(np.array([0.0, 0.3]), 1.5, 6.0, np.array([[0.3, -0.1], [-0.1, 0.5]]))
    draws = p.sample(make_generator(1), (N,))
    assert isinstance(p.expected_stats(), NormalWishartStats)
    mc_expected_stats(p, draws)
    mc_kl(p, q, draws)
    assert float(p.kl(prior())) == 0.0


def test_log_normalizer_gradient_and_natural_form(log_normalizer_gradient):
    p = prior()
    log_normalizer_gradient(p, rtol=1e-10)
    mu, lam = random_points(3, 2)
    t = p.sufficient_stats(torch.tensor(mu[0]), torch.tensor(lam[0]))
    inner = sum((e * s).sum() for e, s in zip(p.natural_params(), t))
    natural = inner - p.log_normalizer() - math.log(2 * math.pi)
    torch.testing.assert_close(
        p.log_prob(torch.tensor(mu[0]), torch.tensor(lam[0])), natural, rtol=1e-12, atol=1e-12
    )


def test_mean_and_mode():
    p = prior()
    np.testing.assert_allclose(p.mean()[1].numpy(), st.wishart(df=NU, scale=W).mean())
    loc, lam = p.mode()
    np.testing.assert_allclose(lam.numpy(), (NU - 2) * W, rtol=1e-14)
    mu = loc.clone().requires_grad_(True)
    lam = lam.clone().requires_grad_(True)
    g_mu, g_lam = torch.autograd.grad(p.log_prob(mu, lam), (mu, lam))
    torch.testing.assert_close(g_mu, torch.zeros(2, dtype=F64), atol=1e-12, rtol=0)
    torch.testing.assert_close(g_lam + g_lam.mT, torch.zeros(2, 2, dtype=F64), atol=1e-12, rtol=0)


def test_batched_posterior_from_component_statistics():
    z = np.array([0, 1, 1, 2, 0, 1])
    s = gaussian_stats(torch.tensor(X), torch.tensor(z), 4)
    post = prior().posterior(s.counts, s["sum_x"], s["sum_xx"])
    assert post.batch_shape == (4,)
    for k in range(4):
        single = prior().posterior(*stats(X[z == k]))
        for name in ("loc", "kappa", "nu", "scale"):
            torch.testing.assert_close(getattr(post, name)[k], getattr(single, name))
    lp = post.predictive_log_prob(torch.tensor(X).unsqueeze(1))
    assert lp.shape == (6, 4)


def test_normal_wishart_errors_are_pinned():
    with pytest.raises(ValueError, match="kappa must be > 0"):
        prior(kappa=-1.0)
    with pytest.raises(ValueError, match=r"nu must be > d - 1 = 1"):
        prior(nu=1.0)
    with pytest.raises(ValueError, match=r"scale \(W\) must be symmetric positive definite"):
        prior(scale=np.array([[1.0, 0.5], [0.0, 1.0]]))
    with pytest.raises(ValueError, match=r"scale \(W\) must be symmetric positive definite"):
        prior(scale=np.array([[1.0, 2.0], [2.0, 1.0]]))
    with pytest.raises(ValueError, match=r"scale \(W\) must end with shape \(2, 2\)"):
        prior(scale=np.eye(3))
    p = prior()
    with pytest.raises(ValueError, match="precision must be symmetric positive definite"):
        p.log_prob(torch.zeros(2), -torch.eye(2))
    with pytest.raises(ValueError, match=r"sum_xx must end with shape \(2, 2\)"):
        p.posterior(1, torch.zeros(2), torch.zeros(3, 3))
    with pytest.raises(ValueError, match="sum_xx is inconsistent"):
        p.posterior(2, torch.tensor([10.0, 0.0]), torch.zeros(2, 2))
    with pytest.raises(ValueError, match="mode requires nu > d = 2"):
        prior(nu=1.5).mode()
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        p.sample(generator=1)
