"""The samplers with loops of their own warn as run_gibbs does: a DP mixture's Gibbs chains,
BHMC's and the networked model's label draws emit one SamplingWarning when their
label-invariant draws are not yet reliable, and ``diagnostic_warnings=False`` silences it."""

import warnings

import pytest
import torch

from pyromodels.bhmc import BHMC, BHMCPrior
from pyromodels.core import SamplingWarning
from pyromodels.ddpm import DPMixture, DPMixturePrior

F64 = torch.float64


def _blobs():
    g = torch.Generator().manual_seed(0)
    return torch.cat([torch.randn(15, 2, generator=g, dtype=F64) - 4,
                      torch.randn(15, 2, generator=g, dtype=F64) + 4])


def _silent(fit):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        return fit()


def test_dp_mixture_gibbs_warns_about_its_label_invariant_draws():
    model = DPMixture(DPMixturePrior(kappa0=0.05, alpha0=2.0, beta0=2.0))
    settings = dict(method="gibbs", num_warmup=2, num_chains=2, seed=0, progress=False,
                    alpha_prior=(1.0, 1.0))
    # 2 x 10 draws of the number of clusters and the concentration: an ESS of 20 at best,
    # far below 100 per chain
    with pytest.warns(SamplingWarning, match=r"effective sample size .* at (num_clusters|alpha)") as record:
        model.fit(_blobs(), num_samples=10, **settings)
    assert record[0].filename == __file__  # the user's line, not the sampler's
    post = _silent(lambda: model.fit(_blobs(), num_samples=10, diagnostic_warnings=False,
                                     **settings))
    assert post.attrs["label_invariant_sites"] == ["num_clusters", "alpha"]
    with pytest.raises(TypeError, match="diagnostic_warnings"):
        model.fit(_blobs(), num_samples=2, diagnostic_warnings="no", **settings)


def test_bhmc_warns_about_its_label_invariant_draws():
    prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=4, loc=0.0,
                      scale=1.0)
    x = BHMC(prior).simulate(14, 2, torch.Generator().manual_seed(3)).x
    settings = dict(num_warmup=2, num_samples=6, num_chains=2, seed=5, progress=False)
    # 2 x 6 draws of the complete-data log likelihood: the ESS cannot reach 200
    with pytest.warns(SamplingWarning, match=r"effective sample size .* at cdl"):
        BHMC(prior).fit(x, **settings)
    _silent(lambda: BHMC(prior).fit(x, diagnostic_warnings=False, **settings))


def test_mrf_label_draws_are_checked_through_their_log_joint():
    from pyromodels.crowd.mrf.energy import PottsCoupling
    from pyromodels.crowd.mrf.fit import sample_labels
    from pyromodels.data import Graph

    g = torch.Generator().manual_seed(0)
    edges = [[i, i + 1] for i in range(29)]
    coupling = PottsCoupling.constant(Graph.from_edges(edges, num_nodes=30), 1.0)
    log_b = torch.log_softmax(torch.randn(30, 3, generator=g, dtype=F64), -1)
    # the labels are categorical; their log joint over 2 x 8 draws has an ESS of 16 at most
    with pytest.warns(SamplingWarning, match=r"effective sample size .* at lp"):
        sample_labels(log_b, coupling, num_samples=8, num_warmup=2, num_chains=2)
    post = _silent(lambda: sample_labels(log_b, coupling, num_samples=8, num_warmup=2,
                                         num_chains=2, diagnostic_warnings=False))
    assert post.samples["y"].shape == (2, 8, 30)


def test_truncated_dp_mixture_declares_its_label_switched_sites():
    from pyromodels.core.diagnostic_warnings import diagnostic_sites
    from pyromodels.ddpm import TruncatedDPMixture

    model = TruncatedDPMixture(DPMixturePrior(kappa0=0.1, alpha0=2.0, beta0=1.0), truncation=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        post = model.fit(_blobs(), method="gibbs", num_warmup=2, num_samples=5, num_chains=2,
                         seed=0, progress=False)
    assert post.attrs["label_switched_sites"] == ["v", "lam", "mu", "c"]
    assert diagnostic_sites(post) == []  # the log joint is checked in their place
