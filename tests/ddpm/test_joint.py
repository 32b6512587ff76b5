"""The new-cluster predictive of eq. 24 with the DDPM prior's base measure: the Student-t with the
prior's hyperparameters, and the worked figure for the paper-literal term at MNIST's preset.
(The predictive itself, its Monte Carlo check and the exact paper-literal gap at any d are tested
on :func:`pyromodels.bnp.new_cluster_log_predictive` in tests/bnp.)"""

import math

import pyro.distributions as dist
import pytest
import torch

from pyromodels.bnp import new_cluster_log_predictive
from pyromodels.ddpm import DPMixturePrior

PRIOR = DPMixturePrior(mu0=(0.3, -0.2), kappa0=0.3, alpha0=3.0, beta0=2.0)


def test_predictive_of_the_prior_base_measure_is_the_multivariate_student_t():
    # df 2 alpha0 = 6, location mu0, scale beta0 (kappa0 + 1) / (alpha0 kappa0) I
    z = torch.tensor([[0.0, 0.0], [1.5, -2.0], [4.0, 3.0]], dtype=torch.float64)
    s = math.sqrt(2.0 * 1.3 / (3.0 * 0.3))
    t = dist.MultivariateStudentT(6.0, torch.tensor([0.3, -0.2], dtype=torch.float64),
                                  s * torch.eye(2, dtype=torch.float64))
    got = new_cluster_log_predictive(z, PRIOR.normal_gamma(2))
    torch.testing.assert_close(got, t.log_prob(z), rtol=1e-12, atol=1e-12)


def test_spec_value_of_the_paper_literal_gap_for_mnist():
    # notes: the (1/2) term inflates the new-cluster log-weight by ((d-1)/2) log((kappa0+1)/kappa0)
    # = 4.5 log(1.3/0.3) = 6.599 nats at d = 10 with the MNIST preset's kappa0 = 0.3
    ng = DPMixturePrior.paper_preset("mnist").normal_gamma(10)
    z = torch.zeros(1, 10, dtype=torch.float64)
    gap = new_cluster_log_predictive(z, ng, paper_literal=True) - new_cluster_log_predictive(z, ng)
    assert float(gap) == pytest.approx(6.599, abs=1e-3)
    # exact to rounding: each log density sums terms like alpha' log beta' ~ 1e4 * 12.4, whose
    # float64 rounding is ~3e-11, so 1e-9 leaves room while a wrong factor misses by >= 0.7
    assert float(gap) == pytest.approx(4.5 * math.log(1.3 / 0.3), abs=1e-9)
