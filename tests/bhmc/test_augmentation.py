"""RBHMC's max-margin pieces: the Polson-Scott identity by quadrature, the lambda sampler's
moments and law (against scipy's geninvgauss), and the eta conditional against autograd."""

import math

import numpy as np
import pytest
import torch
from scipy import integrate, stats

from pyromodels.bhmc.augmentation import (
    eta_conditional,
    hinge_log_factor,
    lambda_mean,
    lambda_variance,
    polson_scott_log_kernel,
    sample_gaussian_precision,
    sample_lambda,
)

F64 = torch.float64


@pytest.mark.parametrize("C", [0.1, 1.0, 2.5])
@pytest.mark.parametrize("zeta", [-3.0, -0.5, 0.0, 0.5, 3.0])
def test_polson_scott_identity_by_quadrature(zeta, C):
    def kernel(lam):
        return math.exp(float(polson_scott_log_kernel(torch.tensor(lam, dtype=F64),
                                                      torch.tensor(zeta, dtype=F64), C)))

    # the integrand has an integrable lam^(-1/2) singularity at 0 (for zeta = 0) and an
    # exponential tail; split where the mass sits
    peak = max(C * abs(zeta), 1.0)
    pieces = [(0.0, peak), (peak, 20 * peak + 50)]
    total = sum(integrate.quad(kernel, a, b, epsabs=1e-13, epsrel=1e-11, limit=400)[0] for a, b in pieces)
    total += integrate.quad(kernel, 20 * peak + 50, math.inf, epsabs=1e-14)[0]
    expected = math.exp(float(hinge_log_factor(torch.tensor(zeta, dtype=F64), C)))
    assert math.isclose(total, expected, rel_tol=1e-8)
    assert math.isclose(expected, math.exp(-2 * C * max(0.0, zeta)), rel_tol=1e-15)


@pytest.mark.parametrize("b", [7.0, 0.7, 7e-3, 3e-4, 3e-6])
def test_lambda_mean_and_variance(b):
    """Mean 1 + b and variance 2 + b. With S = 200000 independent draws the sample mean's
    standard error is sqrt((2 + b) / S) and the sample variance's sqrt((m4 - s^4) / S) (m4 the
    sample fourth central moment); each z must stay below the Bonferroni bound for the 10
    statistics of this parametrisation at family-wise level 1e-3 (4.06)."""
    size, C = 200_000, 0.5
    zeta = torch.full((size,), -b / C, dtype=F64)  # negative zeta: only |zeta| matters
    lam = sample_lambda(zeta, C, torch.Generator().manual_seed(17))
    assert bool((lam > 0).all())
    bound = float(stats.norm.ppf(1 - 1e-3 / 20))
    mean, var = float(lam.mean()), float(lam.var())
    z_mean = (mean - (1 + b)) / math.sqrt((2 + b) / size)
    m4 = float(((lam - lam.mean()) ** 4).mean())
    z_var = (var - (2 + b)) / math.sqrt((m4 - var ** 2) / size)
    assert abs(z_mean) < bound and abs(z_var) < bound
    assert math.isclose(float(lambda_mean(zeta[:1], C)), 1 + b, rel_tol=1e-14)
    assert math.isclose(float(lambda_variance(zeta[:1], C)), 2 + b, rel_tol=1e-14)


@pytest.mark.parametrize("b", [0.05, 0.7, 7.0])
def test_lambda_law_matches_scipy_geninvgauss(b):
    """GIG(1/2, 1, b^2) is scipy's geninvgauss(0.5, b, scale=b). KS on 20000 draws at a fixed
    seed; a correct sampler gives p < 1e-4 with probability 1e-4."""
    lam = sample_lambda(torch.full((20000,), b, dtype=F64), 1.0, torch.Generator().manual_seed(29))
    assert stats.kstest(lam.numpy(), stats.geninvgauss(0.5, b, scale=b).cdf).pvalue > 1e-4


