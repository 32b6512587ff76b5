"""The new-cluster predictive of eq. 24 (corrected and paper-literal) against the Student-t,
the Normal-Gamma module and a Monte Carlo integral over the base measure."""

import math

import pyro.distributions as dist
import pytest
import torch

from pyromodels.ddpm import DPMixturePrior, new_cluster_log_predictive

PRIOR = DPMixturePrior(mu0=(0.3, -0.2), kappa0=0.3, alpha0=3.0, beta0=2.0)


def test_predictive_is_the_multivariate_student_t():
    z = torch.tensor([[0.0, 0.0], [1.5, -2.0], [4.0, 3.0]])
    s = math.sqrt(2.0 * 1.3 / (3.0 * 0.3))
    t = dist.MultivariateStudentT(6.0, torch.tensor([0.3, -0.2]), s * torch.eye(2))
    got = new_cluster_log_predictive(z, PRIOR)
    assert torch.allclose(got, t.log_prob(z), rtol=1e-12, atol=1e-12)
    assert torch.allclose(got, PRIOR.normal_gamma(2).predictive_log_prob(z), rtol=1e-12, atol=1e-12)


def test_predictive_matches_monte_carlo_over_the_base_measure():
    # log m(z) = log E[N(z | mu, lam^-1 I)] under (mu, lam) ~ NG. With R draws the relative sd of
    # the mean of w = N(z | mu, lam^-1 I) is sd(w) / (mean(w) sqrt(R)); by the delta method that
    # is the sd of the log of the mean, so 4 of them bound the error (estimated from the draws).
    z = torch.tensor([1.0, 0.5])
    mu, lam = PRIOR.normal_gamma(2).sample(torch.Generator().manual_seed(3), (200_000,))
    w = torch.exp(dist.Normal(mu, torch.rsqrt(lam).unsqueeze(-1)).log_prob(z).sum(-1))
    rel_sd = float(w.std() / w.mean()) / math.sqrt(w.shape[0])
    assert abs(math.log(float(w.mean())) - float(new_cluster_log_predictive(z, PRIOR))) < 4 * rel_sd


@pytest.mark.parametrize("dim", [1, 2, 10])
def test_paper_literal_kappa_term_adds_d_minus_one_halves_log_ratio(dim):
    prior = DPMixturePrior(kappa0=0.3, alpha0=3.0, beta0=2.0)
    z = torch.linspace(-1.0, 1.0, dim)
    gap = new_cluster_log_predictive(z, prior, paper_literal=True) - new_cluster_log_predictive(z, prior)
    assert float(gap) == pytest.approx((dim - 1) / 2 * math.log(1.3 / 0.3), abs=1e-12)


def test_spec_value_of_the_gap_for_mnist():
    # notes: the (1/2) term inflates the new-cluster log-weight by 6.60 nats at d = 10, kappa0 = 0.3
    prior = DPMixturePrior.paper_preset("mnist")
    z = torch.zeros(10)
    gap = new_cluster_log_predictive(z, prior, paper_literal=True) - new_cluster_log_predictive(z, prior)
    assert float(gap) == pytest.approx(6.599, abs=1e-3)


def test_bad_input():
    with pytest.raises(TypeError, match="paper_literal must be a bool"):
        new_cluster_log_predictive(torch.zeros(2), PRIOR, paper_literal=1)
    with pytest.raises(ValueError, match="z must have a last axis"):
        new_cluster_log_predictive(torch.tensor(1.0), PRIOR)
    with pytest.raises(ValueError, match="mu0 has length 2 but dim is 3"):
        new_cluster_log_predictive(torch.zeros(3), PRIOR)
