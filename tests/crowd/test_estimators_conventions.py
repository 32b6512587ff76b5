"""The conventions users bring to the facades: crowd-kit's errors_, scikit-learn's random_state,
NotFittedError and clone, pickling, NUTS, and the py.typed marker."""

import pickle
import tomllib
import warnings
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import sklearn.exceptions
from sklearn.base import clone

from pyromodels.core import ConvergenceWarning, NotFittedError
from pyromodels.crowd import (
    DawidSkene,
    DawidSkeneEstimator,
    MajorityVote,
    NetworkedDawidSkeneEstimator,
    SequentialDawidSkeneEstimator,
)
from pyromodels.data import WorkerPopulation, load_crowd, simulate_annotations

crowdkit = pytest.importorskip("crowdkit.aggregation")

FACADES = (MajorityVote, DawidSkeneEstimator, SequentialDawidSkeneEstimator,
           NetworkedDawidSkeneEstimator)


def frame(n=80, m=4, seed=2):
    table, _ = simulate_annotations(n, WorkerPopulation(m, dominance=0.75), 3, seed=seed)
    df = table.to_frame()
    df["worker"] = "w" + df["worker"].astype(str)
    return df


def test_errors_match_crowd_kits_dawid_skene_on_bluebirds():
    answers, _ = load_crowd("bluebirds")
    ck = crowdkit.DawidSkene(n_iter=100, tol=1e-5).fit(answers)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        ours = DawidSkeneEstimator(n_iter=len(ck.loss_history_), tol=1e-300,
                                   diagonal=0.0).fit(answers)
    assert ours.errors_.index.names == ck.errors_.index.names == ["worker", "label"]
    assert sorted(ours.errors_.columns) == sorted(ck.errors_.columns)
    assert len(ours.errors_) == len(ck.errors_)
    aligned = ours.errors_.loc[ck.errors_.index, ck.errors_.columns]
    np.testing.assert_allclose(aligned.to_numpy(), ck.errors_.to_numpy(), atol=1e-8)
    # the other orientation under its own name: rows (worker, true label)
    k = ours.confusions_.columns
    for worker in ours.errors_.index.get_level_values(0).unique()[:3]:
        np.testing.assert_allclose(ours.confusions_.loc[worker].loc[k, k].to_numpy(),
                                   ours.errors_.loc[worker].loc[k, k].to_numpy().T)


def test_init_confusion_reads_crowd_kits_layout_as_transposed():
    df = frame()
    fitted = DawidSkeneEstimator().fit(df)
    skewed = fitted.confusions_.copy()
    skewed.loc[:, :] = np.tile([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]], (4, 1))
    errors = skewed.stack().unstack(level=1)  # rows (worker, given), columns true
    errors.index.names = ["worker", "label"]
    with pytest.warns(UserWarning, match="did not converge"):
        a = DawidSkeneEstimator(n_iter=1, init_confusion=skewed).fit(df)
    with pytest.warns(UserWarning, match="did not converge"):
        b = DawidSkeneEstimator(n_iter=1, init_confusion=errors).fit(df)
    pd.testing.assert_frame_equal(a.confusions_, b.confusions_)
    bad = skewed.rename_axis(["worker", "given"])
    with pytest.raises(ValueError, match="laid out like confusions_ .* or like errors_"):
        DawidSkeneEstimator(init_confusion=bad).fit(df)


def test_nuts_through_the_facade():
    df = frame(n=30, m=4)
    em = DawidSkeneEstimator().fit(df)
    est = DawidSkeneEstimator(method="nuts", num_samples=15, num_warmup=15, num_chains=1).fit(df)
    assert est.posterior_.method == "nuts" and est.converged_ is None
    assert est.n_iter_ == 30 and len(est.loss_history_) == 15
    # the Bayesian posterior (Dirichlet(1) priors) and the ML fit agree on almost every task
    assert (est.labels_ != em.labels_).mean() <= 0.1
    np.testing.assert_allclose(est.errors_.groupby(level=0).sum(), 1.0, atol=1e-6)