def test_small_b_fallback_and_exact_limit_are_chi_square_one():
    """Below the switch the draw is Gamma(1/2, rate 1/2) = chi-square(1); with switch=0 the
    closed-form route itself reduces to it at b = 0. KS at p > 1e-4 each."""
    zeta = torch.full((20000,), 1e-10, dtype=F64)
    fallback = sample_lambda(zeta, 1.0, torch.Generator().manual_seed(3))
    exact0 = sample_lambda(torch.zeros(20000, dtype=F64), 1.0, torch.Generator().manual_seed(4), switch=0.0)
    for lam in (fallback, exact0):
        assert bool((lam > 0).all())
        assert stats.kstest(lam.numpy(), stats.chi2(1).cdf).pvalue > 1e-4
    # the switch is a threshold on b = C |zeta|; with the same normals the two routes agree to
    # within the GIG's own distance from its limit
    g1, g2 = torch.Generator().manual_seed(9), torch.Generator().manual_seed(9)
    just_above = sample_lambda(torch.full((5,), 2e-8, dtype=F64), 1.0, g1)
    as_limit = sample_lambda(torch.full((5,), 2e-8, dtype=F64), 1.0, g2, switch=1.0)
    assert not torch.equal(just_above, as_limit)
    # lam_1 - y = b - y/2 + sqrt(b y + y^2/4) <= b + sqrt(b y) for a kept root (kept with
    # probability lam_1 / (lam_1 + b) > 1 - 1e-5 here)
    assert bool(((just_above - as_limit).abs() <= 2e-8 + torch.sqrt(2e-8 * as_limit)).all())


def _augmented_log_density(eta, data, C, eps0, nu0):
    """log N(eta; 0, nu0^2 I) (up to a constant) + the Polson-Scott kernels of the data in A
    (eta is their correct node) and in B (eta is their worst sibling)."""
    x_a, lam_a, p_a, x_b, lam_b, p_b = data
    zeta_a = eps0 - ((eta - p_a) * x_a).sum(-1)
    zeta_b = eps0 - ((p_b - eta) * x_b).sum(-1)
    return (-0.5 * (eta * eta).sum() / nu0 ** 2
            + polson_scott_log_kernel(lam_a, zeta_a, C).sum()
            + polson_scott_log_kernel(lam_b, zeta_b, C).sum())


def _random_data(seed, n_a=4, n_b=3, d=3):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n_a, d, dtype=F64, generator=g),
            torch.rand(n_a, dtype=F64, generator=g) * 2 + 0.1,
            torch.randn(n_a, d, dtype=F64, generator=g),
            torch.randn(n_b, d, dtype=F64, generator=g),
            torch.rand(n_b, dtype=F64, generator=g) * 2 + 0.1,
            torch.randn(n_b, d, dtype=F64, generator=g))


@pytest.mark.parametrize("nu0", [1.0, 0.6, 2.0])
def test_eta_conditional_is_the_stationary_point_and_curvature_of_the_augmented_density(nu0):
    C, eps0 = 0.7, 1.3
    data = _random_data(1)
    mean, precision = eta_conditional(*data, C=C, eps0=eps0, nu0=nu0)

    def f(eta):
        return _augmented_log_density(eta, data, C, eps0, nu0)

    grad = torch.autograd.functional.jacobian(f, mean)
    hess = torch.autograd.functional.hessian(f, mean)
    assert float(grad.abs().max()) < 1e-10
    assert torch.allclose(hess, -precision, rtol=1e-12, atol=1e-12)
    literal_mean, literal_precision = eta_conditional(*data, C=C, eps0=eps0, nu0=nu0, paper_literal=True)
    if nu0 == 1.0:
        assert torch.equal(literal_precision, precision) and torch.allclose(literal_mean, mean)
    else:
        shift = (nu0 ** 2 - nu0 ** -2) * torch.eye(3, dtype=F64)
        assert torch.allclose(literal_precision - precision, shift, rtol=1e-12, atol=1e-12)
        assert float((literal_mean - mean).abs().max()) > 1e-3


def test_eta_conditional_with_one_empty_side_and_with_no_data():
    C, eps0, nu0 = 0.4, 1.0, 1.5
    x_a, lam_a, p_a, *_ = _random_data(2)
    empty, empty_lam = torch.zeros(0, 3, dtype=F64), torch.zeros(0, dtype=F64)
    mean, precision = eta_conditional(x_a, lam_a, p_a, empty, empty_lam, empty, C=C, eps0=eps0, nu0=nu0)
    data = (x_a, lam_a, p_a, empty, empty_lam, empty)
    grad = torch.autograd.functional.jacobian(lambda e: _augmented_log_density(e, data, C, eps0, nu0), mean)
    assert float(grad.abs().max()) < 1e-10
    prior_mean, prior_precision = eta_conditional(empty, empty_lam, empty, empty, empty_lam, empty,
                                                  C=C, eps0=eps0, nu0=nu0)
    assert torch.equal(prior_mean, torch.zeros(3, dtype=F64))
    assert torch.allclose(prior_precision, torch.eye(3, dtype=F64) / nu0 ** 2)


