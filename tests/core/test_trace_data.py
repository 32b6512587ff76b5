"""InferenceData read from a program's trace: against ArviZ's ``from_pyro``, brute-force
enumeration and the zoo's own hooks, and ArviZ's tools on a user's model without hooks."""

import warnings

import arviz as az
import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import MCMC, NUTS, Predictive
from pyro.ops.indexing import Vindex

from pyromodels.core import Model, Posterior
from pyromodels.core.trace_data import (
    BoundProgram,
    pointwise_log_likelihood,
    site_dim_names,
)
from pyromodels.core.trace_inference import inference_data_from_trace

SCHOOLS_Y = torch.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], dtype=torch.float64)
SCHOOLS_SIGMA = torch.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], dtype=torch.float64)


def eight_schools(J, sigma, y=None):
    mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(torch.tensor(5.0, dtype=torch.float64)))
    with pyro.plate("school", J):
        theta_tilde = pyro.sample("theta_tilde", dist.Normal(torch.zeros((), dtype=torch.float64), 1.0))
        pyro.sample("obs", dist.Normal(mu + tau * theta_tilde, sigma), obs=y)


@pytest.fixture(scope="module")
def schools_mcmc():
    pyro.set_rng_seed(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # more chains than CPUs: drawn in turn
        mcmc = MCMC(NUTS(eight_schools), num_samples=40, warmup_steps=40, num_chains=2,
                    disable_progbar=True, mp_context=None)
        mcmc.run(8, SCHOOLS_SIGMA, y=SCHOOLS_Y)
    return mcmc


def test_eight_schools_groups_match_arviz_from_pyro(schools_mcmc):
    samples = schools_mcmc.get_samples(group_by_chain=True)
    flat = schools_mcmc.get_samples()
    pyro.set_rng_seed(0)
    reference = az.from_pyro(
        schools_mcmc,
        prior=Predictive(eight_schools, num_samples=30)(8, SCHOOLS_SIGMA),
        posterior_predictive=Predictive(eight_schools, flat)(8, SCHOOLS_SIGMA),
    )
    ours = inference_data_from_trace(eight_schools, (8, SCHOOLS_SIGMA), {"y": SCHOOLS_Y}, samples,
                                     num_prior_draws=30, seed=0)
    for name in ("mu", "tau", "theta_tilde"):
        np.testing.assert_array_equal(ours.posterior[name].values, reference.posterior[name].values)
    np.testing.assert_allclose(ours.log_likelihood["obs"].values,
                               reference.log_likelihood["obs"].values, rtol=1e-12)
    np.testing.assert_array_equal(ours.observed_data["obs"].values,
                                  reference.observed_data["obs"].values)
    assert ours.posterior_predictive["obs"].shape == reference.posterior_predictive["obs"].shape
    assert ours.prior_predictive["obs"].shape == reference.prior_predictive["obs"].shape
    assert ours.prior["theta_tilde"].shape == reference.prior["theta_tilde"].shape
    np.testing.assert_array_equal(ours.constant_data["sigma"].values, SCHOOLS_SIGMA.numpy())
    assert "y" not in ours.constant_data  # observed, so it is data, not a constant
    assert ours.log_likelihood["obs"].dims == ("chain", "draw", "school")
    assert ours.posterior["theta_tilde"].dims == ("chain", "draw", "school")


def test_eight_schools_replicates_follow_the_draws():
    # with tau = 0 and mu fixed per draw, a replicate is mu + sigma * noise: its mean over
    # many draws of one fixed mu is mu, within 4 standard errors
    draws = 4000
    samples = {"mu": torch.full((1, draws), 3.0, dtype=torch.float64),
               "tau": torch.zeros(1, draws, dtype=torch.float64),
               "theta_tilde": torch.zeros(1, draws, 8, dtype=torch.float64)}
    idata = inference_data_from_trace(eight_schools, (8, SCHOOLS_SIGMA), {"y": SCHOOLS_Y},
                                      samples, num_prior_draws=0, seed=1)
    rep = idata.posterior_predictive["obs"].values[0]
    se = SCHOOLS_SIGMA.numpy() / np.sqrt(draws)
    assert np.all(np.abs(rep.mean(0) - 3.0) < 4 * se)
    assert "prior" not in idata.groups()


K = 3


def mixture(x):
    weights = pyro.sample("weights", dist.Dirichlet(torch.ones(K, dtype=torch.float64)))
    locs = pyro.sample("locs", dist.Normal(torch.zeros(K, dtype=torch.float64), 5.0).to_event(1))
    scale = pyro.sample("scale", dist.LogNormal(torch.tensor(0.0, dtype=torch.float64), 1.0))
    with pyro.plate("point", x.shape[0]):
        z = pyro.sample("z", dist.Categorical(weights), infer={"enumerate": "parallel"})
        pyro.sample("x", dist.Normal(Vindex(locs)[..., z], scale), obs=x)


def mixture_unmarked_no_broadcast(x):
    # z is not marked for enumeration, and plain indexing does not broadcast over draws
    weights = pyro.sample("weights", dist.Dirichlet(torch.ones(K, dtype=torch.float64)))
    locs = pyro.sample("locs", dist.Normal(torch.zeros(K, dtype=torch.float64), 5.0).to_event(1))
    scale = pyro.sample("scale", dist.LogNormal(torch.tensor(0.0, dtype=torch.float64), 1.0))
    with pyro.plate("point", x.shape[0]):
        z = pyro.sample("z", dist.Categorical(weights))
        pyro.sample("x", dist.Normal(locs[z], scale), obs=x)


MIX_X = torch.tensor([-2.0, 0.3, 4.0, 5.0, 1.0], dtype=torch.float64)


def mixture_samples(chains=2, draws=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    w = torch.distributions.Dirichlet(torch.ones(K, dtype=torch.float64)).sample((chains, draws))
    return {"weights": w,
            "locs": 3 * torch.randn(chains, draws, K, generator=g, dtype=torch.float64),
            "scale": 0.5 + torch.rand(chains, draws, generator=g, dtype=torch.float64)}


def brute_force_mixture(samples, x):
    """``log sum_k w_k N(x_i | locs_k, scale)`` by a loop over draws, points and components."""
    chains, draws = samples["scale"].shape
    out = np.zeros((chains, draws, len(x)))
    for c in range(chains):
        for d in range(draws):
            for i, xi in enumerate(x):
                terms = [samples["weights"][c, d, k].log()
                         + dist.Normal(samples["locs"][c, d, k], samples["scale"][c, d]).log_prob(xi)
                         for k in range(K)]
                out[c, d, i] = torch.logsumexp(torch.stack(terms), 0).item()
    return out


@pytest.mark.parametrize("program", [mixture, mixture_unmarked_no_broadcast])
def test_marginal_pointwise_log_likelihood_matches_enumeration(program):
    samples = mixture_samples()
    ll = pointwise_log_likelihood(BoundProgram(program, (MIX_X,)), samples)["x"]
    assert ll.shape == (2, 6, 5)
    np.testing.assert_allclose(ll.numpy(), brute_force_mixture(samples, MIX_X), rtol=1e-10)


def test_drawn_discrete_sites_are_summed_out_when_marked():
    samples = mixture_samples()
    samples["z"] = torch.zeros(2, 6, 5, dtype=torch.long)  # one draw of z: conditioning would differ
    ll = pointwise_log_likelihood(BoundProgram(mixture, (MIX_X,)), samples)["x"]
    np.testing.assert_allclose(ll.numpy(), brute_force_mixture(samples, MIX_X), rtol=1e-10)


def test_trace_log_likelihood_agrees_with_the_zoo_mixture_hook():
    from pyromodels.mixture import GaussianMixtureModel

    g = torch.Generator().manual_seed(3)
    x = torch.randn(12, 2, generator=g, dtype=torch.float64)
    model = GaussianMixtureModel(2)
    post = model.fit(x, method="svi", num_steps=5, num_samples=4, seed=0, progress=False)
    data = model.prepare(x)
    program = BoundProgram(model.model, (data,), max_plate_nesting=model.max_plate_nesting,
                           discrete_sites=model.discrete_sites)
    ours = pointwise_log_likelihood(program, post.samples)
    hook = model.log_likelihood_pointwise(data, post.samples)
    assert set(ours) == set(hook)
    for name in hook:
        np.testing.assert_allclose(ours[name].numpy(), hook[name].numpy(), rtol=1e-9)


def nested(y):
    scale = pyro.sample("scale", dist.HalfNormal(torch.tensor(1.0, dtype=torch.float64)))
    with pyro.plate("group", y.shape[0], dim=-2):
        loc = pyro.sample("loc", dist.Normal(torch.zeros(2, dtype=torch.float64), 1.0).to_event(1))
        with pyro.plate("item", y.shape[1], dim=-1):
            pyro.sample("y", dist.Normal(loc, scale.unsqueeze(-1)).to_event(1), obs=y)


def test_dims_are_named_from_the_plates():
    y = torch.zeros(3, 4, 2, dtype=torch.float64)
    program = BoundProgram(nested, (y,))
    assert program.max_plate_nesting == 2
    assert site_dim_names(program.sites["y"]) == ["group", "item", "y_dim_2"]
    assert site_dim_names(program.sites["loc"]) == ["group", "loc_dim_1", "loc_dim_2"]
    g = torch.Generator().manual_seed(0)
    samples = {"scale": torch.rand(2, 3, generator=g, dtype=torch.float64) + 0.5,
               "loc": torch.randn(2, 3, 3, 1, 2, generator=g, dtype=torch.float64)}
    idata = inference_data_from_trace(nested, (y,), samples=samples, num_prior_draws=4)
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "group", "item")
    assert idata.observed_data["y"].dims == ("group", "item", "y_dim_2")
    assert idata.posterior_predictive["y"].dims == ("chain", "draw", "group", "item", "y_dim_2")
    expected = dist.Normal(samples["loc"], samples["scale"][..., None, None, None]).log_prob(y).sum(-1)
    np.testing.assert_allclose(idata.log_likelihood["y"].values, expected.numpy(), rtol=1e-12)


class UserSchools(Model):
    """A user's own model: the story and nothing else."""

    def __init__(self, centred: bool = False):
        self.centred = centred

    def model(self, data):
        mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 5.0))
        tau = pyro.sample("tau", dist.HalfCauchy(torch.tensor(5.0, dtype=torch.float64)))
        with pyro.plate("school", 8):
            if self.centred:
                theta = pyro.sample("theta", dist.Normal(mu, tau))
            else:
                theta = mu + tau * pyro.sample(
                    "theta_tilde", dist.Normal(torch.zeros((), dtype=torch.float64), 1.0))
            pyro.sample("obs", dist.Normal(theta, SCHOOLS_SIGMA), obs=data)


