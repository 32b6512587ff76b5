"""Generator-driven samplers against scipy.

Moment checks compare a Monte Carlo mean of ``N = 200_000`` draws with the exact value and allow
5 Monte Carlo standard errors (sample standard deviation / sqrt(N)); a variance is checked as the
mean of ``(x - exact mean)^2``. Distribution shapes are checked with scipy's KS test. Every draw
comes from a fixed-seed ``torch.Generator``.
"""

import math

import numpy as np
import pytest
import scipy.special as sp
import scipy.stats as st
import torch

from pyromodels.conjugate import (
    direct_floor,
    sample_beta,
    sample_categorical,
    sample_dirichlet,
    sample_gamma,
    sample_log_gamma,
    sample_normal,
    sample_wishart,
)
from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean

N = 200_000
F64 = torch.float64


@pytest.mark.parametrize("alpha", [0.1, 1.0, 3.7, 25.0])
def test_gamma_moments_match_scipy(alpha):
    x = sample_gamma(torch.full((N,), alpha, dtype=F64), make_generator(1)).numpy()
    ref = st.gamma(alpha)
    assert_mc_mean(x, ref.mean())
    assert_mc_mean((x - ref.mean()) ** 2, ref.var())


@pytest.mark.parametrize("alpha", [0.1, 1.0, 3.7])
def test_gamma_ks_against_scipy(alpha):
    x = sample_gamma(torch.full((N,), alpha, dtype=F64), make_generator(2)).numpy()
    assert st.kstest(x, st.gamma(alpha).cdf).pvalue > 1e-3


@pytest.mark.parametrize(("alpha", "dtype"), [(0.03, F64), (0.3, F64), (0.2, torch.float32),
                                              (0.5, torch.float32)])
def test_gamma_and_beta_agree_with_scipy_on_both_sides_of_the_direct_floor(alpha, dtype):
    """Below :func:`direct_floor` the draws come from the log-space sampler, above it from
    torch's kernel: each side against scipy (the cases straddle the floor of their dtype)."""
    assert (alpha < direct_floor(dtype)) == (alpha in (0.03, 0.2))
    x = sample_gamma(torch.full((N,), alpha, dtype=dtype), make_generator(12)).double().numpy()
    assert st.kstest(x, st.gamma(alpha).cdf).pvalue > 1e-3
    y = sample_beta(torch.full((N,), alpha, dtype=dtype), 1.5, make_generator(13)).double().numpy()
    assert st.kstest(y, st.beta(alpha, 1.5).cdf).pvalue > 1e-3


def test_direct_floor_bounds_underflow_below_e_minus_30():
    # P(Gamma(alpha) < tiny) is about tiny^alpha / Gamma(alpha + 1) <= tiny^alpha
    for dtype in (F64, torch.float32):
        floor = direct_floor(dtype)
        assert math.exp(floor * math.log(torch.finfo(dtype).tiny)) == pytest.approx(math.exp(-30))
    assert direct_floor(F64) < 0.05 < 0.3 < direct_floor(torch.float32) < 0.4


def test_unchecked_draws_equal_the_checked_ones():
    """``check=False`` skips the argument checks only: the same draws from the same stream."""
    alpha = torch.tensor([[0.01, 2.0, 0.5], [3.0, 0.2, 1.0]], dtype=F64)
    logits = torch.randn(5, 3, dtype=F64, generator=make_generator(0))
    for fn, params in ((sample_gamma, (alpha,)), (sample_dirichlet, (alpha,)),
                       (sample_log_gamma, (alpha,)), (sample_beta, (alpha, alpha.flip(0))),
                       (sample_normal, (logits, logits.exp())), (sample_categorical, (logits,))):
        torch.testing.assert_close(fn(*params, make_generator(9)),
                                   fn(*params, make_generator(9), check=False), rtol=0, atol=0)


def test_log_gamma_tiny_concentration_stays_finite_with_exact_log_moments():
    alpha = 1e-3
    y = sample_log_gamma(torch.full((N,), alpha, dtype=F64), make_generator(3)).numpy()
    assert np.isfinite(y).all()
    # E[log G] = digamma(alpha), Var[log G] = trigamma(alpha).
    assert_mc_mean(y, sp.digamma(alpha))
    assert_mc_mean((y - sp.digamma(alpha)) ** 2, sp.polygamma(1, alpha))


def test_gamma_batched_shapes_and_per_entry_moments():
    alpha = torch.tensor([[0.5, 2.0], [7.0, 0.05]], dtype=F64)
    x = sample_gamma(alpha.expand(N, 2, 2), make_generator(4)).numpy()
    assert x.shape == (N, 2, 2)
    assert_mc_mean(x, alpha.numpy())


def test_dirichlet_moments_match_scipy():
    alpha = np.array([0.3, 1.0, 2.5])
    p = sample_dirichlet(torch.tensor(alpha).expand(N, 3), make_generator(5)).numpy()
    np.testing.assert_allclose(p.sum(-1), 1.0, atol=1e-12)
    assert_mc_mean(p, st.dirichlet.mean(alpha))
    assert_mc_mean((p - st.dirichlet.mean(alpha)) ** 2, st.dirichlet.var(alpha))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_dirichlet_tiny_concentration_has_no_nan(dtype):
    # Gamma(1e-3) draws underflow to zero, so normalising them directly gives 0/0; the log-space
    # normalisation must not. By symmetry each coordinate has mean 1/4.
    p = sample_dirichlet(torch.full((N, 4), 1e-3, dtype=dtype), make_generator(6))
    assert p.dtype == dtype
    assert bool(torch.isfinite(p).all())
    torch.testing.assert_close(p.sum(-1), torch.ones(N, dtype=dtype))
    assert_mc_mean(p.double().numpy(), np.full(4, 0.25))


