"""Hand-built posteriors and a toy mixture model for the diagnostics tests."""

import matplotlib.pyplot as plt
import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch

from pyromodels.core import Model, Posterior


class ToyMixture(Model):
    """Two Gaussian components with unit scale; the labels ``z`` are summed out."""

    discrete_sites = ("z",)
    max_plate_nesting = 1

    def model(self, data):
        weights = pyro.sample("weights", dist.Dirichlet(torch.ones(2, dtype=torch.float64)))
        with pyro.plate("components", 2):
            locs = pyro.sample("locs", dist.Normal(torch.tensor(0.0, dtype=torch.float64), 5.0))
        with pyro.plate("data", data.shape[0]):
            z = pyro.sample("z", dist.Categorical(weights), infer={"enumerate": "parallel"})
            pyro.sample("y", dist.Normal(locs[z], 1.0), obs=data)

    def log_likelihood_pointwise(self, data, samples):
        locs = samples["locs"].unsqueeze(-2)  # (chain, draw, 1, K)
        log_w = samples["weights"].log().unsqueeze(-2)
        per_class = dist.Normal(locs, 1.0).log_prob(data.unsqueeze(-1)) + log_w
        return {"y": torch.logsumexp(per_class, dim=-1)}

    def observed_data(self, data):
        return {"y": data}


def toy_data(n=20, seed=0):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, size=n)
    return torch.from_numpy(np.where(labels == 0, -2.0, 2.0) + rng.standard_normal(n))


def toy_posterior(chains=2, draws=300, n=20, seed=1, method="gibbs"):
    """Draws that look like a converged Gibbs run of :class:`ToyMixture` (fixed seeds)."""
    rng = np.random.default_rng(seed)
    data = toy_data(n)
    samples = {
        "weights": torch.from_numpy(rng.dirichlet([20.0, 20.0], size=(chains, draws))),
        "locs": torch.from_numpy(
            np.array([-2.0, 2.0]) + 0.2 * rng.standard_normal((chains, draws, 2))
        ),
        "z": torch.from_numpy(rng.integers(0, 2, size=(chains, draws, n))),
    }
    stats = {
        "lp": torch.from_numpy(-40.0 + rng.standard_normal((chains, draws))),
        "diverging": torch.from_numpy(rng.random((chains, draws)) < 0.05),
    }
    return Posterior(
        samples=samples,
        method=method,
        sample_stats=stats,
        attrs={
            "method": method,
            "seed": 1,
            "device": "cpu",
            "converged": True,
            "tol": 1e-8,
            "extra": None,
        },
        model=ToyMixture(),
        data=data,
    )


@pytest.fixture
def toy():
    return toy_posterior()


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


@pytest.fixture
def make_toy():
    return toy_posterior


@pytest.fixture
def toy_y():
    return toy_data()
