"""The LTVAE: its tree prior, the per-batch EM update, the alternation, the search hook,
the facet readout and the checks of its input."""

import math
import warnings

import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro.infer import Trace_ELBO

from pyromodels.core import PosteriorCollapseWarning, run_stepwise_em
from pyromodels.ltvae import LTVAE, TreePrior
from pyromodels.metrics import clustering_accuracy
from pyromodels.trees import LatentTree, LatentTreeModel, TreeParams
from pyromodels.trees.em import params_to_dict


def _blobs(n=30, sep=6.0, seed=0):
    """Two Gaussian blobs at (-sep, -sep) and (sep, sep) with unit variance, and their labels."""
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([torch.randn(n, 2, generator=g, dtype=torch.float64) - sep,
                   torch.randn(n, 2, generator=g, dtype=torch.float64) + sep])
    return x, np.repeat([0, 1], n)


def _gmm_params():
    tree = LatentTree.single(3, 2)
    means = torch.tensor([[-1.0, 0.5], [0.0, 2.0], [1.5, -1.0]], dtype=torch.float64)
    scales = torch.tensor([[0.5, 1.2], [0.8, 0.7], [1.1, 0.4]], dtype=torch.float64)
    rho = torch.tensor([0.2, 0.5, 0.3], dtype=torch.float64)
    params = TreeParams(tree, rho, [None], [means[:, :1], means[:, 1:]],
                        [scales[:, :1, None], scales[:, 1:, None]])
    mixture = dist.MixtureSameFamily(dist.Categorical(probs=rho),
                                     dist.Normal(means, scales).to_event(1))
    return params, mixture


