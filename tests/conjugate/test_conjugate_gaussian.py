"""The Gaussian in natural parameters against torch.distributions, autograd and Monte Carlo.

Monte Carlo checks use 200_000 fixed-seed draws and allow 5 Monte Carlo standard errors.
"""

import pytest
import torch
from torch.distributions import MultivariateNormal, kl_divergence

from pyromodels.conjugate import GaussianNatural, GaussianStats
from pyromodels.core.seeding import make_generator

F64 = torch.float64
LOC = torch.tensor([[0.5, -1.0, 2.0], [1.5, 0.0, -0.5]], dtype=F64)
COV = torch.tensor([[[1.0, 0.3, 0.1], [0.3, 2.0, -0.4], [0.1, -0.4, 0.5]],
                    [[0.4, 0.0, 0.1], [0.0, 1.0, 0.2], [0.1, 0.2, 3.0]]], dtype=F64)


def gaussian():
    return GaussianNatural.from_moments(LOC, COV)


def test_moments_round_trip_and_log_prob_matches_torch():
    q = gaussian()
    torch.testing.assert_close(q.mean(), LOC)
    torch.testing.assert_close(q.covariance(), COV)
    torch.testing.assert_close(q.precision(), torch.linalg.inv(COV))
    x = torch.tensor([[0.1, 0.2, 0.3], [-1.0, 2.0, 0.5]], dtype=F64)
    ref = MultivariateNormal(LOC, covariance_matrix=COV)
    torch.testing.assert_close(q.log_prob(x), ref.log_prob(x))
    torch.testing.assert_close(q.entropy(), ref.entropy())


def test_log_normalizer_gradient_is_expected_statistics(log_normalizer_gradient):
    log_normalizer_gradient(GaussianNatural.from_moments(LOC[1], COV[1]), rtol=1e-10)


def test_kl_matches_torch_distributions():
    p = gaussian()
    other = GaussianNatural.from_moments(LOC.flip(0) + 0.3, COV.flip(0) * 1.5)
    ref = kl_divergence(MultivariateNormal(LOC, covariance_matrix=COV),
                        MultivariateNormal(LOC.flip(0) + 0.3, covariance_matrix=COV.flip(0) * 1.5))
    torch.testing.assert_close(p.kl(other), ref)
    torch.testing.assert_close(p.kl(p), torch.zeros(2, dtype=F64), atol=1e-12, rtol=0)


def test_draws_have_the_expected_statistics(mc_expected_stats, mc_kl):
    p = gaussian()
    draws = p.sample(make_generator(3), (200_000,))
    assert draws.shape == (200_000, 2, 3)
    mc_expected_stats(p, (draws,))
    first = GaussianNatural.from_moments(LOC[0], COV[0])
    mc_kl(first, GaussianNatural.from_moments(LOC[1], COV[1]), (draws[:, 0],))


def test_rsample_is_reparameterised_in_h_and_j():
    # x = P^{-1} h + L^{-T} z: d x / d h = P^{-1} whatever z is, and the same generator state
    # gives the same z, so a draw moves with J exactly as m + L^{-T} z does.
    h = LOC[0].clone().requires_grad_(True)
    J = (-0.5 * torch.linalg.inv(COV[0])).requires_grad_(True)
    x = GaussianNatural(h, J).rsample(make_generator(0), (4,))
    jac = torch.stack([torch.autograd.grad(x[:, i].sum(), h, retain_graph=True)[0]
                       for i in range(3)])
    torch.testing.assert_close(jac / 4, COV[0])
    assert torch.autograd.grad(x.sum(), J)[0].abs().sum() > 0


def test_natural_params_round_trip():
    q = gaussian()
    eta = q.natural_params()
    assert isinstance(eta, GaussianStats)
    back = GaussianNatural.from_natural(eta)
    torch.testing.assert_close(back.mean(), LOC)


def test_bad_input_is_refused_with_the_argument_named():
    with pytest.raises(ValueError, match=r"-2 J \(the precision\) must be symmetric positive"):
        GaussianNatural(torch.zeros(2, dtype=F64), torch.eye(2, dtype=F64))
    with pytest.raises(ValueError, match="J must end with shape"):
        GaussianNatural(torch.zeros(2, dtype=F64), -torch.eye(3, dtype=F64))
    with pytest.raises(ValueError, match="h must have shape"):
        GaussianNatural(torch.tensor(0.0, dtype=F64), -torch.eye(1, dtype=F64))
