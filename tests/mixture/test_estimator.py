"""The scikit-learn facade of the Gaussian mixture against the model class it wraps."""

import numpy as np
import pytest
import torch
from scipy.stats import multivariate_normal
from sklearn.base import clone
from sklearn.metrics import adjusted_rand_score
from sklearn.mixture import GaussianMixture
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

from pyromodels.mixture import BayesianGaussianMixture, GaussianMixtureModel


def three_blobs(seed=0):
    rng = np.random.default_rng(seed)
    centres = np.array([[-5.0, 0.0], [5.0, 0.0], [0.0, 6.0]])
    truth = np.repeat(np.arange(3), 40)
    return centres[truth] + rng.normal(size=(120, 2)), truth


def test_fit_returns_the_estimator_with_scikit_learn_attributes():
    X, _ = three_blobs()
    est = BayesianGaussianMixture(n_components=3, random_state=0)
    assert est.fit(X) is est
    assert est.weights_.shape == (3,) and est.means_.shape == (3, 2)
    assert est.covariances_.shape == (3, 2, 2) and est.n_features_in_ == 2
    np.testing.assert_allclose(est.covariances_ @ est.precisions_, np.broadcast_to(np.eye(2), (3, 2, 2)),
                               atol=1e-10)
    assert est.converged_ is True and est.n_iter_ >= 1 and est.seed_ == 0
    assert est.get_params()["n_components"] == 3


def test_em_facade_equals_the_model_class_fit_with_the_same_seed():
    X, _ = three_blobs()
    est = BayesianGaussianMixture(n_components=3, random_state=4, max_iter=100, tol=1e-6).fit(X)
    post = GaussianMixtureModel(3).fit(torch.as_tensor(X), method="em", seed=4, max_iter=100,
                                       tol=1e-6, progress=False)
    np.testing.assert_array_equal(est.means_, post.params["locs"].numpy())
    np.testing.assert_array_equal(est.weights_, post.params["weights"].numpy())
    np.testing.assert_array_equal(est.labels_, post.params["labels"].numpy())
    np.testing.assert_allclose(est.predict_proba(X), post.params["responsibilities"].numpy(), atol=1e-12)
    # score_samples is the model's marginal log-likelihood of each point at the fitted parameters
    pointwise = post.model.log_likelihood_pointwise(post.data, post.samples)["x"][0, 0].numpy()
    np.testing.assert_allclose(est.score_samples(X), pointwise, rtol=1e-12)
    assert est.score(X) == pytest.approx(pointwise.mean(), rel=1e-12)


def test_score_samples_is_the_mixture_density():
    X, _ = three_blobs()
    est = BayesianGaussianMixture(n_components=3, random_state=0).fit(X)
    dens = sum(w * multivariate_normal(m, c).pdf(X[:5])
               for w, m, c in zip(est.weights_, est.means_, est.covariances_))
    np.testing.assert_allclose(est.score_samples(X[:5]), np.log(dens), rtol=1e-10)


@pytest.mark.parametrize("method", ["em", "gibbs"])
def test_both_engines_recover_separated_clusters_as_scikit_learn_does(method):
    X, truth = three_blobs()
    est = BayesianGaussianMixture(n_components=3, method=method, num_warmup=50, num_samples=50,
                                  random_state=0)
    labels = est.fit_predict(X)
    peer = GaussianMixture(3, random_state=0).fit(X)
    assert adjusted_rand_score(truth, labels) == 1.0
    assert adjusted_rand_score(peer.predict(X), labels) == 1.0
    np.testing.assert_array_equal(labels, est.predict(X))


def test_gibbs_with_one_component():
    X, _ = three_blobs()
    est = BayesianGaussianMixture(n_components=1, method="gibbs", num_warmup=3, num_samples=3,
                                  random_state=0).fit(X)
    np.testing.assert_array_equal(est.weights_, [1.0])
    np.testing.assert_array_equal(est.labels_, np.zeros(len(X), dtype=int))


def test_random_state_forms():
    X, _ = three_blobs()

    def fit(rs):
        return BayesianGaussianMixture(n_components=3, method="gibbs", num_warmup=5, num_samples=5,
                                       random_state=rs).fit(X)

    np.testing.assert_array_equal(fit(3).means_, fit(3).means_)
    a, b = fit(np.random.RandomState(1)), fit(np.random.RandomState(1))
    assert a.seed_ == b.seed_
    np.testing.assert_array_equal(a.means_, b.means_)
    assert fit(None).seed_ >= 0
    with pytest.raises(TypeError, match="random_state must be None, an int"):
        fit("zero")
    with pytest.raises(ValueError, match="random_state"):
        fit(-1)


@pytest.mark.parametrize("params, name", [
    ({"method": "nuts"}, "method"),
    ({"n_components": 0}, "n_components"),
    ({"max_iter": 0}, "max_iter"),
    ({"weight_concentration_prior": 0.5}, "weight_concentration_prior must be >= 1 for EM"),
    ({"mean_precision_prior": -1.0}, "mean_precision_prior"),
    ({"degrees_of_freedom_prior": 2.0}, "degrees_of_freedom_prior must be > d = 2 for EM"),
    ({"num_samples": 0, "method": "gibbs"}, "num_samples"),
])
def test_bad_arguments_are_named_at_fit(params, name):
    X, _ = three_blobs()
    est = BayesianGaussianMixture(**{"n_components": 2, **params})  # stored as given
    with pytest.raises(ValueError, match=name):
        est.fit(X)


def test_bad_data_follows_scikit_learn():
    X, _ = three_blobs()
    with pytest.raises(ValueError, match="n_samples >= n_components"):
        BayesianGaussianMixture(n_components=5).fit(X[:4])
    with pytest.raises(ValueError, match="NaN"):
        BayesianGaussianMixture(n_components=2).fit(np.where(X == X[0, 0], np.nan, X))
    est = BayesianGaussianMixture(n_components=2, random_state=0).fit(X)
    with pytest.raises(ValueError, match="X has 3 features, but BayesianGaussianMixture is expecting 2"):
        est.predict(np.zeros((2, 3)))


def test_clone_and_pipeline():
    X, truth = three_blobs()
    est = BayesianGaussianMixture(n_components=3, random_state=0)
    copy = clone(est).set_params(n_components=2)
    assert copy.n_components == 2 and est.n_components == 3
    pipe = make_pipeline(StandardScaler(), est).fit(X)
    assert adjusted_rand_score(truth, pipe.predict(X)) == 1.0