def test_arviz_tools_work_on_a_users_model_without_hooks():
    fits = {}
    for centred in (False, True):
        fits[centred] = UserSchools(centred).fit(SCHOOLS_Y, method="svi", num_steps=30,
                                                 num_samples=200, seed=0, progress=False)
    idatas = {str(c): p.to_inference_data(num_prior_draws=50) for c, p in fits.items()}
    idata = idatas["False"]
    for group in ("posterior", "log_likelihood", "observed_data", "prior", "prior_predictive",
                  "posterior_predictive"):
        assert group in idata.groups(), group
    np.testing.assert_array_equal(idata.observed_data["obs"].values, SCHOOLS_Y.numpy())
    assert idata.log_likelihood["obs"].shape == (1, 200, 8)
    assert np.isfinite(az.loo(idata).elpd_loo)
    assert list(az.compare(idatas).index) != []
    az.plot_ppc(idata, num_pp_samples=20)


def test_model_hooks_keep_precedence():
    class WithHook(UserSchools):
        def log_likelihood_pointwise(self, data, samples):
            return {"obs": torch.zeros(samples["mu"].shape + (8,))}

    samples = {"mu": torch.zeros(2, 5, dtype=torch.float64), "tau": torch.ones(2, 5, dtype=torch.float64),
               "theta_tilde": torch.zeros(2, 5, 8, dtype=torch.float64)}
    idata = Posterior(samples=samples, method="nuts", model=WithHook(), data=SCHOOLS_Y
                      ).to_inference_data(predictive=False)
    assert np.all(idata.log_likelihood["obs"].values == 0)
    plain = Posterior(samples=samples, method="nuts", model=UserSchools(), data=SCHOOLS_Y
                      ).to_inference_data(predictive=False)
    expected = dist.Normal(torch.zeros(8, dtype=torch.float64), SCHOOLS_SIGMA).log_prob(SCHOOLS_Y)
    np.testing.assert_allclose(plain.log_likelihood["obs"].values, expected.expand(2, 5, 8).numpy())


