"""Where DawidSkeneEstimator and MajorityVote are drop-ins for crowd-kit beyond its own tests
(``crowdkit_compat/``): empty tables, the row order of ``errors_``, which posteriors
``probas_`` holds, and ``initial_error`` columns that are not classes. Each check runs on the
NumPy/C path and on the torch path of the EM fit."""

import warnings

import numpy as np
import pandas as pd
import pytest

from pyromodels.crowd.estimators import DawidSkeneEstimator, MajorityVote
from pyromodels.data import WorkerPopulation, simulate_annotations

HERE = __file__
# crowd-kit itself warns about pandas deprecations; those are not ours to fix
pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")


@pytest.fixture(params=["arrays", "torch"])
def path(request, monkeypatch):
    """Run the EM fits of a test on the NumPy/C path or on the torch path."""
    if request.param == "torch":
        monkeypatch.setattr("pyromodels.crowd.estimators.dawid_skene.fit_on_arrays",
                            lambda est, codes: False)
    return request.param


def toy():
    """A table whose rows are not sorted by worker or label, and whose worker 'w3' never
    answers 'no' (crowd-kit's errors_ has no row for that pair)."""
    rows = [("w2", "t1", "yes"), ("w1", "t1", "no"), ("w3", "t1", "yes"), ("w2", "t2", "no"),
            ("w1", "t2", "no"), ("w3", "t2", "yes"), ("w1", "t3", "yes"), ("w2", "t3", "yes"),
            ("w3", "t3", "yes"), ("w1", "t4", "no"), ("w2", "t4", "no"), ("w3", "t4", "yes"),
            ("w2", "t5", "yes"), ("w1", "t5", "no")]
    return pd.DataFrame(rows, columns=["worker", "task", "label"])


def ml(**kw):
    """crowd-kit's estimate: maximum-likelihood EM."""
    return DawidSkeneEstimator(diagonal=0.0, **kw)


