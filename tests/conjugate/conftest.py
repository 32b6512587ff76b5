"""Checks shared by the conjugate-family tests: exponential-family identities against Monte Carlo
and autograd, and a quadrature of a one-dimensional Gaussian posterior.

Monte Carlo checks go through :func:`pyromodels.testing.assert_mc_mean`, which allows ``n_se``
(default 5) Monte Carlo standard errors.
"""

from __future__ import annotations

import math

import pytest
import scipy.integrate as si
import torch

from pyromodels.testing import assert_mc_mean


def _fields(x) -> tuple:
    """The tensors of a statistic: one tensor, or the fields of a named tuple."""
    return (x,) if isinstance(x, torch.Tensor) else tuple(x)


def _mc_expected_stats(prior, draws: tuple) -> None:
    # E[T(theta)] in closed form against the Monte Carlo mean of T over draws from the prior.
    stats = prior.sufficient_stats(*draws)
    for got, exact in zip(_fields(stats), _fields(prior.expected_stats()), strict=True):
        assert_mc_mean(got.numpy(), exact.numpy())


def _mc_kl(prior, other, draws: tuple) -> None:
    # KL(p || q) = E_p[log p - log q], with the draws from p.
    log_ratio = prior.log_prob(*draws) - other.log_prob(*draws)
    assert_mc_mean(log_ratio.numpy(), float(prior.kl(other)))


def _log_normalizer_gradient(prior, rtol: float) -> None:
    # dA / d eta = E[T]: differentiate A at eta through from_natural.
    eta = [f.clone().requires_grad_(True) for f in _fields(prior.natural_params())]
    arg = eta[0] if isinstance(prior.natural_params(), torch.Tensor) else eta
    grads = torch.autograd.grad(type(prior).from_natural(arg).log_normalizer(), eta)
    for g, e in zip(grads, _fields(prior.expected_stats()), strict=True):
        torch.testing.assert_close(g, e, rtol=rtol, atol=rtol)


def _log_normal(v: float, mean: float, precision: float) -> float:
    return 0.5 * math.log(precision / (2 * math.pi)) - 0.5 * precision * (v - mean) ** 2


def _posterior_mass(log_integrand, post, precision_hi: float) -> float:
    """``int int exp(log_integrand(mu, lam)) dmu dlam`` over ``lam`` in ``(1e-12, precision_hi)``
    and ``mu`` within 12 conditional standard deviations ``1 / sqrt(kappa_n lam)`` of the
    posterior mean of the one-dimensional Gaussian-mean prior ``post``."""
    m_n, k_n = float(post.loc[0]), float(post.kappa)

    def width(lam):
        return 12 / math.sqrt(k_n * lam)

    value, _ = si.dblquad(
        lambda mu, lam: math.exp(log_integrand(mu, lam)),
        1e-12,
        precision_hi,
        lambda lam: m_n - width(lam),
        lambda lam: m_n + width(lam),
        epsabs=1e-11,
        epsrel=1e-10,
    )
    return value


@pytest.fixture
def mc_expected_stats():
    """``f(prior, draws)``: assert ``prior.expected_stats()`` equals the Monte Carlo mean of
    ``prior.sufficient_stats(*draws)`` field by field, ``draws`` being a tuple of prior draws."""
    return _mc_expected_stats


@pytest.fixture
def mc_kl():
    """``f(prior, other, draws)``: assert ``prior.kl(other)`` equals the Monte Carlo mean of
    ``log prior(theta) - log other(theta)`` over the prior draws ``draws`` (a tuple)."""
    return _mc_kl


@pytest.fixture
def log_normalizer_gradient():
    """``f(prior, rtol)``: assert the autograd gradient of the log normaliser with respect to
    the natural parameters equals ``prior.expected_stats()`` (rtol = atol = ``rtol``)."""
    return _log_normalizer_gradient


@pytest.fixture
def log_normal():
    """``f(v, mean, precision)``: log density of ``N(mean, 1 / precision)`` at ``v``."""
    return _log_normal


@pytest.fixture
def posterior_mass():
    """``f(log_integrand, post, precision_hi)``: a double quadrature over ``(mu, precision)``
    around the posterior ``post`` (see :func:`_posterior_mass`)."""
    return _posterior_mass
