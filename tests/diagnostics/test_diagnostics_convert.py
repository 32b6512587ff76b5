"""to_inference_data: groups, shapes, dtypes, attrs, NetCDF round trip, loo/waic."""

import arviz as az
import numpy as np
import pytest
import torch
from scipy.special import logsumexp
from scipy.stats import norm

from pyromodels.core import Model, Posterior
from pyromodels.diagnostics import netcdf_safe_attrs, to_inference_data


def _scipy_loglik(post):
    """Marginal pointwise log-likelihood of the toy mixture, written with scipy only."""
    y = post.data.numpy()
    w, locs = post["weights"].numpy(), post["locs"].numpy()
    chains, draws = w.shape[:2]
    out = np.empty((chains, draws, y.size))
    for c in range(chains):
        for d in range(draws):
            terms = np.log(w[c, d])[None, :] + norm.logpdf(y[:, None], locs[c, d][None, :], 1.0)
            out[c, d] = logsumexp(terms, axis=1)
    return out


def test_groups_shapes_and_dtypes(toy):
    idata = to_inference_data(toy)
    # the prior and predictive groups come by default (see test_predictive_default_*)
    assert set(idata.groups()) == {"posterior", "sample_stats", "log_likelihood", "observed_data",
                                   "prior", "prior_predictive", "posterior_predictive"}
    assert set(to_inference_data(toy, predictive=False).groups()) == {
        "posterior", "sample_stats", "log_likelihood", "observed_data"}
    for name, value in toy.samples.items():
        arr = idata.posterior[name].values
        assert arr.shape == tuple(value.shape)
        np.testing.assert_array_equal(arr, value.numpy())
    assert idata.posterior["z"].dtype == np.int64
    assert idata.posterior["locs"].dtype == np.float64
    assert idata.sample_stats["diverging"].dtype == np.bool_
    np.testing.assert_array_equal(idata.sample_stats["lp"].values, toy.sample_stats["lp"].numpy())
    assert idata.log_likelihood["y"].shape == (2, 300, 20)
    np.testing.assert_array_equal(idata.observed_data["y"].values, toy.data.numpy())


def test_log_likelihood_is_the_marginal_density(toy):
    idata = to_inference_data(toy)
    np.testing.assert_allclose(idata.log_likelihood["y"].values, _scipy_loglik(toy), rtol=1e-12)


def test_waic_matches_its_formula_and_loo_runs(toy):
    idata = to_inference_data(toy)
    ll = _scipy_loglik(toy).reshape(-1, 20)  # (draws pooled over chains, n)
    lppd = logsumexp(ll, axis=0) - np.log(ll.shape[0])
    p_waic = ll.var(axis=0)  # ArviZ takes the variance over draws with ddof=0
    waic = az.waic(idata)
    np.testing.assert_allclose(waic["elpd_waic"], np.sum(lppd - p_waic), rtol=1e-10)
    loo = az.loo(idata, pointwise=True)
    assert loo["n_data_points"] == 20 and loo["n_samples"] == 600
    assert np.isfinite(loo["elpd_loo"])
    # PSIS-LOO and WAIC estimate the same elpd; when every Pareto k is small they differ only by
    # terms of higher order than the effective number of parameters p_waic (about 1 here).
    assert np.all(loo["pareto_k"].values < 0.5)
    assert abs(loo["elpd_loo"] - waic["elpd_waic"]) < 0.1 * waic["p_waic"]


def test_attrs_are_netcdf_safe(toy):
    idata = to_inference_data(toy)
    for attrs in (idata.attrs, idata.posterior.attrs, idata.sample_stats.attrs):
        assert attrs["inference_library"] == "pyromodels"
        assert attrs["method"] == "gibbs"
        assert attrs["seed"] == 1
        assert attrs["converged"] == 1 and not isinstance(attrs["converged"], bool)
        assert attrs["extra"] == "None"
        assert attrs["tol"] == 1e-8


def test_netcdf_safe_attrs_rules():
    out = netcdf_safe_attrs(
        {"a": np.int32(3), "b": torch.tensor(2.5), "c": False, "d": [1, 2], "e": "x", 7: 1.0}
    )
    assert out == {"a": 3, "b": 2.5, "c": 0, "d": "[1, 2]", "e": "x", "7": 1.0}
    assert type(out["a"]) is int


def test_netcdf_round_trip(toy, tmp_path):
    idata = to_inference_data(toy)
    path = tmp_path / "fit.nc"
    idata.to_netcdf(str(path))
    back = az.from_netcdf(str(path))
    assert set(back.groups()) == set(idata.groups())
    for group in idata.groups():
        for name, arr in idata[group].data_vars.items():
            np.testing.assert_array_equal(back[group][name].values, arr.values)
            assert back[group][name].dtype == arr.dtype
    assert back.attrs["method"] == "gibbs" and back.posterior.attrs["seed"] == 1


def test_sample_stats_aliases_are_renamed(make_toy):
    post = make_toy(chains=1, draws=40)
    post.sample_stats = {
        "divergences": torch.zeros(1, 40, dtype=torch.long),
        "accept_prob": torch.full((1, 40), 0.8),
    }
    idata = to_inference_data(post)
    assert set(idata.sample_stats.data_vars) == {"diverging", "acceptance_rate"}
    assert idata.sample_stats["diverging"].dtype == np.bool_


def test_sample_stats_errors(make_toy):
    post = make_toy(chains=1, draws=40)
    post.sample_stats = {"divergent": torch.zeros(1, 40), "diverging": torch.zeros(1, 40)}
    with pytest.raises(ValueError, match="two entries for 'diverging'"):
        to_inference_data(post)
    post.sample_stats = {"diverging": torch.full((1, 40), 2)}
    with pytest.raises(ValueError, match="must hold booleans"):
        to_inference_data(post)
    post.sample_stats = {"lp": torch.zeros(40)}
    with pytest.raises(ValueError, match=r"sample_stats\['lp'\] must be shaped \(chain, draw"):
        to_inference_data(post)


def test_optional_groups(toy):
    assert "log_likelihood" not in to_inference_data(toy, log_likelihood=False).groups()
    bare = Posterior(samples={"mu": torch.zeros(2, 5)}, method="nuts", model=Model(), data=toy.data)
    assert set(to_inference_data(bare).groups()) == {"posterior"}


def test_method_on_posterior_delegates(toy):
    idata = toy.to_inference_data(log_likelihood=False, dims={"z": ["point"]})
    assert idata.posterior["z"].dims == ("chain", "draw", "point")


def test_bad_hook_output_and_arguments(toy):
    class Wrong(Model):
        def log_likelihood_pointwise(self, data, samples):
            return {"y": torch.zeros(20)}

    post = Posterior(samples=toy.samples, method="gibbs", model=Wrong(), data=toy.data)
    with pytest.raises(ValueError, match=r"log_likelihood\['y'\] must be shaped \(chain, draw"):
        to_inference_data(post)
    with pytest.raises(TypeError, match="posterior must be a pyromodels Posterior"):
        to_inference_data({"mu": torch.zeros(2, 5)})
    with pytest.raises(TypeError, match="log_likelihood must be a bool"):
        to_inference_data(toy, log_likelihood="yes")
