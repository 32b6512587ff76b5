"""The Monte Carlo mean check used by the conjugate tests, against a hand computation."""

import math

import numpy as np
import pytest
import torch

from pyromodels.core.seeding import make_generator
from pyromodels.testing import assert_mc_mean

# x = (0, 1, 2, 3): mean 1.5, sample variance 5/3, standard error sqrt(5/3) / 2.
X = np.array([0.0, 1.0, 2.0, 3.0])
SE = math.sqrt(5.0 / 3.0) / 2.0


def test_threshold_is_n_se_standard_errors_on_either_side():
    for n_se in (1.0, 2.5):
        assert_mc_mean(X, 1.5 + n_se * SE * (1 - 1e-12), n_se=n_se)
        assert_mc_mean(X, 1.5 - n_se * SE * (1 - 1e-12), n_se=n_se)
        with pytest.raises(AssertionError, match="more than"):
            assert_mc_mean(X, 1.5 + n_se * SE * (1 + 1e-12), n_se=n_se)
        with pytest.raises(AssertionError, match="more than"):
            assert_mc_mean(X, 1.5 - n_se * SE * (1 + 1e-12), n_se=n_se)


def test_each_entry_is_judged_and_the_worst_is_named():
    x = np.stack([X, 10 * X, X + 7], axis=1)  # means 1.5, 15, 8.5; standard errors SE, 10 SE, SE
    assert_mc_mean(x, [1.5, 15.0 + 40 * SE, 8.5])
    with pytest.raises(
        AssertionError,
        match=r"at 2 of 3 entries; worst at index \(2,\): mean 8\.5, exact 0, .* \(N = 4\)",
    ):
        assert_mc_mean(x, [1.5 + 6 * SE, 15.0, 0.0])


def test_accepts_cpu_tensors_and_broadcasts_the_exact_values():
    # 200_000 standard normal draws: the check passes at the true means (a failure here has
    # probability about 6e-7 per entry) and fails at an offset of 0.05 (22 standard errors).
    draws = torch.randn(200_000, 2, 3, generator=make_generator(0))
    assert_mc_mean(draws, 0.0)
    assert_mc_mean(draws, np.zeros(3))
    with pytest.raises(AssertionError, match="at 6 of 6 entries"):
        assert_mc_mean(draws, 0.05)


def test_constant_or_nan_samples():
    assert_mc_mean(np.ones(5), 1.0)
    with pytest.raises(AssertionError, match="at 1 of 1 entries"):
        assert_mc_mean(np.ones(5), 1.0 + 1e-9)
    with pytest.raises(AssertionError, match="mean nan"):
        assert_mc_mean(np.array([0.0, np.nan, 1.0]), 0.5)


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="samples must hold at least 2 draws along axis 0"):
        assert_mc_mean(np.ones(1), 1.0)
    with pytest.raises(ValueError, match="samples must hold at least 2 draws along axis 0"):
        assert_mc_mean(np.float64(1.0), 1.0)
    with pytest.raises(ValueError, match=r"exact must broadcast to the shape of one draw \(2,\)"):
        assert_mc_mean(np.ones((5, 2)), [1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="n_se must be > 0"):
        assert_mc_mean(X, 1.5, n_se=0.0)
