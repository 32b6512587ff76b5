"""The convergence statistics of the sampling warnings equal ArviZ's (the oracle) and need no
ArviZ import."""

import arviz as az
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from pyromodels.core.chain_stats import ess_bulk, ess_tail, rank_rhat


def _ar1(rng, chains, draws, phi, offset):
    x = np.zeros((chains, draws))
    noise = rng.normal(size=(chains, draws))
    for t in range(1, draws):
        x[:, t] = phi * x[:, t - 1] + noise[:, t]
    return x + offset * rng.normal(size=(chains, 1))


def _cases():
    rng = np.random.default_rng(0)
    yield "independent", rng.normal(size=(4, 500))
    yield "sticky", _ar1(rng, 2, 400, 0.95, 0.0)
    yield "chains apart", _ar1(rng, 3, 300, 0.5, 2.0)
    yield "odd draws", rng.normal(size=(2, 101))
    yield "ties", rng.integers(0, 3, size=(2, 250)).astype(float)
    yield "rounded", np.round(rng.normal(size=(3, 200)), 1)
    yield "one chain", _ar1(rng, 1, 300, 0.7, 0.0)
    yield "four draws", rng.normal(size=(2, 4))


def _arviz(x):
    return (float(az.rhat(x, method="rank")) if x.shape[0] > 1 else float("nan"),
            float(az.ess(x, method="bulk")), float(az.ess(x, method="tail")))


def _close(mine, theirs):
    return (np.isnan(mine) and np.isnan(theirs)) or abs(mine - theirs) <= 1e-9 * max(1.0, abs(theirs))


@pytest.mark.parametrize("name,x", list(_cases()))
def test_rank_rhat_and_bulk_and_tail_ess_equal_arviz(name, x):
    mine = (rank_rhat(x), ess_bulk(x), ess_tail(x))
    assert all(_close(m, t) for m, t in zip(mine, _arviz(x))), (name, mine, _arviz(x))


@settings(max_examples=60, deadline=None)
@given(arrays(np.int8, st.tuples(st.integers(1, 3), st.integers(4, 40)), elements=st.integers(-2, 2)))
def test_small_chains_with_many_ties_equal_arviz(x):
    x = x.astype(np.float64)
    mine = (rank_rhat(x), ess_bulk(x), ess_tail(x))
    assert all(_close(m, t) for m, t in zip(mine, _arviz(x))), (x, mine, _arviz(x))


def test_too_few_draws_or_chains_or_a_nan_give_nan():
    x = np.random.default_rng(1).normal(size=(2, 3))
    assert np.isnan(ess_bulk(x)) and np.isnan(ess_tail(x)) and np.isnan(rank_rhat(x))
    assert np.isnan(rank_rhat(np.ones((1, 50))))
    y = np.random.default_rng(2).normal(size=(2, 50))
    y[1, 7] = np.nan
    assert np.isnan(ess_bulk(y)) and np.isnan(rank_rhat(y))


def test_the_sampling_warnings_import_no_arviz(fresh_python):
    code = ("import sys, torch; from pyromodels.core.diagnostic_warnings import _diagnostics_table; "
            "t = _diagnostics_table({'m': torch.randn(2, 50, 3)}, 2); "
            "assert list(t.columns) == ['ess_bulk', 'ess_tail', 'r_hat'] and len(t) == 3; "
            "print('arviz' in sys.modules)")
    assert fresh_python(code) == "False"
