"""The Normal-inverse-Wishart parametrisation ``(m, kappa, S, nu)`` against the Normal-Wishart,
autograd, scipy's inverse Wishart and Monte Carlo; the data statistics in natural coordinates;
closed-form KLs against torch.distributions.

Monte Carlo checks use fixed-seed draws and allow 5 Monte Carlo standard errors.
"""

import math

import numpy as np
import scipy.stats as st
import torch
from torch.distributions import Beta, Dirichlet, kl_divergence

from pyromodels.conjugate import (
    BetaBernoulli,
    DirichletCategorical,
    NIWStats,
    NormalGamma,
    niw_expected_stats,
    niw_from_natural,
    niw_natural_params,
    niw_to_normal_wishart,
    normal_wishart_to_niw,
)
from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean

F64 = torch.float64
M = torch.tensor([0.5, -1.0], dtype=F64)
KAPPA, NU = 0.7, 4.5
S = torch.tensor([[1.5, 0.4], [0.4, 0.8]], dtype=F64)


def niw():
    return niw_to_normal_wishart(M, KAPPA, S, NU)


def paper_log_normalizer(loc, kappa, scale, df):
    # (nu / 2)(d log 2 - log|S|) + log Gamma_d(nu / 2) - (d / 2) log kappa
    d = loc.shape[-1]
    return (0.5 * df * (d * math.log(2) - torch.logdet(scale))
            + torch.mvlgamma(torch.as_tensor(df / 2, dtype=F64), d) - 0.5 * d * math.log(kappa))


def test_conversions_round_trip_and_expected_precision_is_nu_s_inverse():
    nw = niw()
    params = normal_wishart_to_niw(nw)
    torch.testing.assert_close(params.scale, S)
    torch.testing.assert_close(params.loc, M)
    assert float(params.kappa) == KAPPA and float(params.df) == NU
    torch.testing.assert_close(nw.mean()[1], NU * torch.linalg.inv(S))
    eta = niw_natural_params(nw)
    torch.testing.assert_close(eta.precision_mean, KAPPA * M)
    torch.testing.assert_close(eta.neg_half_precision, S + KAPPA * torch.outer(M, M))
    torch.testing.assert_close(eta.neg_half_quad, torch.tensor(KAPPA, dtype=F64))
    torch.testing.assert_close(eta.neg_half_log_det, torch.tensor(NU + 2 + 2, dtype=F64))
    back = normal_wishart_to_niw(niw_from_natural(eta))
    for got, want in zip(back, params, strict=True):
        torch.testing.assert_close(got, want)


def test_log_normalizer_is_the_papers_and_its_gradient_is_the_expected_statistics():
    nw = niw()
    torch.testing.assert_close(nw.log_normalizer(), paper_log_normalizer(M, KAPPA, S, NU))
    eta = [f.clone().requires_grad_(True) for f in niw_natural_params(nw)]
    grads = torch.autograd.grad(niw_from_natural(eta).log_normalizer(), eta)
    expected = niw_expected_stats(nw)
    for g, e in zip(grads, expected, strict=True):
        torch.testing.assert_close(g, e, rtol=1e-10, atol=1e-10)
    # the paper's closed forms (its Appendix A.2)
    s_inv = torch.linalg.inv(S)
    digamma_d = sum(torch.digamma(torch.tensor((NU + 1 - i) / 2, dtype=F64)) for i in (1, 2))
    torch.testing.assert_close(expected.precision_mean, NU * s_inv @ M)
    torch.testing.assert_close(expected.neg_half_precision, -0.5 * NU * s_inv)
    torch.testing.assert_close(expected.neg_half_quad, -0.5 * (2 / KAPPA + NU * M @ s_inv @ M))
    torch.testing.assert_close(expected.neg_half_log_det,
                               0.5 * (digamma_d + 2 * math.log(2) - torch.logdet(S)))


