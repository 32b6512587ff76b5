"""Predictive checks on the mixture: prior and predictive groups, named dims, plot_ppc, loo."""

import arviz as az
import matplotlib.pyplot as plt
import pyro
import pytest
import torch
from pyro.infer import MCMC, NUTS
from pyro.infer.autoguide.initialization import init_to_value

from pyromodels.core import posterior_from_mcmc
from pyromodels.core.predictive import posterior_predictive_draws, prior_draws


def test_predictive_groups_have_named_dims_and_feed_plot_ppc(mixture, blobs):
    x, _ = blobs
    post = mixture.fit(x, method="gibbs", seed=0, num_samples=15, num_warmup=10, progress=False)
    idata = post.to_inference_data(predictive=True, num_prior_draws=30)
    assert {"prior", "prior_predictive", "posterior_predictive", "observed_data",
            "log_likelihood"} <= set(idata.groups())
    assert idata.posterior["locs"].dims == ("chain", "draw", "component", "feature")
    assert idata.posterior_predictive["x"].shape == (2, 15) + tuple(x.shape)
    assert idata.posterior_predictive["x"].dims == ("chain", "draw", "point", "feature")
    assert idata.prior["weights"].shape == (1, 30, 2)
    assert idata.prior_predictive["x"].dims == ("chain", "draw", "point", "feature")
    assert idata.log_likelihood["x"].dims == ("chain", "draw", "point")
    assert idata.observed_data["x"].dims == ("point", "feature")
    axes = az.plot_ppc(idata, num_pp_samples=10)
    assert axes is not None
    plt.close("all")


def test_posterior_replicates_follow_the_point_estimate(mixture, make_blobs):
    # With the parameters fixed at the EM estimate, replicated data have the data's moments.
    x, _ = make_blobs(300, 200, seed=1)
    em = mixture.fit(x, method="em", seed=0, progress=False)
    many = {k: v.expand((1, 40) + tuple(v.shape[2:])) for k, v in em.samples.items()}
    rep = posterior_predictive_draws(mixture, x, many, seed=0)["x"]
    assert rep.shape == (1, 40) + tuple(x.shape)
    assert torch.allclose(rep.mean((0, 1, 2)), x.mean(0), atol=0.15)
    assert torch.allclose(rep.std((0, 1, 2)), x.std(0), rtol=0.05)


def test_prior_draws_follow_the_prior(mixture, blobs):
    x, _ = blobs
    latent, observed = prior_draws(mixture, x, num_draws=400, seed=0)
    # weights ~ Dirichlet(1, 1): mean 1/2 each
    assert torch.allclose(latent["weights"].mean((0, 1)), torch.full((2,), 0.5, dtype=x.dtype),
                          atol=0.05)
    assert latent["z"].shape == (1, 400, x.shape[0]) and not latent["z"].is_floating_point()
    assert observed["x"].shape == (1, 400) + tuple(x.shape)
    with pytest.raises(ValueError, match="num_draws"):
        prior_draws(mixture, x, num_draws=0)


def test_predictive_needs_the_model_and_data(mixture, blobs):
    x, _ = blobs
    post = mixture.fit(x, method="em", seed=0, progress=False)
    post.model = None
    with pytest.raises(ValueError, match="predictive=True needs the posterior's model and data"):
        post.to_inference_data(predictive=True)


def test_loo_on_an_em_fit_says_why_it_is_undefined(mixture, blobs):
    x, _ = blobs
    idata = mixture.fit(x, method="em", seed=0, progress=False).to_inference_data()
    assert idata.attrs["point_estimate"] == 1
    assert "log_likelihood" not in idata.groups()
    for ic in (az.loo, az.waic):
        with pytest.raises(ValueError, match="point estimate"):
            ic(idata)


def test_pyro_nuts_on_the_bound_model_converts_with_a_log_likelihood(mixture, blobs):
    # A user's own NUTS run on mixture.model, started at the model's k-means values.
    x, _ = blobs
    data = mixture.prepare(x)
    start = mixture.init_values(data, torch.Generator().manual_seed(0))
    pyro.set_rng_seed(0)
    kernel = NUTS(mixture.model, init_strategy=init_to_value(values=start), max_plate_nesting=1)
    mcmc = MCMC(kernel, num_samples=20, warmup_steps=20, disable_progbar=True)
    mcmc.run(data)
    post = posterior_from_mcmc(mcmc)
    assert post.model is mixture and post.data is data
    idata = post.to_inference_data()
    assert idata.log_likelihood["x"].shape == (1, 20, x.shape[0])
    expected = mixture.log_likelihood_pointwise(data, post.samples)["x"]
    assert torch.allclose(torch.as_tensor(idata.log_likelihood["x"].values), expected)
    assert "elpd_loo" in az.loo(idata).index
