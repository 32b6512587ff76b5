"""The scikit-learn facades of the DP mixtures against the model classes they wrap."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal
from sklearn.metrics import adjusted_rand_score

from pyromodels.bnp import component_posterior
from pyromodels.ddpm import (
    DPGaussianMixture,
    DPMixture,
    DPMixturePrior,
    TruncatedDPGaussianMixture,
    TruncatedDPMixture,
    default_prior,
)


def three_blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[-6.0, 0.0], [6.0, 0.0], [0.0, 7.0]])
    truth = np.repeat(np.arange(3), 30)
    return centres[truth] + rng.normal(size=(90, 2)), truth


def test_dp_facade_finds_the_clusters_and_returns_itself():
    X, truth = three_blobs()
    est = DPGaussianMixture(num_warmup=20, num_samples=20, random_state=0)
    assert est.fit(X) is est
    assert est.n_components_ == 3 and est.weights_.shape == (3,) and est.means_.shape == (3, 2)
    assert adjusted_rand_score(truth, est.labels_) == 1.0
    np.testing.assert_array_equal(est.fit_predict(X), est.predict(X))
    assert est.n_iter_ == 40 and est.n_features_in_ == 2


def test_dp_facade_is_the_plug_in_mixture_of_the_best_draw():
    X, _ = three_blobs()
    est = DPGaussianMixture(num_warmup=10, num_samples=10, random_state=5).fit(X)
    x = torch.as_tensor(X)
    post = DPMixture().fit(x, method="gibbs", algorithm=3, num_warmup=10, num_samples=10,
                           num_chains=1, seed=5, progress=False)
    best = int(post.sample_stats["lp"].reshape(-1).argmax())
    labels = post["c"].reshape(-1, len(X))[best]
    np.testing.assert_array_equal(labels.numpy(), est.labels_)  # separated: no point moves
    counts = np.bincount(labels.numpy())
    np.testing.assert_allclose(est.weights_, counts / counts.sum(), rtol=1e-12)
    mu, lam = component_posterior(x, labels, default_prior(x).normal_gamma(2, data=x), 3).mean()
    np.testing.assert_allclose(est.means_, mu.numpy(), rtol=1e-12)
    np.testing.assert_allclose(est.precisions_, lam.numpy(), rtol=1e-12)


def test_weight_concentration_prior_is_the_dp_concentration():
    X, _ = three_blobs()
    est = DPGaussianMixture(0.25, prior=DPMixturePrior(kappa0=0.5), num_warmup=2, num_samples=3,
                            random_state=0).fit(X)
    assert torch.all(est.posterior_["alpha"] == 0.25)
    assert est.posterior_.model.prior == DPMixturePrior(kappa0=0.5, alpha=0.25)


def test_score_samples_is_the_fitted_isotropic_mixture():
    X, _ = three_blobs()
    for est in (DPGaussianMixture(num_warmup=5, num_samples=5, random_state=0),
                TruncatedDPGaussianMixture(6, num_warmup=10, num_samples=10, random_state=0)):
        est.fit(X)
        dens = sum(w * multivariate_normal(m, c * np.eye(2)).pdf(X[:5])
                   for w, m, c in zip(est.weights_, est.means_, est.covariances_))
        np.testing.assert_allclose(est.score_samples(X[:5]), np.log(dens), rtol=1e-10)
        assert est.score(X) == pytest.approx(est.score_samples(X).mean(), rel=1e-12)


@pytest.mark.parametrize("num_chains", [1, 3])
def test_truncated_facade_keeps_the_occupied_components_of_the_best_draw(num_chains):
    X, truth = three_blobs()
    est = TruncatedDPGaussianMixture(6, num_warmup=20, num_samples=20, num_chains=num_chains,
                                     random_state=2).fit(X)
    model = TruncatedDPMixture(truncation=6)
    post = model.fit(torch.as_tensor(X), method="gibbs", num_warmup=20, num_samples=20,
                     num_chains=num_chains, seed=2, progress=False)
    chain, draw = divmod(int(post.sample_stats["lp"].reshape(-1).argmax()), 20)
    one = replace(post, samples={k: v[chain:chain + 1, draw:draw + 1] for k, v in post.samples.items()})
    model_labels = model.predict(one, torch.as_tensor(X)).labels.numpy()
    kept = np.unique(model_labels)
    assert est.n_components_ == len(kept) == 3
    np.testing.assert_array_equal(est.labels_, np.searchsorted(kept, model_labels))
    np.testing.assert_allclose(est.means_, post["mu"][chain, draw][kept].numpy(), rtol=1e-12)
    assert adjusted_rand_score(truth, est.labels_) == 1.0
    assert est.weights_.sum() == pytest.approx(1.0, abs=1e-12)


@pytest.mark.parametrize("est, error, name", [
    (TruncatedDPGaussianMixture(0), ValueError, "n_components"),
    (DPGaussianMixture(-1.0), ValueError, "weight_concentration_prior"),
    (DPGaussianMixture(prior={"alpha": 1.0}), TypeError, "prior must be a DPMixturePrior"),
    (DPGaussianMixture(algorithm=4), ValueError, "algorithm"),
    (DPGaussianMixture(num_samples=0), ValueError, "num_samples"),
    (TruncatedDPGaussianMixture(random_state=1.5), TypeError, "random_state"),
])
def test_bad_arguments_are_named_at_fit(est, error, name):
    X, _ = three_blobs()
    with pytest.raises(error, match=name):
        est.fit(X)