def test_random_state_is_the_seed_and_wins_over_seed():
    df = frame(n=40)
    options = {"method": "gibbs", "num_samples": 20, "num_warmup": 10, "num_chains": 1}
    by_seed = DawidSkeneEstimator(seed=3, **options).fit(df)
    by_state = DawidSkeneEstimator(random_state=3, seed=0, **options).fit(df)
    assert by_state.posterior_.attrs["seed"] == 3
    pd.testing.assert_frame_equal(by_state.probas_, by_seed.probas_)
    generator = DawidSkeneEstimator(random_state=np.random.RandomState(0), **options).fit(df)
    assert generator.posterior_.attrs["seed"] == np.random.RandomState(0).randint(2**31 - 1)
    ties = pd.DataFrame({"task": ["a", "a"] * 20, "worker": ["u", "v"] * 20,
                         "label": ["x", "y"] * 20}).assign(task=[f"t{i // 2}" for i in range(40)])
    assert MajorityVote(random_state=5).fit_predict(ties).equals(
        MajorityVote(seed=5).fit_predict(ties))
    with pytest.raises(TypeError, match="random_state must be None, an int, a numpy RandomState"):
        MajorityVote(random_state="7").fit(ties)
    with pytest.raises(ValueError, match="random_state must be an integer >= 0, got -1"):
        MajorityVote(random_state=-1).fit(ties)


@pytest.mark.parametrize("facade", FACADES)
def test_not_fitted_is_scikit_learns_error_and_clone_works(facade):
    assert issubclass(NotFittedError, sklearn.exceptions.NotFittedError)
    est = facade(random_state=4)
    with pytest.raises(sklearn.exceptions.NotFittedError, match="call fit"):
        _ = est.labels_
    copy = clone(est)
    assert copy.get_params() == est.get_params() and copy is not est


def test_clone_of_a_fitted_facade_is_unfitted_and_models_are_not_estimators():
    est = DawidSkeneEstimator(n_iter=50).fit(frame(n=30))
    copy = clone(est)
    assert copy.n_iter == 50
    with pytest.raises(NotFittedError):
        _ = copy.labels_
    # a model holds model arguments only and fit returns a Posterior: clone does not apply
    with pytest.raises(TypeError, match="get_params"):
        clone(DawidSkene())
    import pyromodels.crowd as crowd

    assert "clone" in crowd.__doc__ and "not estimators" in crowd.__doc__


@pytest.mark.parametrize("method", ["em", "gibbs"])
def test_fitted_estimators_pickle_and_predict_the_same(method):
    df = frame()
    knobs = {"num_samples": 30, "num_warmup": 10, "num_chains": 1} if method == "gibbs" else {}
    est = DawidSkeneEstimator(method=method, **knobs).fit(df)
    again = pickle.loads(pickle.dumps(est))
    new = df[df["task"] < 10].assign(task=lambda d: "new-" + d["task"].astype(str))
    pd.testing.assert_series_equal(again.predict(new), est.predict(new))
    pd.testing.assert_frame_equal(again.predict_proba(new), est.predict_proba(new))
    pd.testing.assert_frame_equal(again.errors_, est.errors_)
    mv = MajorityVote().fit(df)
    pd.testing.assert_series_equal(pickle.loads(pickle.dumps(mv)).labels_, mv.labels_)


def test_package_is_marked_typed():
    assert resources.files("pyromodels").joinpath("py.typed").is_file()
    pyproject = tomllib.loads((Path(__file__).parents[2] / "pyproject.toml").read_text())
    assert "py.typed" in pyproject["tool"]["setuptools"]["package-data"]["pyromodels"]


def test_a_missing_column_names_the_facades_own_argument():
    df = pd.DataFrame({"question": ["a", "a"], "worker": ["u", "v"], "label": [0, 1]})
    with pytest.raises(ValueError, match=r"Name the right columns with task=") as err:
        DawidSkeneEstimator().fit(df)
    assert "item=" not in str(err.value)
    # the shared data's 'item' column is taken as the task column
    fitted = DawidSkeneEstimator().fit(df.rename(columns={"question": "item"}))
    assert list(fitted.labels_.index) == ["a"]


def test_an_em_fit_keeps_its_own_posteriors_which_equal_a_second_prediction():
    df, _ = load_crowd("bluebirds")
    fitted = DawidSkeneEstimator(method="em").fit(df)
    again = fitted.model_.predict(fitted.posterior_, fitted.posterior_.data.table)
    np.testing.assert_allclose(fitted.posterior_.params["probas"].numpy(), again.cpu().numpy(),
                               rtol=0, atol=1e-12)
    # probas_ (crowd-kit's) are those of the parameters one step earlier
    earlier = DawidSkeneEstimator(n_iter=fitted.n_iter_ - 1, tol=0).fit(df)
    np.testing.assert_allclose(fitted.probas_.to_numpy(),
                               earlier.posterior_.params["probas"].numpy(), rtol=0, atol=1e-12)
