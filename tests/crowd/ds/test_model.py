"""The Dawid-Skene program against brute force: the E-step, the objective and the draws of z."""


import pytest
import torch

from pyromodels.core import marginal_log_joint, sample_discrete
from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.exact import exact_posterior
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import AnnotationTable, WorkerPopulation, simulate_annotations
from pyromodels.testing import assert_mc_mean


def tiny_table():
    """5 items, 3 workers, 3 classes; items 1 and 3 miss labels, item 4 has none."""
    items = [0, 0, 0, 1, 1, 2, 2, 2, 3]
    workers = [0, 1, 2, 0, 2, 0, 1, 2, 1]
    labels = [0, 0, 1, 2, 2, 1, 0, 1, 2]
    return AnnotationTable.from_arrays(items, workers, labels, num_items=5, num_classes=3)


def random_params(M, K, seed):
    g = torch.Generator().manual_seed(seed)
    prior = torch.softmax(torch.randn(K, generator=g), -1)
    confusion = torch.softmax(torch.randn(M, K, K, generator=g) + 2 * torch.eye(K), -1)
    return {"prior": prior, "confusion": confusion}


@pytest.mark.parametrize("update_prior", [True, False])
def test_e_step_and_objective_match_brute_force_enumeration(update_prior):
    model = DawidSkene(prior_concentration=[2.0, 1.0, 1.5], confusion_concentration=1.3,
                       diagonal=0.7, update_prior=update_prior, allow_unlabelled=True)
    data = model.prepare(tiny_table())
    params = random_params(3, 3, seed=4)
    if not update_prior:
        params["prior"] = data.fixed_prior
    exact = exact_posterior(model, data, params)
    q, _ = em.e_step(data, params)
    torch.testing.assert_close(q, exact.marginals, rtol=0, atol=1e-12)
    assert float(em.log_posterior(data, params)) == pytest.approx(exact.log_evidence, abs=1e-10)
    # the items are independent given theta, so the best labelling is each item's best class
    assert torch.equal(exact.map_labels, q.argmax(-1))
    # the unlabelled item's posterior is the class prior
    torch.testing.assert_close(q[4], params["prior"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("update_prior", [True, False])
def test_em_objective_is_the_programs_marginal_log_joint(update_prior):
    table, _ = simulate_annotations(40, WorkerPopulation(5, missing_rate=0.4), 3, seed=2)
    model = DawidSkene(diagonal=2.0, update_prior=update_prior, allow_unlabelled=True)
    data = model.prepare(table)
    params = random_params(5, 3, seed=1)
    values = {k: params[k] for k in model.em_sites}
    expected = float(marginal_log_joint(model, data, values))
    assert model.em_objective(data, params) == pytest.approx(expected, rel=1e-12)


def test_pointwise_log_likelihood_is_each_items_marginal_per_draw():
    table, _ = simulate_annotations(30, WorkerPopulation(4, missing_rate=0.3), 2, seed=5)
    assert int((table.counts_per_item() == 0).sum()) > 0  # unlabelled items are scored too
    model = DawidSkene(allow_unlabelled=True)
    data = model.prepare(table)
    draws = [random_params(4, 2, seed=s) for s in range(6)]
    samples = {k: torch.stack([d[k] for d in draws]).reshape(2, 3, *draws[0][k].shape)
               for k in ("prior", "confusion")}
    ll = model.log_likelihood_pointwise(data, samples)["y"]
    assert ll.shape == (2, 3, 30)
    for s, d in enumerate(draws):
        torch.testing.assert_close(ll.reshape(6, 30)[s], em.e_step(data, d)[1], rtol=0,
                                   atol=1e-12)


def test_sample_discrete_mode_is_the_e_step_argmax_for_every_draw():
    table, _ = simulate_annotations(25, WorkerPopulation(4, missing_rate=0.3), 3, seed=8)
    model = DawidSkene(allow_unlabelled=True)
    data = model.prepare(table)
    draws = [random_params(4, 3, seed=s) for s in range(4)]
    samples = {k: torch.stack([d[k] for d in draws]).reshape(1, 4, *draws[0][k].shape)
               for k in ("prior", "confusion")}
    fast = sample_discrete(model, data, samples, temperature=0, vectorize=True)["z"]
    slow = sample_discrete(model, data, samples, temperature=0, vectorize=False)["z"]
    expected = torch.stack([em.e_step(data, d)[0].argmax(-1) for d in draws])
    assert torch.equal(fast[0], expected) and torch.equal(slow[0], expected)


def test_vectorised_draws_of_z_follow_the_e_step_posterior():
    table, _ = simulate_annotations(6, WorkerPopulation(3, dominance=0.6), 2, seed=3)
    model = DawidSkene()
    data = model.prepare(table)
    params = random_params(3, 2, seed=2)
    n = 4000
    samples = {k: v.expand(1, n, *v.shape) for k, v in params.items()}
    z = sample_discrete(model, data, samples, seed=0, vectorize=True)["z"][0]
    q, _ = em.e_step(data, params)
    # each draw is independent: the fraction of z_n = 1 is a Monte Carlo mean (5 standard errors)
    assert_mc_mean((z == 1).double().numpy(), q[:, 1].numpy(), n_se=5)


def test_inference_data_has_marginal_log_likelihood_and_observed_labels():
    table, _ = simulate_annotations(20, WorkerPopulation(3, missing_rate=0.2), 2, seed=1)
    post = DawidSkene().fit(table, method="gibbs", seed=0, num_samples=20, num_warmup=5,
                            progress=False)
    idata = post.to_inference_data()
    assert idata.log_likelihood["y"].shape == (2, 20, 20)
    obs = idata.observed_data["y"].values
    data = post.data
    assert obs.shape == tuple(data.mask.shape)
    assert (obs[~data.mask.numpy()] == -1).all()
    assert sorted(obs[data.mask.numpy()].tolist()) == sorted(table.label_idx.tolist())


def test_exact_posterior_refuses_big_problems_and_missing_sites():
    model = DawidSkene(allow_unlabelled=True)
    data = model.prepare(tiny_table())
    with pytest.raises(ValueError, match="max_labelings"):
        exact_posterior(model, data, random_params(3, 3, seed=0), max_labelings=100)
    with pytest.raises(ValueError, match="confusion"):
        exact_posterior(model, data, {"prior": torch.full((3,), 1 / 3)})


def test_predictive_groups_keep_the_label_slots_and_feed_plot_ppc():
    import arviz as az
    import matplotlib.pyplot as plt

    table, _ = simulate_annotations(20, WorkerPopulation(3, missing_rate=0.2), 2, seed=1)
    post = DawidSkene().fit(table, method="gibbs", seed=0, num_samples=10, num_warmup=5,
                            progress=False)
    idata = post.to_inference_data(predictive=True, num_prior_draws=25)
    mask = post.data.mask.numpy()
    rep = idata.posterior_predictive["y"]
    assert rep.dims == ("chain", "draw", "item", "slot")
    assert rep.shape == (2, 10) + mask.shape
    assert (rep.values[..., ~mask] == -1).all()
    assert set(rep.values[..., mask].ravel().tolist()) <= {0, 1}
    assert idata.prior["confusion"].dims == ("chain", "draw", "worker", "true_class", "label")
    assert idata.prior_predictive["y"].shape == (1, 25) + mask.shape
    assert idata.log_likelihood["y"].dims == ("chain", "draw", "item")
    az.plot_ppc(idata, num_pp_samples=5)
    plt.close("all")


def test_loo_on_an_em_fit_raises_a_clear_error():
    import arviz as az

    table, _ = simulate_annotations(20, 3, 2, seed=1)
    idata = DawidSkene().fit(table, method="em", seed=0, progress=False).to_inference_data()
    with pytest.raises(ValueError, match="loo and waic .* undefined"):
        az.loo(idata)