def test_draws_that_are_not_the_programs_leave_the_groups_as_they_were():
    samples = {"summary_statistic": torch.zeros(2, 5)}
    idata = Posterior(samples=samples, method="gibbs", model=UserSchools(), data=SCHOOLS_Y
                      ).to_inference_data()
    assert set(idata.groups()) == {"posterior"}


def test_missing_continuous_sites_and_bad_arguments_are_errors():
    program = BoundProgram(eight_schools, (8, SCHOOLS_SIGMA), {"y": SCHOOLS_Y})
    with pytest.raises(ValueError, match=r"continuous latent site.*\['tau', 'theta_tilde'\]"):
        pointwise_log_likelihood(program, {"mu": torch.zeros(1, 2)})
    with pytest.raises(TypeError, match="model_fn must be a callable"):
        BoundProgram("not a model")
    with pytest.raises(TypeError, match="args must be a tuple"):
        BoundProgram(eight_schools, 8)
    with pytest.raises(TypeError, match="samples must be a non-empty dict"):
        inference_data_from_trace(eight_schools, (8, SCHOOLS_SIGMA), {"y": SCHOOLS_Y}, None)
    with pytest.raises(ValueError, match="num_prior_draws"):
        inference_data_from_trace(eight_schools, (8, SCHOOLS_SIGMA), {"y": SCHOOLS_Y},
                                  {"mu": torch.zeros(1, 2)}, num_prior_draws=-1)


