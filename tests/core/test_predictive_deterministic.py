"""A program with ``pyro.deterministic`` sites is simulated over all draws at once: the
deterministic record keeps its computed value (released like data, its ``Delta`` was expanded
by the particle plate into a ``(draws, 8, draws, 8)`` tensor, gigabytes at a few thousand
draws, before the per-draw fallback), and it is no replicate of the data."""

import logging

import pyro
import pyro.distributions as dist
import torch

from pyromodels.core.trace_inference import inference_data_from_trace

F64 = torch.float64
Y = torch.tensor([28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0], dtype=F64)
SIGMA = torch.tensor([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0], dtype=F64)


def eight_schools(sigma, y=None):
    mu = pyro.sample("mu", dist.Normal(torch.tensor(0.0, dtype=F64), 5.0))
    tau = pyro.sample("tau", dist.HalfCauchy(torch.tensor(5.0, dtype=F64)))
    with pyro.plate("schools", sigma.shape[0]):
        eta = pyro.sample("eta", dist.Normal(torch.tensor(0.0, dtype=F64), 1.0))
        theta = pyro.deterministic("theta", mu + tau * eta)
        return pyro.sample("y", dist.Normal(theta, sigma), obs=y)


def test_deterministic_sites_are_simulated_with_the_draws_not_against_them(caplog):
    g = torch.Generator().manual_seed(0)
    samples = {"mu": torch.randn(2, 50, generator=g, dtype=F64),
               "tau": torch.rand(2, 50, generator=g, dtype=F64),
               "eta": torch.randn(2, 50, 8, generator=g, dtype=F64)}
    with caplog.at_level(logging.INFO, logger="pyromodels"):
        idata = inference_data_from_trace(eight_schools, (SIGMA,), {"y": Y}, samples=samples,
                                          log_likelihood=False, num_prior_draws=20, seed=0)
    assert "does not broadcast over a batch of draws" not in caplog.text  # one vectorised trace
    assert list(idata.posterior_predictive.data_vars) == ["y"]
    assert idata.posterior_predictive["y"].shape == (2, 50, 8)
    assert list(idata.prior_predictive.data_vars) == ["y"]
    # each replicate is drawn around its own draw's theta = mu + tau * eta (sigma >= 9: a
    # replicate more than 6 sigma away from it would be a mismatch of draws)
    theta = samples["mu"][..., None] + samples["tau"][..., None] * samples["eta"]
    gap = (torch.as_tensor(idata.posterior_predictive["y"].values) - theta) / SIGMA
    assert float(gap.abs().max()) < 6
