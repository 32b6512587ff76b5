"""The base measure's prior predictive (eq. 24): Student-t, Monte Carlo over NG draws, the
paper's literal form, and the posterior update the sampler relies on."""

from __future__ import annotations

import math

import pyro.distributions as pdist
import pytest
import torch

from pyromodels.bnp import new_cluster_log_predictive
from pyromodels.conjugate import NormalGamma
from pyromodels.testing import assert_mc_mean


def prior(d, kappa=0.3, a=3.0, b=2.0):
    return NormalGamma(torch.linspace(-0.5, 0.5, d, dtype=torch.float64), kappa, a, b)


def points(d, n=6, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


@pytest.mark.parametrize("d", [1, 2, 10])
def test_prior_predictive_is_multivariate_student_t(d):
    p, z = prior(d), points(d)
    scale = math.sqrt(2.0 * (0.3 + 1) / (3.0 * 0.3))
    ref = pdist.MultivariateStudentT(torch.tensor(6.0, dtype=torch.float64), p.loc,
                                     scale * torch.eye(d, dtype=torch.float64))
    torch.testing.assert_close(new_cluster_log_predictive(z, p), ref.log_prob(z), rtol=1e-12,
                               atol=1e-12)


def test_prior_predictive_is_the_monte_carlo_average_over_the_base_measure():
    # m(z) = E_{(mu, lam) ~ NG}[N(z | mu, lam^-1 I)]: the mean of the likelihood over 200,000
    # prior draws lies within 5 Monte Carlo standard errors of exp(log m(z)).
    d = 3
    p, z = prior(d), points(d, n=4, seed=1)
    mu, lam = p.sample(torch.Generator().manual_seed(2), (200_000,))
    diff = ((z[None] - mu[:, None]) ** 2).sum(-1)
    lik = torch.exp(0.5 * d * torch.log(lam[:, None] / (2 * math.pi)) - 0.5 * lam[:, None] * diff)
    assert_mc_mean(lik.numpy(), new_cluster_log_predictive(z, p).exp().numpy())


@pytest.mark.parametrize("d", [1, 2, 10])
def test_paper_literal_form_differs_exactly_when_d_exceeds_one(d):
    p, z = prior(d), points(d)
    correct = new_cluster_log_predictive(z, p)
    literal = new_cluster_log_predictive(z, p, paper_literal=True)
    gap = 0.5 * (d - 1) * math.log(1.3 / 0.3)  # ((d - 1) / 2) log(kappa' / kappa_0)
    torch.testing.assert_close(literal - correct, torch.full_like(correct, gap), rtol=0,
                               atol=1e-12)
    if d == 10:  # the worked figure: 6.6 nats at d = 10, kappa_0 = 0.3
        assert gap == pytest.approx(6.6, abs=0.01)


def test_posterior_from_statistics_equals_one_point_updates():
    p, z = prior(2), points(2, n=7, seed=4)
    post = p
    for x in z:
        post = post.posterior(1, x, (x * x).sum())
    batch = p.posterior(len(z), z.sum(0), (z * z).sum())
    for name in ("loc", "kappa", "a", "b"):
        torch.testing.assert_close(getattr(post, name), getattr(batch, name), rtol=1e-12,
                                   atol=1e-12)


def test_predictive_errors_are_pinned():
    p = prior(2)
    with pytest.raises(ValueError, match="z must be 2-dimensional"):
        new_cluster_log_predictive(torch.zeros(3, dtype=torch.float64), p)
    with pytest.raises(ValueError, match="prior has dimension 2 but z has 3 columns"):
        new_cluster_log_predictive(torch.zeros(1, 3, dtype=torch.float64), p)
    with pytest.raises(ValueError, match="z must be finite"):
        new_cluster_log_predictive(torch.tensor([[0.0, float("inf")]]), p)
    with pytest.raises(TypeError, match="prior must be a pyromodels.conjugate.NormalGamma"):
        new_cluster_log_predictive(torch.zeros(1, 2), "prior")
    with pytest.raises(ValueError, match="prior must be a single Normal-Gamma"):
        new_cluster_log_predictive(torch.zeros(1, 2), NormalGamma(torch.zeros(3, 2), 1.0, 1.0,
                                                                  1.0))
    with pytest.raises(TypeError, match="paper_literal must be a bool"):
        new_cluster_log_predictive(torch.zeros(1, 2), p, paper_literal=1)