def quiet_fit(est, df, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(df, **kw)


# ------------------------------------------------------------------------- empty tables
EMPTY = pd.DataFrame([], columns=["task", "worker", "label"])


def test_an_empty_table_gives_empty_results_with_a_warning():
    est = DawidSkeneEstimator()
    quiet_fit(est, toy())  # a refit on nothing drops the earlier results
    with pytest.warns(UserWarning, match="df has no rows: there are no labels to aggregate") as got:
        est.fit(EMPTY)
    assert got[0].filename == HERE  # the warning names the caller's line
    for frame in (est.probas_, est.errors_, est.confusions_):
        pd.testing.assert_frame_equal(frame, pd.DataFrame())
    pd.testing.assert_series_equal(est.priors_, pd.Series(dtype=float, name="prior"))
    pd.testing.assert_series_equal(est.labels_, pd.Series(dtype=float, name="agg_label"))
    assert (est.loss_history_, est.n_iter_, est.converged_) == ([], 0, None)
    assert est.posterior_ is None and est.model_ is None and est.table_ is None
    with pytest.raises(ValueError, match="fitted to a table without rows"):
        est.predict(toy())
    with pytest.warns(UserWarning, match="df has no rows"):
        assert MajorityVote().fit_predict(EMPTY).empty


def test_an_empty_table_still_needs_its_columns_and_no_gold_or_errors():
    with pytest.raises(ValueError, match=r"df is missing column\(s\) \['label'\]"):
        DawidSkeneEstimator().fit(EMPTY.drop(columns="label"))
    with pytest.raises(ValueError, match=r"df is missing column\(s\) \['worker'\]"):
        MajorityVote().fit(EMPTY.drop(columns="worker"))
    with pytest.warns(UserWarning, match="df has no rows"):
        with pytest.raises(ValueError, match="none of the 1 row"):
            DawidSkeneEstimator().fit(EMPTY, true_labels=pd.Series({"t1": "yes"}))


def test_empty_results_are_crowd_kits():
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    with pytest.warns(UserWarning, match="df has no rows"):
        ours = DawidSkeneEstimator().fit(EMPTY)
    theirs = crowdkit.DawidSkene(10).fit(EMPTY)
    for name in ("probas_", "errors_"):
        pd.testing.assert_frame_equal(getattr(ours, name), getattr(theirs, name))
    for name in ("priors_", "labels_"):
        pd.testing.assert_series_equal(getattr(ours, name), getattr(theirs, name))
    with pytest.warns(UserWarning, match="df has no rows"):
        ours = MajorityVote().fit(EMPTY)
    theirs = crowdkit.MajorityVote().fit(EMPTY)
    pd.testing.assert_frame_equal(ours.probas_, theirs.probas_)
    pd.testing.assert_series_equal(ours.labels_, theirs.labels_)
    pd.testing.assert_series_equal(ours.skills_, theirs.skills_)


# ------------------------------------------------------------------ the rows of errors_
GIVEN = [("w2", "yes"), ("w1", "no"), ("w3", "yes"), ("w2", "no"), ("w1", "yes")]


@pytest.mark.parametrize("n_iter", [0, 1, 5])
def test_errors_rows_follow_the_table_then_the_labels_never_given(n_iter, path):
    est = quiet_fit(ml(n_iter=n_iter, tol=0), toy())
    assert est.errors_.index.names == ["worker", "label"]
    assert list(est.errors_.index) == GIVEN + [("w3", "no")]
    # the same numbers as the sorted layout: each worker's block still sums to one by column
    sums = est.errors_.groupby(level="worker").sum()
    np.testing.assert_allclose(sums.to_numpy(), 1.0, atol=1e-12)
    np.testing.assert_allclose(est.errors_.loc[("w3", "yes"), "yes"],
                               est.confusions_.loc[("w3", "yes"), "yes"], rtol=0, atol=0)


def test_errors_rows_with_an_assigned_initial_error(path):
    errors = quiet_fit(ml(n_iter=2, tol=0), toy()).errors_
    shuffled = errors.iloc[[5, 3, 0, 4, 1, 2]]
    start = quiet_fit(ml(n_iter=0, initial_error_strategy="assign"), toy(),
                      initial_error=shuffled)
    assert list(start.errors_.index) == list(shuffled.index)  # returned as it was given
    pd.testing.assert_frame_equal(start.errors_, shuffled, rtol=0, atol=1e-9)
    later = quiet_fit(ml(n_iter=1, tol=0, initial_error_strategy="assign"), toy(),
                      initial_error=shuffled)
    assert list(later.errors_.index) == GIVEN + [("w3", "no")]


@pytest.mark.parametrize("n_iter", [0, 1, 3])
def test_errors_rows_are_crowd_kits(n_iter, path):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    table, _ = simulate_annotations(60, WorkerPopulation(6, labels_per_item=3), 3, seed=4)
    df = table.to_frame().sample(frac=1.0, random_state=1)
    theirs = crowdkit.DawidSkene(n_iter, tol=0).fit(df)
    ours = quiet_fit(ml(n_iter=n_iter, tol=0), df)
    shared = len(theirs.errors_)
    assert ours.errors_.index[:shared].equals(theirs.errors_.index)
    np.testing.assert_allclose(ours.errors_.iloc[:shared][theirs.errors_.columns],
                               theirs.errors_, atol=1e-8)
    # the rest are the labels a worker never gave, which crowd-kit leaves out
    rest = ours.errors_.iloc[shared:]
    given = set(zip(df["worker"], df["label"]))
    assert not given & set(rest.index) and len(rest) == 6 * 3 - shared


# ------------------------------------------------------ probas_: what the M-step was fitted to
def test_probas_with_no_step_are_the_vote_fractions(path):
    est = quiet_fit(ml(n_iter=0), toy())
    votes = toy().groupby("task")["label"].value_counts(normalize=True).unstack(fill_value=0)
    pd.testing.assert_frame_equal(est.probas_, votes, check_names=False, rtol=0, atol=1e-12)
    # the first class in sorted order on a tie (t5)
    assert est.labels_.to_dict() == {"t1": "yes", "t2": "no", "t3": "yes", "t4": "no",
                                     "t5": "no"}
    # the posterior keeps the posteriors under the start, one E-step later
    assert not np.allclose(est.posterior_.params["probas"].numpy(), votes.to_numpy())


@pytest.mark.parametrize("n_iter", [1, 2, 6])
def test_probas_are_the_posteriors_of_the_parameters_one_step_earlier(n_iter, path):
    df = toy()
    est = quiet_fit(ml(n_iter=n_iter, tol=0), df)
    earlier = quiet_fit(ml(n_iter=n_iter - 1, tol=0), df)
    np.testing.assert_allclose(est.probas_.to_numpy(),
                               earlier.posterior_.params["probas"].numpy(), rtol=0, atol=1e-12)
    assert est.labels_.equals(est.probas_.idxmax(axis=1).rename("agg_label"))
    assert est.n_iter_ == n_iter


def test_probas_stop_with_the_tolerance_and_keep_its_warnings(path):
    df = toy()
    with pytest.warns(UserWarning, match="did not converge"):
        ml(n_iter=2, tol=1e-12).fit(df)
    est = quiet_fit(ml(n_iter=500, tol=1e-6), df)
    assert est.converged_ and 2 < est.n_iter_ < 500
    earlier = quiet_fit(ml(n_iter=est.n_iter_ - 1, tol=0), df)
    np.testing.assert_allclose(est.probas_.to_numpy(),
                               earlier.posterior_.params["probas"].numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("n_iter", [0, 1, 2, 4])
def test_probas_and_labels_are_crowd_kits(n_iter, path):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    table, _ = simulate_annotations(80, WorkerPopulation(5, labels_per_item=4), 3, seed=7)
    df = table.to_frame()
    theirs = crowdkit.DawidSkene(n_iter, tol=0).fit(df)
    ours = quiet_fit(ml(n_iter=n_iter, tol=0), df)
    mine = ours.probas_.loc[theirs.probas_.index, theirs.probas_.columns]
    np.testing.assert_allclose(mine.to_numpy(), theirs.probas_.to_numpy(), atol=1e-8)
    # the same labels but on exact ties of the vote fractions (n_iter=0), which crowd-kit
    # breaks by the order of pandas' value_counts and the facade by the sorted classes
    top2 = np.sort(mine.to_numpy(), axis=1)[:, -2:]
    tied = top2[:, 1] - top2[:, 0] < 1e-12
    assert (tied.any() if n_iter == 0 else not tied.any())
    agree = ours.labels_.loc[theirs.labels_.index].to_numpy() == theirs.labels_.to_numpy()
    assert agree[~tied].all()
    first = ours.probas_.idxmax(axis=1)  # the first of the tied classes in sorted order
    assert (ours.labels_.loc[theirs.labels_.index][tied] == first.loc[mine.index][tied]).all()


@pytest.mark.parametrize("n_iter", [0, 1, 2])
def test_probas_with_gold_labels_are_crowd_kits(n_iter):
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    df = toy()
    gold = pd.Series({"t2": "yes", "t5": "no"})
    theirs = crowdkit.DawidSkene(n_iter, tol=0).fit(df, true_labels=gold)
    ours = quiet_fit(ml(n_iter=n_iter, tol=0), df, true_labels=gold)
    mine = ours.probas_.loc[theirs.probas_.index, theirs.probas_.columns]
    np.testing.assert_allclose(mine.to_numpy(), theirs.probas_.to_numpy(), atol=1e-8)
    assert (ours.probas_.loc[["t2", "t5"]].to_numpy() == [[0, 1], [1, 0]]).all()


# ------------------------------------------------- initial_error columns that are not classes
@pytest.mark.parametrize("strategy", ["assign", "addition"])
def test_initial_error_columns_that_are_not_classes_are_ignored_with_a_warning(strategy):
    df = toy()
    errors = quiet_fit(ml(n_iter=2, tol=0), df).errors_
    padded = errors.copy()
    padded[("w2", "yes"), "no"] = 1.0  # crowd-kit's tests write columns named by tuples
    padded["maybe"] = 0.5
    with pytest.warns(UserWarning, match=r"initial_error's column\(s\) \[\(\('w2', 'yes'\), "
                                         r"'no'\), 'maybe'\] are not among the classes") as got:
        est = ml(n_iter=3, tol=0, initial_error_strategy=strategy).fit(df, initial_error=padded)
    assert [w.filename for w in got if "initial_error" in str(w.message)] == [HERE]
    plain = quiet_fit(ml(n_iter=3, tol=0, initial_error_strategy=strategy), df,
                      initial_error=errors)
    pd.testing.assert_frame_equal(est.errors_, plain.errors_, rtol=0, atol=0)
    pd.testing.assert_frame_equal(est.probas_, plain.probas_, rtol=0, atol=0)


def test_initial_error_without_a_class_column_is_refused():
    errors = quiet_fit(ml(n_iter=2, tol=0), toy()).errors_
    for strategy in ("assign", "addition"):
        with pytest.raises(ValueError, match=r"initial_error must have the classes \['no', "
                                             r"'yes'\] as columns"):
            ml(initial_error_strategy=strategy).fit(toy(), initial_error=errors.add_suffix("!"))
