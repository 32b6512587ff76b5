"""The VAE's program, its pluggable prior, its fit and the checks of its input."""

import math
import warnings

import numpy as np
import pyro
import pyro.distributions as dist
import pytest
import torch
from pyro import poutine

from pyromodels.core import Posterior, PosteriorCollapseWarning
from pyromodels.ltvae import VAE


def _binary(n=30, d=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.rand(n, d, generator=g) < 0.3).to(torch.float64)


def _real(n=30, d=4, seed=0):
    return torch.randn(n, d, generator=torch.Generator().manual_seed(seed))


def _standard_log_density(z):
    return torch.distributions.Normal(0.0, 1.0).log_prob(z).sum(-1)


def test_bernoulli_program_sites_and_fitted_shapes():
    x = _binary()
    vae = VAE(3, hidden=(8,))
    data = vae.prepare(x, batch_size=10)
    assert data.likelihood == "bernoulli" and data.steps_per_epoch == 3
    guide = poutine.trace(vae.guide).get_trace(data)
    tr = poutine.trace(poutine.replay(vae.model, trace=guide)).get_trace(data)
    assert tr.nodes["z"]["value"].shape == (10, 3)
    assert isinstance(tr.nodes["x"]["fn"].base_dist, dist.Bernoulli)
    assert tr.nodes["x"]["fn"].batch_shape == (10,) and tr.nodes["x"]["fn"].event_shape == (6,)
    post = vae.fit(x, num_epochs=2, batch_size=10, seed=0, progress=False)
    assert isinstance(post, Posterior) and post.losses.shape == (6,)
    assert post.attrs["objective"] == "elbo" and post.samples == {}
    assert post.params["decoder.net.2.weight"].shape == (6, 8)     # D logits, no variance
    loc, scale = vae.encode(post, x)
    assert loc.shape == scale.shape == (30, 3) and bool((scale > 0).all())
    est = vae.importance_log_likelihood(post, x, k=20, batch_size=8)
    assert est.per_point.shape == (30,) and bool(torch.isfinite(est.per_point).all())


def test_a_callable_prior_and_a_distribution_prior_equal_the_default_standard_normal():
    x = _real()
    base = VAE(2, hidden=(6,), likelihood="normal")
    post = base.fit(x, num_epochs=3, batch_size=15, seed=1, progress=False)
    ref = base.importance_log_likelihood(post, x, k=30, seed=4)
    for prior in (_standard_log_density,
                  dist.MultivariateNormal(torch.zeros(2), torch.eye(2))):
        other = VAE(2, hidden=(6,), likelihood="normal", prior=prior)
        est = other.importance_log_likelihood(post, x, k=30, seed=4)
        torch.testing.assert_close(est.per_point, ref.per_point)
    # the same fit from the same seed whatever form the prior takes
    again = VAE(2, hidden=(6,), likelihood="normal", prior=_standard_log_density).fit(
        x, num_epochs=3, batch_size=15, seed=1, progress=False)
    torch.testing.assert_close(again.losses, post.losses)


def test_a_callable_prior_enters_the_bound_as_its_log_density():
    x = _real()
    vae = VAE(2, hidden=(6,), likelihood="normal")
    post = vae.fit(x, num_epochs=1, batch_size=30, seed=0, progress=False)
    ref = vae.importance_log_likelihood(post, x, k=1, seed=3)
    shifted = VAE(2, hidden=(6,), likelihood="normal",
                  prior=lambda z: _standard_log_density(z) - 1.5)
    est = shifted.importance_log_likelihood(post, x, k=1, seed=3)
    torch.testing.assert_close(est.per_point, ref.per_point - 1.5)


def test_a_gaussian_mixture_prior_as_a_callable_is_fitted_by_both_objectives():
    locs = torch.tensor([[-2.0, 0.0], [2.0, 0.0]])

    def mixture(z):
        comps = torch.distributions.Normal(locs, 1.0).log_prob(z.unsqueeze(-2)).sum(-1)
        return torch.logsumexp(comps, -1) - math.log(2)

    vae = VAE(2, hidden=(6,), prior=mixture)
    for objective in ("elbo", "iwae"):
        post = vae.fit(_real(), objective=objective, num_particles=4, num_epochs=2,
                       batch_size=10, seed=0, progress=False)
        assert bool(torch.isfinite(post.losses).all())
        assert post.attrs["num_particles"] == 4


def test_the_iwae_fit_raises_its_bound():
    x = _real(60)
    vae = VAE(2, hidden=(8,), likelihood="normal")
    post = vae.fit(x, objective="iwae", num_particles=5, num_epochs=40, batch_size=60, lr=1e-2,
                   seed=0, progress=False)
    first, last = post.losses[:5].mean(), post.losses[-5:].mean()
    assert float(last) < float(first)