@pytest.mark.parametrize(("a", "b"), [(0.5, 2.0), (3.0, 0.2)])
def test_beta_moments_and_ks(a, b):
    x = sample_beta(torch.full((N,), a, dtype=F64), b, make_generator(7)).numpy()
    ref = st.beta(a, b)
    assert_mc_mean(x, ref.mean())
    assert_mc_mean((x - ref.mean()) ** 2, ref.var())
    assert st.kstest(x, ref.cdf).pvalue > 1e-3


def test_categorical_frequencies_match_softmax():
    logits = torch.tensor([[0.0, 1.0, -2.0, -math.inf], [3.0, 0.5, 0.5, 0.0]], dtype=F64)
    z = sample_categorical(logits.expand(N, 2, 4), make_generator(8))
    assert z.dtype == torch.long and z.shape == (N, 2)
    assert not bool((z[:, 0] == 3).any())
    onehot = torch.nn.functional.one_hot(z, 4).double().numpy()
    probs = torch.softmax(logits, -1).numpy()
    # Indicator means; the impossible category has zero variance and must match exactly.
    assert_mc_mean(onehot[:, :, :3], probs[:, :3])
    assert_mc_mean(onehot[:, 1, 3], probs[1, 3])


def test_normal_moments():
    x = sample_normal(torch.full((N,), 2.0, dtype=F64), 3.0, make_generator(9)).numpy()
    assert_mc_mean(x, 2.0)
    assert_mc_mean((x - 2.0) ** 2, 9.0)


def _spd(d, seed):
    a = np.random.default_rng(seed).normal(size=(d, d))
    return a @ a.T + d * np.eye(d)


def test_wishart_mean_and_variance_match_scipy():
    d, df = 3, 5.5
    scale = _spd(d, 0) / 10
    tril = torch.linalg.cholesky(torch.tensor(scale))
    x = sample_wishart(df, tril.expand(N, d, d), make_generator(10)).numpy()
    ref = st.wishart(df=df, scale=scale)
    assert_mc_mean(x, ref.mean())
    assert_mc_mean((x - ref.mean()) ** 2, ref.var())


def test_wishart_diagonal_is_scaled_chi_square_with_df_degrees():
    # X_jj / W_jj ~ chi2(df) for every j; a wrong Bartlett degree of freedom breaks this.
    d, df = 4, 4.5
    scale = _spd(d, 1)
    tril = torch.linalg.cholesky(torch.tensor(scale))
    x = sample_wishart(torch.full((N,), df, dtype=F64), tril, make_generator(11)).numpy()
    for j in (0, d - 1):
        assert st.kstest(x[:, j, j] / scale[j, j], st.chi2(df).cdf).pvalue > 1e-3


def test_one_dimensional_wishart_is_scaled_chi_square():
    x = sample_wishart(2.5, torch.tensor([[1.5]], dtype=F64).expand(N, 1, 1), make_generator(12))
    assert st.kstest(x[:, 0, 0].numpy(), st.chi2(2.5, scale=1.5**2).cdf).pvalue > 1e-3


def test_same_seed_reproduces_and_different_seed_differs():
    alpha = torch.full((50, 3), 0.7, dtype=F64)
    tril = torch.eye(2, dtype=F64).expand(10, 2, 2)
    draws = {
        "gamma": lambda g: sample_gamma(alpha, g),
        "dirichlet": lambda g: sample_dirichlet(alpha, g),
        "beta": lambda g: sample_beta(alpha, 2.0, g),
        "categorical": lambda g: sample_categorical(alpha, g),
        "normal": lambda g: sample_normal(alpha, 1.0, g),
        "wishart": lambda g: sample_wishart(3.0, tril, g),
    }
    for name, draw in draws.items():
        assert torch.equal(draw(make_generator(42)), draw(make_generator(42))), name
        assert not torch.equal(draw(make_generator(42)), draw(make_generator(43))), name


def test_global_generator_and_device_follow_inputs():
    x = sample_gamma(torch.ones(5, dtype=torch.float32))
    assert x.dtype == torch.float32 and x.device.type == "cpu" and bool((x > 0).all())


def test_sampler_errors_are_pinned():
    with pytest.raises(ValueError, match="concentration must be > 0"):
        sample_gamma(torch.tensor([1.0, -1.0]))
    with pytest.raises(ValueError, match="concentration must be finite"):
        sample_gamma(torch.tensor([1.0, math.nan]))
    with pytest.raises(ValueError, match="at least 2 categories"):
        sample_dirichlet(torch.ones(3, 1))
    with pytest.raises(ValueError, match="b must be > 0"):
        sample_beta(1.0, 0.0)
    with pytest.raises(ValueError, match="scale must be > 0"):
        sample_normal(0.0, -1.0)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sample_gamma(torch.ones(2), generator=0)
    with pytest.raises(ValueError, match="logits must not contain NaN"):
        sample_categorical(torch.tensor([0.0, math.nan]))
    with pytest.raises(ValueError, match="at least one finite entry"):
        sample_categorical(torch.full((2, 3), -math.inf))
    with pytest.raises(TypeError, match="logits must be a floating tensor"):
        sample_categorical(torch.tensor([0, 1]))
    with pytest.raises(ValueError, match=r"df must be > d - 1 = 2"):
        sample_wishart(2.0, torch.eye(3))
    with pytest.raises(ValueError, match="lower triangular with a positive diagonal"):
        sample_wishart(5.0, torch.ones(2, 2))
    with pytest.raises(ValueError, match=r"scale_tril must have shape \(\.\.\., d, d\)"):
        sample_wishart(5.0, torch.ones(2, 3))
