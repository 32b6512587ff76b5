"""Properties of the Gaussian mixture's data contract (``GaussianMixtureModel.prepare``).

Random valid ``(N, d)`` data pass through unchanged and get a proper prior (finite, right
shapes, a symmetric positive definite ``Psi``) that follows the data when they are shifted.
Given hyperparameters are kept as given. Random invalid data or hyperparameters raise
ValueError or TypeError naming the argument, never anything else.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.mixture import GaussianMixtureModel

PROFILE = settings.get_profile("properties")


@st.composite
def mixture_data(draw, scale=None):
    """``(num_components, x)``: float64 or float32 data ``(N, d)`` with ``N >= max(K, 2)``
    (one point has no spread for the default prior to take its scale from)."""
    k = draw(st.integers(1, 4))
    n = draw(st.integers(max(k, 2), 12))
    d = draw(st.integers(1, 4))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    dtype = draw(st.sampled_from([torch.float64, torch.float32]))
    x = (torch.randn(n, d, generator=gen, dtype=torch.float64) * 3 + 1).to(dtype)
    return k, x


def assert_proper_prior(prior, d: int, dtype) -> None:
    for value in (prior.weight_concentration, prior.mean_prior, prior.mean_precision,
                  prior.degrees_of_freedom, prior.covariance_prior):
        assert value.dtype == dtype and bool(torch.isfinite(value).all())
    assert prior.mean_prior.shape == (d,) and prior.covariance_prior.shape == (d, d)
    psi = prior.covariance_prior
    assert torch.allclose(psi, psi.T, rtol=1e-5, atol=0)  # xc.T @ xc: symmetric up to rounding
    assert int(torch.linalg.cholesky_ex(psi.double()).info) == 0
    assert float(prior.degrees_of_freedom) > d - 1


@PROFILE
@given(mixture_data(), st.sampled_from(["tensor", "numpy", "list"]))
def test_valid_data_pass_unchanged_with_a_proper_default_prior(case, kind):
    k, x = case
    given_x = {"tensor": x, "numpy": x.numpy(), "list": x.tolist()}[kind]
    data = GaussianMixtureModel(k).prepare(given_x)
    expected_dtype = x.dtype if kind != "list" else torch.get_default_dtype()
    assert data.x.dtype == expected_dtype
    assert torch.equal(data.x, x.to(expected_dtype))
    assert (data.num_points, data.dim) == tuple(x.shape)
    assert_proper_prior(data.prior, x.shape[1], expected_dtype)
    assert float(data.prior.degrees_of_freedom) == x.shape[1] + 2
    assert torch.allclose(data.prior.mean_prior, data.x.mean(0))


@PROFILE
@given(mixture_data(), st.floats(-1e3, 1e3))
def test_the_default_prior_follows_a_shift_of_the_data(case, shift):
    k, x = case
    x = x.double()
    base = GaussianMixtureModel(k).prepare(x).prior
    moved = GaussianMixtureModel(k).prepare(x + shift).prior
    assert torch.allclose(moved.mean_prior, base.mean_prior + shift, rtol=1e-9, atol=1e-9)
    assert torch.allclose(moved.covariance_prior, base.covariance_prior, rtol=1e-6,
                          atol=1e-9 * (1 + abs(shift)) ** 2)


@st.composite
def hyperparameters(draw, d: int):
    """Valid hyperparameters for dimension ``d`` (``Psi`` built as ``A A^T + I``)."""
    a = np.asarray(draw(st.lists(st.floats(-2, 2), min_size=d * d, max_size=d * d))).reshape(d, d)
    return {
        "weight_concentration": draw(st.floats(0.05, 20)),
        "mean_prior": draw(st.lists(st.floats(-5, 5), min_size=d, max_size=d)),
        "mean_precision": draw(st.floats(0.01, 50)),
        "degrees_of_freedom": draw(st.floats(d - 0.5, d + 20)),
        "covariance_prior": (a @ a.T + np.eye(d)).tolist(),
    }


@PROFILE
@given(mixture_data(), st.data())
def test_given_hyperparameters_are_kept_as_given(case, data):
    k, x = case
    x = x.double()
    hyper = data.draw(hyperparameters(x.shape[1]))
    prior = GaussianMixtureModel(k, **hyper).prepare(x).prior
    assert_proper_prior(prior, x.shape[1], torch.float64)
    for name in ("weight_concentration", "mean_precision", "degrees_of_freedom"):
        assert float(getattr(prior, name)) == hyper[name]
    assert prior.mean_prior.tolist() == hyper["mean_prior"]
    assert prior.covariance_prior.tolist() == hyper["covariance_prior"]


# ------------------------------------------------------------------ invalid input
@PROFILE
@given(mixture_data(), st.data())
def test_bad_data_are_errors_naming_data(raises_naming, case, data):
    k, x = case
    kind = data.draw(st.sampled_from(["nan", "inf", "1d", "3d", "few rows", "no columns",
                                      "text", "bool", "ragged", "none"]))
    row = data.draw(st.integers(0, x.shape[0] - 1))
    bad = x.clone()
    if kind in ("nan", "inf"):
        bad[row, -1] = float("nan") if kind == "nan" else float("inf")
    elif kind == "1d":
        bad = x[:, 0]
    elif kind == "3d":
        bad = x[None]
    elif kind == "few rows":
        bad, k = x[: k - 1] if k > 1 else x[:0], max(k, 1)
    elif kind == "no columns":
        bad = x[:, :0]
    elif kind == "text":
        bad = np.full(tuple(x.shape), "1.0")
    elif kind == "bool":
        bad = x > 0
    elif kind == "ragged":
        bad = [[1.0, 2.0], [3.0]] * max(k, 2)
    else:
        bad = None
    raises_naming(lambda: GaussianMixtureModel(k).prepare(bad), "data")


BAD_HYPER = {
    "weight_concentration": [0.0, -1.0, float("nan"), "1", True, [1.0]],
    "mean_precision": [0.0, -2.0, float("inf"), "1", False],
    "degrees_of_freedom": ["d - 1", -1.0, float("nan"), "5", True],
    "mean_prior": ["wrong length", [[0.0]], [float("nan")], "ab"],
    "covariance_prior": ["wrong shape", "asymmetric", "indefinite", [1.0], [[float("inf")]]],
}


@PROFILE
@given(mixture_data(), st.sampled_from(sorted(BAD_HYPER)), st.data())
def test_bad_hyperparameters_are_errors_naming_them(raises_naming, case, name, data):
    k, x = case
    x = x.double()
    d = x.shape[1]
    bad = data.draw(st.sampled_from(BAD_HYPER[name]))
    if bad == "d - 1":
        bad = float(d - 1)
    elif bad == "wrong length":
        bad = [0.0] * (d + 1)
    elif bad == "wrong shape":
        bad = np.eye(d + 1)
    elif bad == "asymmetric":
        bad = np.eye(d) + np.triu(np.ones((d, d)), 1) if d > 1 else [[-1.0]]
    elif bad == "indefinite":
        bad = -np.eye(d)
    raises_naming(lambda: GaussianMixtureModel(k, **{name: bad}).prepare(x), name)


@PROFILE
@given(st.one_of(st.integers(-3, 0), st.floats(0.5, 4.0), st.booleans(), st.just("2")))
def test_a_bad_component_count_is_an_error_naming_num_components(raises_naming, bad):
    raises_naming(lambda: GaussianMixtureModel(bad), "num_components")


# ------------------------------------------------------------------ scale and spread
@PROFILE
@given(mixture_data(), st.integers(-120, 120))  # float64 data within the range it can fit
def test_the_default_prior_scales_with_the_data(case, exponent):
    k, x = case
    x, scale = x.double(), 10.0**exponent
    base = GaussianMixtureModel(k).prepare(x).prior.covariance_prior
    scaled = GaussianMixtureModel(k).prepare(x * scale).prior.covariance_prior
    assert torch.allclose(scaled / scale**2, base, rtol=1e-6, atol=0)


@pytest.mark.filterwarnings("ignore::pyromodels.core.ConvergenceWarning")
@PROFILE
@given(st.integers(1, 3), st.integers(3, 8), st.floats(-5, 5))
def test_constant_data_fit_or_fail_naming_data(raises_naming, k, n, value):
    x = torch.full((n, 2), value, dtype=torch.float64)
    try:
        GaussianMixtureModel(k).fit(x, method="em", seed=0, progress=False, max_iter=5)
    except (ValueError, TypeError):
        raises_naming(lambda: GaussianMixtureModel(k).fit(x, method="em", seed=0,
                                                             progress=False, max_iter=5), "data")