def test_bad_input_is_reported():
    x = _real()
    vae = VAE(2, hidden=(4,), likelihood="normal")
    post = vae.fit(x, num_epochs=1, batch_size=30, seed=0, progress=False)
    with pytest.raises(ValueError, match="x must have 4 columns"):
        vae.importance_log_likelihood(post, x[:, :3], k=5)
    with pytest.raises(ValueError, match="x must have 4 columns"):
        vae.encode(post, torch.zeros(3, 5))
    bad = x.clone()
    bad[0, 0] = float("nan")
    with pytest.raises(ValueError, match="x"):
        vae.fit(bad, num_epochs=1, progress=False)
    with pytest.raises(ValueError, match="x"):
        vae.importance_log_likelihood(post, bad, k=5)
    with pytest.raises(ValueError, match="k must be"):
        vae.importance_log_likelihood(post, x, k=0)
    with pytest.raises(ValueError, match="2-dimensional"):
        vae.fit(torch.zeros(5), progress=False)
    with pytest.raises(ValueError, match="objective must be one of"):
        vae.fit(x, objective="renyi", progress=False)
    with pytest.raises(ValueError, match="num_particles"):
        vae.fit(x, objective="iwae", num_particles=0, progress=False)
    with pytest.raises(ValueError, match="needs binary observations"):
        VAE(2, likelihood="bernoulli").fit(x, progress=False)
    with pytest.raises(TypeError, match="posterior must be a Posterior"):
        vae.encode("fit", x)
    with pytest.raises(ValueError, match="no encoder weights"):
        vae.encode({}, x)
    with pytest.raises(ValueError, match=r"do not fit this VAE \(latent_dim=3"):
        VAE(3, hidden=(4,), likelihood="normal").encode(post, x)
    with pytest.raises(ValueError, match="do not fit this VAE"):
        VAE(2, hidden=(4, 4), likelihood="normal").encode(post, x)
    with pytest.raises(TypeError, match="prior must be None, a torch Distribution or a callable"):
        VAE(2, prior="normal")
    with pytest.raises(ValueError, match=r"event shape \(2,\)"):
        VAE(2, prior=dist.Normal(torch.zeros(3), 1.0).to_event(1))
    wrong = VAE(2, hidden=(4,), likelihood="normal", prior=lambda z: z)   # not summed over J
    with pytest.raises(ValueError, match="log density must return a tensor of shape"):
        wrong.importance_log_likelihood(post, x, k=3)
    binary = VAE(2, hidden=(4,))
    bpost = binary.fit(_binary(d=4), num_epochs=1, progress=False, seed=0)
    with pytest.raises(ValueError, match="needs binary observations"):
        binary.importance_log_likelihood(bpost, x, k=3)


def test_importance_weights_refuse_a_site_outside_the_data_plate():
    from pyromodels.ltvae import importance_log_weights

    def model(x):
        mu = pyro.sample("mu", dist.Normal(0.0, 1.0))
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(mu, 1.0), obs=x)

    def guide(x):
        pyro.sample("mu", dist.Normal(0.0, 1.0))

    with pytest.raises(ValueError, match="site 'mu' is outside every plate"):
        importance_log_weights(model, guide, (torch.zeros(3),), num_samples=2)


def test_fits_are_reproducible_from_the_seed():
    x = _real()
    vae = VAE(2, hidden=(4,), likelihood="normal")
    a = vae.fit(x, num_epochs=2, batch_size=10, seed=3, progress=False)
    b = vae.fit(x, num_epochs=2, batch_size=10, seed=3, progress=False)
    torch.testing.assert_close(a.losses, b.losses)
    np.testing.assert_allclose(a.params["encoder.net.0.weight"].numpy(),
                               b.params["encoder.net.0.weight"].numpy())