def with_factor(y):
    mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 1.0))
    pyro.factor("penalty", -mu**2)
    with pyro.plate("obs_id", y.shape[0]):
        pyro.sample("y", dist.Normal(mu, 1.0), obs=y)


def test_programs_with_factors_get_no_log_likelihood_and_say_why():
    y = torch.zeros(3, dtype=torch.float64)
    with pytest.warns(UserWarning, match="factor"):
        idata = inference_data_from_trace(with_factor, (y,), samples={"mu": torch.zeros(2, 4)},
                                          predictive=False)
    assert "log_likelihood" not in idata.groups()
    assert "observed_data" in idata.groups()


class WithFactor(Model):
    def model(self, data):
        with_factor(data)


def test_a_users_model_with_a_factor_keeps_its_data_and_says_why_it_has_no_likelihood():
    y = torch.zeros(3, dtype=torch.float64)
    post = Posterior(samples={"mu": torch.zeros(2, 4, dtype=torch.float64)}, method="nuts",
                     model=WithFactor(), data=y)
    with pytest.warns(UserWarning, match="log_likelihood group was left out.*factor"):
        idata = post.to_inference_data()
    assert set(idata.groups()) == {"posterior", "observed_data"}


def chain_of_states(y):
    probs = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64)
    state = 0
    for t in pyro.markov(range(len(y))):
        state = pyro.sample(f"s_{t}", dist.Categorical(Vindex(probs)[..., state, :]),
                            infer={"enumerate": "parallel"})
        pyro.sample(f"y_{t}", dist.Normal(state * 1.0, 1.0), obs=y[t])


def test_states_chained_by_markov_are_refused():
    program = BoundProgram(chain_of_states, (torch.zeros(4, dtype=torch.float64),))
    with pytest.raises(NotImplementedError, match="share enumeration dims"):
        pointwise_log_likelihood(program, {"unused": torch.zeros(1, 2)})


def shared_switch(y):
    # one enumerated switch per group, observed points in a plate the switch is not in
    with pyro.plate("group", 2, dim=-2):
        switch = pyro.sample("switch", dist.Bernoulli(torch.tensor(0.5, dtype=torch.float64)),
                             infer={"enumerate": "parallel"})
    with pyro.plate("point", y.shape[0], dim=-1):
        pyro.sample("y", dist.Normal(switch, 1.0), obs=y)


def test_enumerated_sites_outside_the_observed_sites_plates_are_refused():
    program = BoundProgram(shared_switch, (torch.zeros(3, dtype=torch.float64),))
    with pytest.raises(NotImplementedError, match="plate"):
        pointwise_log_likelihood(program, {"unused": torch.zeros(1, 2)})


class UserMixture(Model):
    """A user's mixture with its discrete site marked for enumeration, and no hooks."""

    max_plate_nesting = 1

    def model(self, data):
        mixture(data)


def test_a_users_mixture_gets_the_marginal_log_likelihood_through_its_posterior():
    samples = mixture_samples(chains=2, draws=6, seed=4)
    samples["z"] = torch.ones(2, 6, 5, dtype=torch.long)  # drawn labels are summed out anyway
    post = Posterior(samples=samples, method="nuts", model=UserMixture(), data=MIX_X)
    idata = post.to_inference_data(num_prior_draws=10)
    np.testing.assert_allclose(idata.log_likelihood["x"].values, brute_force_mixture(samples, MIX_X),
                               rtol=1e-10)
    assert idata.posterior["z"].dims == ("chain", "draw", "point")
    assert idata.posterior_predictive["x"].shape == (2, 6, 5)
    assert idata.prior["z"].shape == (1, 10, 5)


def mixture_gathered_from_the_right(x):
    # locs[..., z]: vectorises over a batch of z alone, but with locs and z both batched over
    # the draws it broadcasts the draws against each other
    weights = pyro.sample("weights", dist.Dirichlet(torch.ones(K, dtype=torch.float64)))
    with pyro.plate("component", K):
        locs = pyro.sample("locs", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 5.0))
    with pyro.plate("point", x.shape[0]):
        z = pyro.sample("z", dist.Categorical(weights))
        pyro.sample("x", dist.Normal(locs[..., z], 1.0), obs=x)


def test_a_broadcast_across_draws_is_scored_draw_by_draw_not_summed():
    samples = mixture_samples()
    samples.pop("scale")
    g = torch.Generator().manual_seed(1)
    samples["z"] = torch.randint(0, K, (2, 6, len(MIX_X)), generator=g)
    ll = pointwise_log_likelihood(BoundProgram(mixture_gathered_from_the_right, (MIX_X,)), samples)["x"]
    locs = torch.gather(samples["locs"], -1, samples["z"])
    np.testing.assert_allclose(ll.numpy(), dist.Normal(locs, 1.0).log_prob(MIX_X).numpy(), rtol=1e-12)