def test_expected_statistics_match_inverse_wishart_and_normal_draws():
    n = 200_000
    rng = np.random.default_rng(7)
    sigma = st.invwishart(df=NU, scale=S.numpy()).rvs(size=n, random_state=rng)
    chol = np.linalg.cholesky(sigma / KAPPA)
    mu = M.numpy() + np.einsum("nij,nj->ni", chol, rng.standard_normal((n, 2)))
    prec = np.linalg.inv(sigma)
    prec_mu = np.einsum("nij,nj->ni", prec, mu)
    expected = niw_expected_stats(niw())
    draws = NIWStats(prec_mu, -0.5 * prec, -0.5 * np.einsum("ni,ni->n", mu, prec_mu),
                     -0.5 * np.linalg.slogdet(sigma)[1])
    for got, exact in zip(draws, expected, strict=True):
        assert_mc_mean(got, exact.numpy())


def test_kl_in_the_papers_coordinates_equals_the_normal_wishart_kl_and_monte_carlo(mc_kl):
    p, q = niw(), niw_to_normal_wishart(M + 0.5, 2.0, 0.5 * S, NU + 2)
    paper = (sum((a - b).mul(e).sum() for a, b, e in
                 zip(niw_natural_params(p), niw_natural_params(q), niw_expected_stats(p)))
             - p.log_normalizer() + q.log_normalizer())
    torch.testing.assert_close(paper, p.kl(q))
    mc_kl(p, q, p.sample(make_generator(1), (200_000,)))


def test_observation_stats_are_the_natural_parameter_update():
    x = torch.tensor([[1.0, 0.0], [0.5, 2.0], [-1.0, 0.3]], dtype=F64)
    w = torch.tensor([[0.2, 0.8], [1.0, 0.0], [0.5, 0.5]], dtype=F64)  # soft counts, K = 2
    count, sum_x, sum_xx = w.sum(0), w.T @ x, torch.einsum("nk,ni,nj->kij", w, x, x)
    nw = niw_to_normal_wishart(torch.zeros(2, 2, dtype=F64), 0.5, torch.eye(2, dtype=F64), 3.0)
    post = nw.posterior(count, sum_x, sum_xx)
    added = [a + b for a, b in zip(nw.natural_params(), nw.observation_stats(count, sum_x, sum_xx),
                                   strict=True)]
    for got, want in zip(added, post.natural_params(), strict=True):
        torch.testing.assert_close(got, want)
    ng = NormalGamma(torch.zeros(2, dtype=F64), 0.5, 2.0, 1.0)
    sum_sq = (x * x).sum()
    post = ng.posterior(3, x.sum(0), sum_sq)
    for a, b, want in zip(ng.natural_params(), ng.observation_stats(3, x.sum(0), sum_sq),
                          post.natural_params(), strict=True):
        torch.testing.assert_close(a + b, want)
    dirichlet = DirichletCategorical(torch.ones(2, dtype=F64))
    torch.testing.assert_close(dirichlet.natural_params() + dirichlet.observation_stats(count),
                               dirichlet.posterior(count).natural_params())
    beta = BetaBernoulli(torch.ones(2, dtype=F64), 2.0)
    torch.testing.assert_close(beta.natural_params() + beta.observation_stats(count, w[0]),
                               beta.posterior(count, w[0]).natural_params())


def test_dirichlet_and_beta_kl_match_torch_distributions():
    a = torch.tensor([[0.5, 2.0, 3.0], [1.0, 1.0, 4.0]], dtype=F64)
    b = torch.tensor([1.5, 0.7, 2.0], dtype=F64)
    got = DirichletCategorical(a).kl(DirichletCategorical(b))
    torch.testing.assert_close(got, kl_divergence(Dirichlet(a), Dirichlet(b.expand(2, 3))))
    p, q = BetaBernoulli(a[:, 0], a[:, 1]), BetaBernoulli(b[0], b[1])
    torch.testing.assert_close(p.kl(q), kl_divergence(Beta(a[:, 0], a[:, 1]),
                                                      Beta(b[0].expand(2), b[1].expand(2))))
