"""Predictive draws and the converter's dims and point-estimate rules, on the crowd models."""

import arviz as az
import numpy as np
import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.core.inference_data import group_dims
from pyromodels.core.predictive import observed_sites, posterior_predictive_draws
from pyromodels.crowd.hmm import SequentialDawidSkene
from pyromodels.crowd.mrf import NetworkedDawidSkene
from pyromodels.data.simulate_crowd import (
    WorkerPopulation,
    simulate_networked_annotations,
    simulate_sequential_annotations,
)


def test_group_dims_keep_the_leading_names_of_shorter_arrays():
    dims = {"x": ["point", "feature"], "w": ["component"]}
    arrays = {"x": np.zeros((2, 3, 5)), "w": np.zeros((2, 3, 4)), "other": np.zeros((2, 3))}
    assert group_dims(dims, arrays, sample_axes=2) == {"x": ["point"], "w": ["component"]}
    assert group_dims(dims, {"x": np.zeros((5, 2))}, sample_axes=0) == {"x": ["point", "feature"]}


def test_one_draw_posteriors_are_point_estimates_that_loo_refuses():
    post = Posterior(samples={"mu": torch.zeros(1, 1, 3)}, method="nuts")
    idata = post.to_inference_data()
    assert idata.attrs["point_estimate"] == 1
    with pytest.raises(ValueError, match="point estimate"):
        az.waic(idata)
    several = Posterior(samples={"mu": torch.zeros(1, 4, 3)}, method="nuts").to_inference_data()
    assert "point_estimate" not in several.attrs


def test_predictive_flag_and_user_dims_are_checked():
    post = Posterior(samples={"mu": torch.zeros(2, 4, 3)}, method="nuts")
    with pytest.raises(TypeError, match="predictive must be a bool"):
        post.to_inference_data(predictive="yes")
    with pytest.raises(TypeError, match="dims must be a dict"):
        post.to_inference_data(dims=["a"])
    assert post.to_inference_data(dims={"mu": ["site"]}).posterior["mu"].dims == (
        "chain", "draw", "site")


def test_sequential_model_has_predictive_groups_for_plot_ppc():
    seqs, _ = simulate_sequential_annotations([10] * 4, WorkerPopulation(3), 3, seed=1)
    post = SequentialDawidSkene().fit(seqs, method="gibbs", seed=0, progress=False,
                                      num_samples=5, num_warmup=5)
    idata = post.to_inference_data(predictive=True, num_prior_draws=8)
    rep = idata.posterior_predictive["labels"]
    assert rep.dims == ("chain", "draw", "response")
    assert rep.shape == (2, 5, seqs.data.num_labels)
    assert set(np.unique(rep.values)) <= {0, 1, 2}
    assert idata.prior["transition"].dims == ("chain", "draw", "previous_class", "class")
    assert idata.prior_predictive["labels"].shape == (1, 8, seqs.data.num_labels)
    np.testing.assert_array_equal(idata.observed_data["labels"].values,
                                  seqs.data.label_idx.numpy())
    az.plot_ppc(idata, num_pp_samples=5)


def test_replicates_given_perfect_workers_repeat_the_true_path():
    # Workers who never err answer the true class: replicated labels equal z's labels.
    seqs, _ = simulate_sequential_annotations([6] * 3, WorkerPopulation(2), 2, seed=0)
    model = SequentialDawidSkene()
    z = torch.randint(2, (1, 4, 18), generator=torch.Generator().manual_seed(0))
    samples = {"initial": torch.full((1, 4, 2), 0.5, dtype=torch.float64),
               "transition": torch.full((1, 4, 2, 2), 0.5, dtype=torch.float64),
               "confusion": torch.eye(2, dtype=torch.float64).expand(1, 4, 2, 2, 2),
               "z": z}
    rep = posterior_predictive_draws(model, seqs, samples, seed=0)["labels"]
    torch.testing.assert_close(rep, z[..., seqs.data.item_idx])


def test_networked_model_says_why_it_has_no_predictive_draws():
    table, graph, _ = simulate_networked_annotations(12, 3, 2, mean_degree=2.0, seed=0)
    with pytest.raises(NotImplementedError, match="factor"):
        observed_sites(NetworkedDawidSkene(), (table, graph))


def test_predictive_default_adds_the_groups_when_the_fit_knows_its_model(monkeypatch):
    from pyromodels.core import posterior as posterior_module
    from pyromodels.mixture import GaussianMixtureModel

    x = torch.cat([torch.randn(20, 2) - 3, torch.randn(20, 2) + 3])
    post = GaussianMixtureModel(2).fit(x, method="gibbs", seed=0, num_samples=6, num_warmup=4,
                                  num_chains=1, progress=False)
    wanted = {"prior", "prior_predictive", "posterior_predictive"}
    assert wanted <= set(post.to_inference_data(num_prior_draws=5).groups())
    assert not wanted & set(post.to_inference_data(predictive=False).groups())
    # the same draws each time: they are seeded by the fit's seed
    a = post.to_inference_data(num_prior_draws=5).posterior_predictive["x"].values
    b = post.to_inference_data(num_prior_draws=5).posterior_predictive["x"].values
    assert (a == b).all()
    # too large for the default: left out with a warning naming the way to force them
    monkeypatch.setattr(posterior_module, "PREDICTIVE_DEFAULT_MAX_VALUES", 40 * 2 * 10)
    with pytest.warns(UserWarning, match="predictive=True to add them anyway"):
        groups = set(post.to_inference_data(num_prior_draws=5).groups())
    assert not wanted & groups
    assert wanted <= set(post.to_inference_data(predictive=True, num_prior_draws=5).groups())
    # a hand-built posterior without model and data converts without them, silently
    bare = Posterior(samples={"mu": torch.zeros(1, 3)}, method="nuts")
    assert set(bare.to_inference_data().groups()) == {"posterior"}
    with pytest.raises(TypeError, match="predictive must be a bool or None"):
        post.to_inference_data(predictive="yes")