def test_the_single_node_tree_prior_is_the_gmm_density_and_gives_the_same_elbo():
    params, mixture = _gmm_params()
    z = torch.randn(4, 5, 2, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    torch.testing.assert_close(TreePrior(params)(z), mixture.log_prob(z), rtol=0, atol=1e-12)
    x, _ = _blobs(10)
    model = LTVAE(latent_dim=2, hidden=(5,), tree=params.tree)
    losses = []
    pyro.clear_param_store()
    model.vae(mixture).guide(model.vae(mixture).prepare(x))   # the networks' weights, shared
    for prior in (TreePrior(params), mixture):
        vae = model.vae(prior)
        data = vae.prepare(x)
        pyro.set_rng_seed(3)  # the same draws of z from the guide
        losses.append(Trace_ELBO(max_plate_nesting=1).loss(vae.model, vae.guide, data))
    pyro.clear_param_store()
    assert math.isfinite(losses[0])
    assert losses[0] == pytest.approx(losses[1], abs=1e-9)


def test_the_prior_gradient_in_z_is_eq_6():
    params, mixture = _gmm_params()
    z = torch.randn(7, 2, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    z.requires_grad_(True)
    TreePrior(params)(z).sum().backward()
    comp = mixture.component_distribution
    weights = (mixture.mixture_distribution.logits + comp.log_prob(z.detach()[:, None])).softmax(-1)
    means, variances = comp.base_dist.loc, comp.base_dist.scale ** 2
    eq6 = (weights[..., None] * (means - z.detach()[:, None]) / variances).sum(1)
    torch.testing.assert_close(z.grad, eq6, rtol=0, atol=1e-12)


@pytest.mark.parametrize("covariance,running", [("fixed", "rebuilt"), ("full", "average")])
def test_the_per_batch_update_is_one_stepwise_em_step_on_the_batch_codes(covariance, running):
    x, _ = _blobs(20)
    tree = LatentTree.single(2, 2, pouch=covariance == "full")
    start = TreeParams.random(tree, torch.Generator().manual_seed(0), dtype=torch.float64)
    if covariance == "fixed":
        start = TreeParams(tree, start.root_probs, [None], list(start.means),
                           [torch.eye(1, dtype=torch.float64).expand(2, 1, 1)] * 2)
    seen = []
    model = LTVAE(latent_dim=2, hidden=(6,), tree=tree, covariance=covariance)
    post = model.fit(x, num_epochs=1, batch_size=40, step_size=0.3, running=running,
                     tree_params=start, seed=2, progress=False,
                     callbacks=[lambda step, info: seen.append(info)])
    assert len(seen) == 1
    z = seen[0]["z"]
    direct = run_stepwise_em(LatentTreeModel(tree, covariance), z, batch_size=40, num_epochs=1,
                             step_size=0.3, running=running, shuffle=False,
                             init=params_to_dict(start), seed=0, progress=False)
    fitted = model.tree_params(post)
    for key, value in params_to_dict(fitted).items():
        torch.testing.assert_close(value, direct.params[key], rtol=0, atol=1e-12)
        torch.testing.assert_close(value, params_to_dict(seen[0]["tree_params"])[key])
    assert not torch.allclose(fitted.means[0], start.means[0])


def test_em_uses_the_elbo_draws_or_the_encoder_means():
    x, _ = _blobs(10)
    runs = {}
    for points in ("sample", "mean"):
        LTVAE(latent_dim=2, hidden=(6,), cardinality=2).fit(
            x, num_epochs=1, batch_size=20, em_points=points, seed=4, progress=False,
            callbacks=[lambda step, info, key=points: runs.update({key: info["z"]})])
    # the same seed: the same weights and batch, so the draws are the means plus the guide's
    # zero-mean noise (its mean within 4 standard errors of 0)
    noise = (runs["sample"] - runs["mean"]).flatten()
    assert float(noise.abs().min()) > 0
    assert abs(float(noise.mean())) < 4 * float(noise.std()) / math.sqrt(noise.numel())


def test_gradients_reach_the_networks_and_not_the_tree_parameters():
    params, _ = _gmm_params()
    x, _ = _blobs(10)
    model = LTVAE(latent_dim=2, hidden=(5,), tree=params.tree)
    grads = []
    for shift in (0.0, 3.0):
        pyro.clear_param_store()
        moved = TreeParams(params.tree, params.root_probs, [None],
                           [m + shift for m in params.means], list(params.scale_trils))
        vae = model.vae(TreePrior(moved))
        data = vae.prepare(x)
        pyro.set_rng_seed(0)
        Trace_ELBO(max_plate_nesting=1).differentiable_loss(vae.model, vae.guide, data).backward()
        store = pyro.get_param_store()
        assert all(k.startswith(("encoder.", "decoder.")) for k in store.keys())
        weight = store.get_param("encoder.net.0.weight")
        grads.append(weight.grad.clone())
        assert all(t.grad is None and not t.requires_grad for t in moved.tensors())
    pyro.clear_param_store()
    assert grads[0].abs().sum() > 0
    assert not torch.allclose(grads[0], grads[1])     # the tree prior's gradient reaches them
    # in a fit the optimiser moves the networks' weights while Θ changes only by EM
    weights = []
    fit = LTVAE(latent_dim=2, hidden=(5,), tree=params.tree).fit(
        x, num_epochs=2, batch_size=20, tree_params=params, seed=0, progress=False,
        callbacks=[lambda step, info: weights.append(
            pyro.get_param_store().get_param("encoder.net.0.weight").detach().clone())])
    assert len(weights) == 2 and not torch.allclose(weights[0], weights[1])
    assert all(not v.requires_grad for k, v in fit.params.items() if k.startswith("tree."))


def test_a_tiny_fit_separates_two_blobs():
    # Bayes error of the two blobs (unit variance, centres 12 * sqrt(2) apart) is about
    # Phi(-8.5) ~ 1e-17: a fit that keeps the blobs apart misassigns nothing; 0.95 leaves
    # room for 3 of the 60 points on a network of 16 units trained for 5 short epochs.
    x, labels = _blobs(30)
    model = LTVAE(latent_dim=2, hidden=(16,), cardinality=2)
    post = model.fit(x, num_epochs=5, batch_size=16, step_size=0.1, seed=0, progress=False)
    frame = model.facets(post, x)
    assert list(frame.columns) == ["Y"] and len(frame) == 60
    assert clustering_accuracy(labels, frame["Y"].to_numpy()) >= 0.95
    np.testing.assert_array_equal(model.predict(post, x), frame["Y"].to_numpy())
    est = model.importance_log_likelihood(post, x[:6], k=16, batch_size=8)
    assert est.per_point.shape == (6,) and bool(torch.isfinite(est.per_point).all())
    assert len(post.losses) == 5 * 4 and len(post.diagnostics["tree_log_likelihood"]) == 20


def test_the_search_hook_runs_every_few_epochs_and_its_result_is_used():
    x, _ = _blobs(10)
    two = LatentTree.from_edges({"A": 2, "B": 3}, [("A", "B")], [("A", [0]), ("B", [1])])
    calls, trees_seen = [], []

    def search(z, tree, params):
        calls.append((tuple(z.shape), tree, params.tree))
        found = TreeParams.random(two, torch.Generator().manual_seed(len(calls)),
                                  dtype=torch.float64)
        return two, found

    model = LTVAE(latent_dim=2, hidden=(6,), cardinality=2)
    post = model.fit(x, num_epochs=5, batch_size=10, search=search, search_every=2, seed=1,
                     progress=False,
                     callbacks=[lambda step, info: trees_seen.append(info["tree_params"].tree)])
    assert [c[0] for c in calls] == [(20, 2), (20, 2)]
    assert calls[0][1] == model.tree and calls[1][1] == two      # the returned tree is kept
    assert [s["epoch"] for s in post.diagnostics["searches"]] == [2, 4]
    per_epoch = post.diagnostics["steps_per_epoch"]
    assert all(t == model.tree for t in trees_seen[:2 * per_epoch])
    assert all(t == two for t in trees_seen[2 * per_epoch:])
    fitted = model.tree_params(post)
    assert fitted.tree == two
    for tril in fitted.scale_trils:    # covariance="fixed": reset to alpha * I after a search
        torch.testing.assert_close(tril, torch.eye(1, dtype=tril.dtype).expand_as(tril))
    assert list(model.facets(post, x).columns) == ["A", "B"]
    assert set(model.predict(post, x, facet="B")) <= {0, 1, 2}


def test_bad_input_is_rejected_with_clear_errors():
    x, _ = _blobs(10)
    with pytest.raises(ValueError, match="latent_dim=3"):
        LTVAE(latent_dim=3, tree=LatentTree.single(2, 2))
    with pytest.raises(TypeError, match="tree must be a LatentTree"):
        LTVAE(latent_dim=2, tree="Y")
    model = LTVAE(latent_dim=2, hidden=(4,), cardinality=2)
    bad = x.clone()
    bad[3, 1] = float("nan")
    with pytest.raises(ValueError, match="x"):
        model.fit(bad, num_epochs=1, progress=False)
    with pytest.raises(ValueError, match="em_points"):
        model.fit(x, num_epochs=1, em_points="mode", progress=False)
    with pytest.raises(ValueError, match="search"):
        model.fit(x, num_epochs=1, search="bic", progress=False)
    other = TreeParams.random(LatentTree.single(3, 2), dtype=torch.float64)
    with pytest.raises(ValueError, match="tree_params"):
        model.fit(x, num_epochs=1, tree_params=other, progress=False)
    with pytest.raises(TypeError, match=r"\(tree, params\)"):
        model.fit(x, num_epochs=2, search_every=1, search=lambda z, t, p: t, progress=False)
    post = model.fit(x, num_epochs=1, batch_size=20, seed=0, progress=False)
    with pytest.raises(ValueError, match="2 columns"):
        model.facets(post, torch.zeros(4, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="x"):
        model.facets(post, torch.full((4, 2), float("inf"), dtype=torch.float64))
    with pytest.raises(TypeError, match="LTVAE.fit"):
        model.facets(post.params, x)


def test_the_start_is_kmeans_on_the_codes_of_a_pretrained_autoencoder():
    from pyromodels.core.seeding import derive_seed
    from pyromodels.ltvae.tree_prior import kmeans_start
    from pyromodels.nn import StackedAutoencoder

    x, _ = _blobs(15)
    x = torch.cat([x, x.flip(1)], 1)                       # 4 columns
    ae = StackedAutoencoder((4, 6, 2), seed=5, dtype=torch.float64)
    model = LTVAE(latent_dim=2, hidden=(6,), likelihood="normal", cardinality=2)
    # negligible steps of the networks and of Θ: the fit ends where it starts
    post = model.fit(x, autoencoder=ae, num_epochs=1, batch_size=30, step_size=1e-12,
                     optim=pyro.optim.SGD({"lr": 1e-12}), seed=7, progress=False)
    codes = ae.encode(x)
    torch.testing.assert_close(model.encode(post, x)[0], codes)
    start = kmeans_start(model.tree, codes, 1.0, derive_seed(7, "kmeans"))
    for key, value in params_to_dict(model.tree_params(post)).items():
        torch.testing.assert_close(value, params_to_dict(start)[key])


def test_kmeans_start_gives_cluster_means_proportions_and_smoothed_cross_tables():
    from pyromodels.ltvae.tree_prior import kmeans_start

    x, _ = _blobs(20)
    z = torch.cat([x[:, :1], torch.cat([x[:30, 1:] * 0 - 5, x[30:, 1:] * 0 + 5])], 1)
    z[:30, 1] += torch.linspace(-0.1, 0.1, 30, dtype=torch.float64)
    tree = LatentTree.from_edges({"A": 2, "B": 2}, [("A", "B")], [("A", [0]), ("B", [1])])
    start = kmeans_start(tree, z, 0.5, seed=0)
    a = start.means[0][:, 0].sort().values
    torch.testing.assert_close(a, torch.stack([z[:20, 0].mean(), z[20:, 0].mean()]))
    torch.testing.assert_close(start.root_probs, torch.tensor([0.5, 0.5], dtype=torch.float64))
    # A splits the points 20/20, B 30/10: the cross table, plus one in every cell, by row
    table = start.cpts[1].sort(-1).values
    expected = torch.tensor([[1.0, 21.0], [11.0, 11.0]], dtype=torch.float64)
    expected = (expected / expected.sum(1, keepdim=True)).sort(-1).values
    torch.testing.assert_close(table.sort(0).values, expected.sort(0).values)
    for tril in start.scale_trils:
        torch.testing.assert_close(tril, 0.5 ** 0.5 * torch.ones_like(tril))
    with pytest.raises(ValueError, match="at least 2 rows"):
        kmeans_start(tree, z[:1], 1.0, seed=0)


def test_a_resumed_fit_equals_the_uninterrupted_one(tmp_path):
    x, _ = _blobs(12)
    two = LatentTree.from_edges({"A": 2, "B": 2}, [("A", "B")], [("A", [0]), ("B", [1])])

    def search(z, tree, params):
        return two, TreeParams.random(two, torch.Generator().manual_seed(0), dtype=torch.float64)

    settings = dict(batch_size=10, search=search, search_every=2, seed=3, progress=False)
    model = LTVAE(latent_dim=2, hidden=(6,), cardinality=2)
    whole = model.fit(x, num_epochs=4, **settings)
    path = tmp_path / "ltvae.ckpt"
    model.fit(x, num_epochs=3, checkpoint=path, **settings)
    steps = []
    resumed = model.fit(x, num_epochs=4, resume=path,
                        callbacks=[lambda step, info: steps.append((step, info["epoch"]))],
                        **settings)
    per_epoch = whole.diagnostics["steps_per_epoch"]
    assert steps == [(3 * per_epoch + i, 3) for i in range(1, per_epoch + 1)]   # only epoch 4
    assert torch.equal(resumed.losses, whole.losses)
    assert resumed.diagnostics["searches"] == whole.diagnostics["searches"]
    assert resumed.attrs["tree"] == whole.attrs["tree"]
    for key, value in whole.params.items():
        assert torch.equal(resumed.params[key], value), key
    with pytest.raises(ValueError, match="resume"):
        model.fit(x, num_epochs=4, resume=path, **{**settings, "search_every": 3})


def _fit_recording_collapse(x, **settings):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = LTVAE(latent_dim=2, hidden=(16,), cardinality=2).fit(x, **settings, progress=False)
    return post, [w for w in caught if issubclass(w.category, PosteriorCollapseWarning)]


def test_posterior_collapse_is_warned_about_and_can_be_silenced():
    """Identical rows: every encoder mean is the same, no unit is active. The two blobs of
    the tiny fit above: the means vary by 0.67 and 1.8 across rows (threshold 0.01)."""
    x, _ = _blobs(30)
    same = x[:1].expand(60, 2).clone()
    settings = dict(num_epochs=1, batch_size=16, seed=0)
    post, found = _fit_recording_collapse(same, **settings)
    assert (post.diagnostics["active_units"], post.diagnostics["latent_dim"]) == (0, 2)
    assert len(found) == 1 and found[0].filename == __file__
    assert str(found[0].message).startswith("LTVAE.fit: posterior collapse: 0 of 2 latent units")
    quiet, found = _fit_recording_collapse(same, **settings, diagnostic_warnings=False)
    assert found == [] and quiet.diagnostics["active_units"] == 0
    good, found = _fit_recording_collapse(x, num_epochs=5, batch_size=16, step_size=0.1, seed=0)
    assert found == [] and good.diagnostics["active_units"] == 2


def test_a_fit_from_an_autoencoder_on_pixels_scaled_by_five_stays_finite():
    # the release's pixel scale (MNIST times 0.02, [0, 5.1]): the pretrained layers' larger
    # activations once drove a freshly drawn log-scale head to codes in the hundreds, and the
    # first steps to non-finite values
    from sklearn.datasets import load_digits

    from pyromodels.nn import pretrain_autoencoder

    torch.manual_seed(0)
    x = torch.tensor(load_digits().data[:1437] / 16.0 * 5.1, dtype=torch.float32)
    ae = pretrain_autoencoder(x, dims=(256, 256, 10), layerwise_epochs=10, finetune_epochs=30,
                              batch_size=128, seed=0, cache=False, progress=False)
    post = LTVAE(10, hidden=(256, 256), cardinality=10).fit(
        x, num_epochs=3, batch_size=128, autoencoder=ae, seed=0, progress=False)
    assert bool(torch.isfinite(post.losses).all())
    assert post.losses[-1] < post.losses[0]