def test_gaussian_draws_given_precision_have_the_inverse_covariance():
    """20000 draws: each mean coordinate within a Bonferroni z bound (3 + 6 statistics at level
    1e-3: 3.87) using the exact covariance; covariance entries by their normal-theory standard
    error sqrt((S_ii S_jj + S_ij^2) / n)."""
    mean, precision = eta_conditional(*_random_data(5), C=0.9, eps0=1.0, nu0=0.8)
    size = 20000
    draws = sample_gaussian_precision(mean.expand(size, 3), precision.expand(size, 3, 3),
                                      torch.Generator().manual_seed(2))
    cov = torch.linalg.inv(precision)
    bound = float(stats.norm.ppf(1 - 1e-3 / 18))
    z_mean = (draws.mean(0) - mean) / torch.sqrt(cov.diagonal() / size)
    emp = torch.cov(draws.T)
    se = torch.sqrt((cov.diagonal()[:, None] * cov.diagonal()[None, :] + cov ** 2) / size)
    assert float(z_mean.abs().max()) < bound
    assert float(((emp - cov) / se).abs().max()) < bound
    with pytest.raises(ValueError, match="precision must be symmetric positive definite"):
        sample_gaussian_precision(mean, -precision, torch.Generator())
    with pytest.raises(ValueError, match=r"precision must have shape \(3, 3\)"):
        sample_gaussian_precision(mean, precision[:2], torch.Generator())


def test_bad_input_messages():
    g = torch.Generator().manual_seed(0)
    one = torch.ones(1, dtype=F64)
    with pytest.raises(ValueError, match="C must be finite and > 0"):
        hinge_log_factor(one, 0.0)
    with pytest.raises(ValueError, match="C must be finite and > 0"):
        sample_lambda(one, -1.0, g)
    with pytest.raises(ValueError, match="C must be finite and > 0"):
        polson_scott_log_kernel(one, one, float("inf"))
    with pytest.raises(TypeError, match="C must be a real number"):
        hinge_log_factor(one, "1")
    with pytest.raises(ValueError, match="lam must be > 0"):
        polson_scott_log_kernel(torch.tensor([1.0, 0.0], dtype=F64), one, 1.0)
    with pytest.raises(ValueError, match="lam must be finite"):
        polson_scott_log_kernel(torch.tensor([np.nan], dtype=F64), one, 1.0)
    with pytest.raises(ValueError, match="zeta must be finite"):
        sample_lambda(torch.tensor([math.inf], dtype=F64), 1.0, g)
    with pytest.raises(TypeError, match="zeta must be a floating tensor"):
        hinge_log_factor(torch.tensor([1]), 1.0)
    with pytest.raises(ValueError, match="switch must be >= 0"):
        sample_lambda(one, 1.0, g, switch=-1.0)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample_lambda(one, 1.0, None)
    x_a, lam_a, p_a, x_b, lam_b, p_b = _random_data(3)
    with pytest.raises(ValueError, match="lam_A must be > 0"):
        eta_conditional(x_a, -lam_a, p_a, x_b, lam_b, p_b, C=1.0, eps0=1.0, nu0=1.0)
    with pytest.raises(ValueError, match=r"lam_B must have shape \(n_B,\) = \(3,\)"):
        eta_conditional(x_a, lam_a, p_a, x_b, lam_a, p_b, C=1.0, eps0=1.0, nu0=1.0)
    with pytest.raises(ValueError, match="eta_partner_A must have shape"):
        eta_conditional(x_a, lam_a, p_b, x_b, lam_b, p_b, C=1.0, eps0=1.0, nu0=1.0)
    with pytest.raises(ValueError, match="x_A and x_B must have the same dimension"):
        eta_conditional(x_a, lam_a, p_a, x_b[:, :2], lam_b, p_b[:, :2], C=1.0, eps0=1.0, nu0=1.0)
    with pytest.raises(ValueError, match="nu0 must be finite and > 0"):
        eta_conditional(x_a, lam_a, p_a, x_b, lam_b, p_b, C=1.0, eps0=1.0, nu0=0.0)
    with pytest.raises(ValueError, match="eps0 must be finite"):
        eta_conditional(x_a, lam_a, p_a, x_b, lam_b, p_b, C=1.0, eps0=math.nan, nu0=1.0)
    with pytest.raises(ValueError, match="C must be finite and > 0"):
        eta_conditional(x_a, lam_a, p_a, x_b, lam_b, p_b, C=0.0, eps0=1.0, nu0=1.0)
    with pytest.raises(TypeError, match="paper_literal must be a bool"):
        eta_conditional(x_a, lam_a, p_a, x_b, lam_b, p_b, C=1.0, eps0=1.0, nu0=1.0, paper_literal=1)
