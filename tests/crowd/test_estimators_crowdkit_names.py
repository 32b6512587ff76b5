"""The facades under crowd-kit's argument and attribute names (crowd-kit's own tests run in
``crowdkit_compat/``): what those do not check."""

import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.crowd.ds import em
from pyromodels.crowd.estimators import DawidSkeneEstimator, MajorityVote
from pyromodels.crowd.majority import vote_fractions
from pyromodels.data import load_crowd
from pyromodels.data.annotations import MissingColumnError


@pytest.fixture
def bluebirds():
    return load_crowd("bluebirds")


def test_results_are_float64_when_the_fit_runs_in_float32(bluebirds):
    df, _ = bluebirds
    torch.set_default_dtype(torch.float32)  # the conftest restores float64 afterwards
    est = DawidSkeneEstimator().fit(df)
    assert est.posterior_.samples["confusion"].dtype == torch.float32
    for frame in (est.probas_, est.errors_, est.confusions_):
        assert (frame.dtypes == np.float64).all()
    assert est.priors_.dtype == np.float64
    np.testing.assert_allclose(est.probas_.sum(axis=1), 1.0, rtol=0, atol=1e-15)


@pytest.mark.parametrize("missing", ["task", "worker", "label"])
@pytest.mark.parametrize("make", [MajorityVote, DawidSkeneEstimator])
def test_a_missing_column_is_a_key_error_and_a_value_error(make, missing):
    df = pd.DataFrame({"task": [1, 1], "worker": [1, 2], "label": [0, 1]}).drop(columns=missing)
    with pytest.raises(KeyError) as info:
        make().fit(df)
    assert isinstance(info.value, ValueError) and isinstance(info.value, MissingColumnError)
    assert str(info.value).startswith(f"df is missing column(s) ['{missing}']")


def test_tol_zero_runs_every_step_and_does_not_warn(bluebirds):
    df, _ = bluebirds
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        est = DawidSkeneEstimator(n_iter=40, tol=0).fit(df)
    assert est.n_iter_ == 40 and not est.converged_
    assert len(est.loss_history_) == 41
    assert DawidSkeneEstimator(n_iter=40).fit(df).n_iter_ < 40  # converges earlier with tol


def test_n_iter_zero_returns_the_majority_vote_start(bluebirds):
    df, _ = bluebirds
    est = DawidSkeneEstimator(n_iter=0).fit(df)
    data = est.model_.prepare(est.posterior_.data)
    start = em.majority_start(data, est.model_.em_floor)
    np.testing.assert_allclose(est.confusions_.to_numpy(),
                               start["confusion"].reshape(-1, 2).numpy(), rtol=0, atol=1e-12)
    # probas_: the vote fractions the start was fitted to (crowd-kit's); the posterior keeps
    # the posteriors under the start
    fractions = vote_fractions(data.table)
    np.testing.assert_allclose(est.probas_.to_numpy(), fractions.numpy(), rtol=0, atol=1e-12)
    assert est.labels_.to_numpy().tolist() == fractions.argmax(-1).tolist()
    q, _ = em.e_step(data, start)
    np.testing.assert_allclose(est.posterior_.params["probas"].numpy(), q.numpy(), rtol=0,
                               atol=1e-12)
    assert est.n_iter_ == 0 and est.loss_history_ == pytest.approx([est.loss_history_[0]])


def test_gold_labels_are_held_and_em_stays_monotone(bluebirds):
    df, truth = bluebirds
    gold = truth.iloc[:30]
    # against the gold, the plurality is wrong on some of them
    plain = DawidSkeneEstimator().fit(df)
    assert (plain.labels_.loc[gold.index] != gold).any()
    est = DawidSkeneEstimator(tol=1e-10, n_iter=300).fit(df, true_labels=gold)
    assert (est.labels_.loc[gold.index] == gold).all()
    held = est.probas_.loc[gold.index].to_numpy()[np.arange(30), gold.to_numpy().astype(int)]
    np.testing.assert_array_equal(held, 1.0)
    assert np.all(np.diff(est.loss_history_) > -1e-9)
    assert est.converged_


