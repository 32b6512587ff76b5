import numpy as np
import pytest
import torch

from pyromodels.core import ModelSpecError
from pyromodels.mixture import GaussianMixtureModel


@pytest.mark.parametrize(
    "kwargs, err, match",
    [
        ({"num_components": 0}, ValueError, "num_components must be an integer >= 1"),
        ({"num_components": 2.0}, TypeError, "num_components must be an integer"),
    ],
)
def test_constructor_errors(kwargs, err, match):
    with pytest.raises(err, match=match):
        GaussianMixtureModel(**kwargs)


X = np.random.default_rng(0).normal(size=(20, 2))


@pytest.mark.parametrize(
    "data, kwargs, err, match",
    [
        (X[:, 0], {}, ValueError, r"data must be 2-dimensional, got shape \(20,\)"),
        (np.where(np.arange(40).reshape(20, 2) == 3, np.nan, X), {}, ValueError, "data must be finite"),
        (X[:0], {}, ValueError, "data must not be empty"),
        (X[:1], {}, ValueError, "data must have at least num_components=2 rows, got 1"),
        (X.astype(str), {}, TypeError, "data must be numeric"),
        (X, {"mean_prior": [0.0, 0.0, 0.0]}, ValueError, "mean_prior must have length 2"),
        (
            X,
            {"covariance_prior": [[1.0, 2.0], [2.0, 1.0]]},
            ValueError,
            "covariance_prior must be positive definite",
        ),
        (X, {"covariance_prior": [[1.0, 0.5], [0.0, 1.0]]}, ValueError, "covariance_prior must be symmetric"),
        (X, {"degrees_of_freedom": 0.5}, ValueError, r"degrees_of_freedom must be > d - 1 = 1"),
        (X, {"weight_concentration": -1.0}, ValueError, "weight_concentration must be > 0"),
        (X, {"mean_precision": 0}, ValueError, "mean_precision must be > 0"),
    ],
)
def test_prepare_errors(data, kwargs, err, match):
    with pytest.raises(err, match=match):
        GaussianMixtureModel(2, **kwargs).prepare(data)


def test_em_needs_an_interior_map():
    with pytest.raises(ValueError, match="weight_concentration must be >= 1 for EM"):
        GaussianMixtureModel(2, weight_concentration=0.5).fit(X, method="em", progress=False)
    with pytest.raises(ValueError, match="degrees_of_freedom must be > d = 2 for EM"):
        GaussianMixtureModel(2, degrees_of_freedom=1.5).fit(X, method="em", progress=False)


def test_unknown_method_and_runner_arguments():
    model = GaussianMixtureModel(2)
    with pytest.raises(ValueError, match=r"method must be one of \['em', 'gibbs', 'svi', 'nuts'\]"):
        model.fit(X, method="vb")
    with pytest.raises(ValueError, match="num_chains must be an integer >= 1"):
        model.fit(X, method="gibbs", num_chains=0)
    with pytest.raises(TypeError, match="callbacks\\[0\\] must be callable"):
        model.fit(X, method="em", callbacks=[3])
    with pytest.raises(ValueError, match="init fixes the start, so n_init must be 1"):
        model.fit(X, method="em", init={}, n_init=2)


def test_predict_checks_columns():
    post = GaussianMixtureModel(2).fit(X, method="em", seed=0, progress=False)
    probs = post.predict(X[:5])
    assert probs.shape == (5, 2) and torch.allclose(probs.sum(-1), torch.ones(5, dtype=probs.dtype))
    with pytest.raises(ValueError, match="new_data must have 2 columns"):
        post.predict(X[:, :1])


def test_missing_engine_hook_is_named():
    from pyromodels.core import Model, run_gibbs

    class Bare(Model):
        def model(self, data):
            pass

    match = r"Bare does not define init_state\(\), which the 'gibbs' engine needs"
    with pytest.raises(ModelSpecError, match=match):
        run_gibbs(Bare(), X)


def test_callback_can_stop_em_early():
    seen = []

    def stop_after_two(step, info):
        seen.append(info["objective"])
        return step >= 2

    post = GaussianMixtureModel(3).fit(
        X, method="em", seed=0, progress=False, callbacks=[stop_after_two], warn_not_converged=False
    )
    assert len(seen) == 2 and len(post.losses) == 3