def test_a_fit_can_start_from_a_pretrained_autoencoder():
    from pyromodels.nn import StackedAutoencoder

    x = _real()
    ae = StackedAutoencoder((4, 6, 2), seed=5)
    vae = VAE(2, hidden=(6,), likelihood="normal")
    # one step at a negligible learning rate leaves the autoencoder's weights in place
    post = vae.fit(x, autoencoder=ae, num_epochs=1, batch_size=30, optim=pyro.optim.SGD({"lr": 1e-12}),
                   seed=0, progress=False)
    torch.testing.assert_close(vae.encode(post, x)[0], ae.encode(x))
    fresh = vae.fit(x, num_epochs=1, batch_size=30, optim=pyro.optim.SGD({"lr": 1e-12}), seed=0,
                    progress=False)
    assert not torch.allclose(vae.encode(fresh, x)[0], ae.encode(x))
    with pytest.raises(ValueError, match=r"autoencoder must have the widths \(4, 6, 2\)"):
        vae.fit(x, autoencoder=StackedAutoencoder((4, 5, 2)), progress=False)
    with pytest.raises(TypeError, match="autoencoder must be a StackedAutoencoder"):
        vae.fit(x, autoencoder="ae", progress=False)
    with pytest.raises(ValueError, match="activation='relu'"):
        VAE(2, hidden=(6,), activation="tanh").fit(x, autoencoder=ae, progress=False)


def test_the_generic_estimator_checks_its_rows():
    from pyromodels.ltvae import importance_log_likelihood

    def model(x):
        with pyro.plate("data", len(x)):
            pyro.sample("x", dist.Normal(0.0, 1.0), obs=x)

    def guide(x):
        pass

    with pytest.raises(TypeError, match="x must be a tensor with at least one row"):
        importance_log_likelihood(model, guide, [1.0, 2.0], k=2)
    with pytest.raises(ValueError, match="x"):
        importance_log_likelihood(model, guide, torch.tensor([1.0, float("nan")]), k=2)
    # no latent site: every weight is p(x), for every k
    est = importance_log_likelihood(model, guide, torch.tensor([0.0, 1.0]), k=3)
    torch.testing.assert_close(est.per_point, dist.Normal(0.0, 1.0).log_prob(torch.tensor([0.0, 1.0])))


def test_a_latent_tree_prior_plugs_in_as_a_callable_log_density():
    # a one-node tree over one pouch is a Gaussian mixture: the tree's log p_S(z) by message
    # passing and the same mixture as a torch distribution give the same bound
    from pyromodels.trees import LatentTree, TreeParams, tree_log_likelihood

    params = TreeParams.random(LatentTree.single(3, 2, pouch=True),
                               torch.Generator().manual_seed(1))

    def log_p_tree(z):
        return tree_log_likelihood(params, z.reshape(-1, 2)).reshape(z.shape[:-1])

    mixture = dist.MixtureSameFamily(dist.Categorical(params.root_probs),
                                     dist.MultivariateNormal(params.means[0],
                                                             scale_tril=params.scale_trils[0]))
    x = _real()
    tree_vae = VAE(2, hidden=(6,), likelihood="normal", prior=log_p_tree)
    post = tree_vae.fit(x, num_epochs=2, batch_size=15, seed=2, progress=False)
    by_tree = tree_vae.importance_log_likelihood(post, x, k=40, seed=0)
    by_mixture = VAE(2, hidden=(6,), likelihood="normal", prior=mixture).importance_log_likelihood(
        post, x, k=40, seed=0)
    torch.testing.assert_close(by_tree.per_point, by_mixture.per_point)


def _collapse_warnings(fit, x, **settings):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        post = fit(x, **settings, progress=False)
    return post, [w for w in caught if issubclass(w.category, PosteriorCollapseWarning)]


def test_a_fit_that_encodes_every_row_alike_warns_of_posterior_collapse():
    """Identical rows get identical encoder means: no unit can be active (Burda et al.'s
    0.01 on the N(0, I) scale)."""
    same = _real(1).expand(30, 4).clone()
    post, found = _collapse_warnings(VAE(2, hidden=(8,)).fit, same, num_epochs=1, seed=0)
    assert (post.diagnostics["active_units"], post.diagnostics["latent_dim"]) == (0, 2)
    assert len(found) == 1 and found[0].filename == __file__
    message = str(found[0].message)
    assert message.startswith("VAE.fit: posterior collapse: 0 of 2 latent units")
    assert "lr" in message and "autoencoder" in message
    quiet, found = _collapse_warnings(VAE(2, hidden=(8,)).fit, same, num_epochs=1, seed=0,
                                      diagnostic_warnings=False)
    assert found == [] and quiet.diagnostics["active_units"] == 0


def test_the_iwae_fit_keeps_its_units_active():
    """The IWAE test's fit: the encoder means vary by 0.036 and 0.041 across rows, above
    Burda et al.'s 0.01."""
    post, found = _collapse_warnings(VAE(2, hidden=(8,), likelihood="normal").fit, _real(60),
                                     objective="iwae", num_particles=5, num_epochs=40,
                                     batch_size=60, lr=1e-2, seed=0)
    assert found == [] and post.diagnostics["active_units"] == 2