def test_gold_labels_must_name_known_tasks_and_classes(bluebirds):
    df, truth = bluebirds
    with pytest.raises(ValueError, match="true_labels holds 1 task"):
        DawidSkeneEstimator().fit(df, true_labels=pd.Series({"no such task": 1}))
    with pytest.raises(ValueError, match="outside the classes"):
        DawidSkeneEstimator().fit(df, true_labels=pd.Series({truth.index[0]: 7}))
    with pytest.raises(ValueError, match="only by method='em'"):
        DawidSkeneEstimator(method="gibbs").fit(df, true_labels=truth.iloc[:3])


def test_initial_error_assign_is_init_confusion_and_addition_adds_counts(bluebirds):
    df, _ = bluebirds
    ref = DawidSkeneEstimator(n_iter=3, tol=0).fit(df)
    errors = ref.errors_
    assign = DawidSkeneEstimator(n_iter=3, tol=0, initial_error_strategy="assign")
    init = DawidSkeneEstimator(n_iter=3, tol=0, init_confusion=errors)
    # equal but for the 1e-10 floor that "assign" adds to the counts it is given, as crowd-kit
    np.testing.assert_allclose(assign.fit(df, initial_error=errors).errors_,
                               init.fit(df).errors_, rtol=0, atol=1e-9)
    zero = errors * 0.0
    added = DawidSkeneEstimator(n_iter=3, tol=0, initial_error_strategy="addition")
    np.testing.assert_allclose(added.fit(df, initial_error=zero).errors_, ref.errors_,
                               rtol=0, atol=1e-12)
    # 500 counts of "answers 0 when the truth is 1" for one worker: its start says so
    heavy = zero.copy()
    worker = errors.index.get_level_values(0)[0]
    heavy.loc[(worker, 0), 1] = 500.0
    start = DawidSkeneEstimator(n_iter=0, initial_error_strategy="addition")
    assert start.fit(df).errors_.loc[(worker, 0), 1] < 0.6
    assert start.fit(df, initial_error=heavy).errors_.loc[(worker, 0), 1] > 0.95
    with pytest.raises(ValueError, match="needs initial_error_strategy"):
        DawidSkeneEstimator().fit(df, initial_error=errors)
    with pytest.raises(ValueError, match="The sum of each worker's error matrix"):
        assign.fit(df, initial_error=errors * 0.5)


def test_weighted_vote_and_missing_skills():
    df = pd.DataFrame({"task": list("aaabbb"), "worker": list("uvwuvw"),
                       "label": ["x", "x", "y", "y", "y", "x"]})
    plain = MajorityVote().fit(df)
    assert plain.labels_.to_dict() == {"a": "x", "b": "y"}
    np.testing.assert_allclose(plain.skills_.loc[["u", "v", "w"]], [1.0, 1.0, 0.0])
    assert plain.skills_.name == "skill" and plain.skills_.index.name == "worker"
    weighted = MajorityVote().fit(df, skills=pd.Series({"u": 0.1, "v": 0.1, "w": 1.0}))
    assert weighted.labels_.to_dict() == {"a": "y", "b": "x"}
    np.testing.assert_allclose(weighted.probas_.loc["a"], [0.2 / 1.2, 1.0 / 1.2])
    with pytest.raises(ValueError, match="skills lacks 1 worker"):
        MajorityVote().fit(df, skills=pd.Series({"u": 1.0, "v": 1.0}))
    ignored = MajorityVote(on_missing_skill="ignore").fit(df, skills=pd.Series({"u": 1.0, "v": 1.0}))
    assert list(ignored.skills_.index) == ["u", "v"]
    valued = MajorityVote(on_missing_skill="value", default_skill=5.0)
    assert valued.fit_predict(df, skills=pd.Series({"u": 1.0, "v": 1.0})).to_dict() == {"a": "y", "b": "x"}
    with pytest.raises(ValueError, match="default_skill"):
        MajorityVote(on_missing_skill="value").fit(df, skills=pd.Series({"u": 1.0}))
    with pytest.raises(ValueError, match="finite numbers >= 0"):
        MajorityVote().fit(df, skills=pd.Series({"u": -1.0, "v": 1.0, "w": 1.0}))
