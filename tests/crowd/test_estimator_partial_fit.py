"""DawidSkeneEstimator.partial_fit: a fit updated with more labels against a refit on all of
them, new workers and tasks, the warm start's iterations (counted), and the errors.

How close the update and the refit must be is derived from EM's stopping rule, not tuned.
A run stops when its objective F rose by less than ``tol * |F|`` in its last step. EM's
objective rises at least as much as the M-step's expected log joint, which for the row of
worker ``m`` and true class ``k`` is ``w_mk * KL(new row || old row)``, with ``w_mk`` the
expected labels the worker gave to tasks of class ``k``; by Pinsker's inequality every entry
of that row moved by at most ``sqrt(dF / (2 w_mk))`` in the last step (likewise the class
prior, with ``w = N`` tasks). EM converges linearly with a rate ``r``, estimated from the last
two rises of F (each about ``r**2`` times the one before near the fixed point), so the
parameters lie within ``step / (1 - r)`` of the fixed point. Where both runs reach the same
fixed point (Dirichlet-smoothed confusions, ``confusion_concentration=2``, leave one), the
two results differ by at most the sum of their two bounds.
"""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core.device import default_dtype
from pyromodels.core.not_fitted import NotFittedError
from pyromodels.crowd.estimators import DawidSkeneEstimator
from pyromodels.crowd.estimators.ds_partial import fitted_codes
from pyromodels.crowd.simulate import simulate_label_frame
from pyromodels.data.columns import MissingColumnError

TOL = 1e-10
SMOOTH = {"confusion_concentration": 2, "tol": TOL, "n_iter": 1000}


def _frame(tasks=4000, workers=40, classes=5, seed=1):
    frame, truth = simulate_label_frame(tasks, workers, classes, labels_per_task=6, seed=seed)
    return frame.sample(frac=1.0, random_state=seed), truth


def _distance_bound(est, frame) -> tuple[float, float]:
    """Bounds on how far ``est``'s confusion entries and class prior lie from the fixed
    point its EM converges to (see the module doc)."""
    history = np.asarray(est.loss_history_)
    rises = np.diff(history)
    rate = math.sqrt(rises[-1] / rises[-2])
    assert 0 < rate < 1, rate
    rise = est.tol * max(1.0, abs(history[-1]))
    # the expected labels of each (worker, true class) pair under the last M-step's posteriors
    weights = frame.join(est.probas_, on="task").groupby("worker")[list(est.probas_.columns)].sum()
    confusion = math.sqrt(rise / (2 * weights.to_numpy().min())) / (1 - rate)
    prior = math.sqrt(rise / (2 * len(est.probas_))) / (1 - rate)
    return confusion, prior


def _max_diff(a: pd.DataFrame, b: pd.DataFrame) -> float:
    assert a.index.equals(b.index) and a.columns.equals(b.columns)
    return float(np.abs(a.to_numpy() - b.to_numpy()).max())


def _split(frame, share, seed=0):
    cut = int(round(len(frame) * (1 - share)))
    return frame.iloc[:cut], frame.iloc[cut:]


@pytest.mark.parametrize("share", [0.01, 0.5])
def test_partial_fit_is_the_refit_within_the_bound_of_the_stopping_rule(share):
    frame, _ = _frame()
    old, new = _split(frame, share)
    with default_dtype(torch.float64):
        est = DawidSkeneEstimator(**SMOOTH).fit(old).partial_fit(new)
        refit = DawidSkeneEstimator(**SMOOTH).fit(frame)
    assert est.converged_ and refit.converged_
    (c1, p1), (c2, p2) = _distance_bound(est, frame), _distance_bound(refit, frame)
    assert _max_diff(est.confusions_, refit.confusions_) <= c1 + c2
    assert float((est.priors_ - refit.priors_).abs().max()) <= p1 + p2
    # a label can differ only where the log odds of the top two classes are within what those
    # moves change them by: each of a task's labels by at most d_conf / min entry, the prior
    # by d_prior / min prior, both for each of the two classes
    floor = min(est.confusions_.to_numpy().min(), refit.confusions_.to_numpy().min())
    per_task = int(frame.groupby("task").size().max())
    low = min(est.priors_.min(), refit.priors_.min())
    bound = 2 * (per_task * (c1 + c2) / floor + (p1 + p2) / low)
    top = np.sort(np.log(refit.probas_.to_numpy()), axis=1)
    clear = top[:, -1] - top[:, -2] > bound
    assert clear.mean() > 0.95  # the check covers almost every task
    assert (est.labels_.to_numpy() == refit.labels_.to_numpy())[clear].all()
    assert est.probas_.index.equals(refit.probas_.index)  # every task, in sorted order


def test_warm_start_takes_fewer_iterations_than_the_refit():
    frame, _ = _frame()
    old, new = _split(frame, 0.01)
    with default_dtype(torch.float64):
        est = DawidSkeneEstimator(**SMOOTH).fit(old).partial_fit(new)
        refit = DawidSkeneEstimator(**SMOOTH).fit(frame)
    assert est.n_iter_ < refit.n_iter_, (est.n_iter_, refit.n_iter_)
    assert len(est.loss_history_) == est.n_iter_ + 1  # the warm start's objective first


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_same_fixed_point_gives_the_refit_exactly(dtype):
    # unanimous workers: the posteriors reach exact 0/1 values, after which both runs count
    # the same labels, so after enough steps (tol=0: no early stop) they hold the same bits
    frame, truth = simulate_label_frame(300, 12, 3, labels_per_task=4, seed=2)
    frame = frame.assign(label=truth["z"][frame["task"]])
    old, new = _split(frame, 0.5)
    kw = {"n_iter": 200, "tol": 0}
    with default_dtype(dtype):
        est = DawidSkeneEstimator(**kw).fit(old).partial_fit(new)
        refit = DawidSkeneEstimator(**kw).fit(frame)
    for name in ("probas_", "labels_", "errors_", "confusions_", "priors_"):
        got, want = getattr(est, name), getattr(refit, name)
        assert got.equals(want), name


def test_new_workers_start_from_the_pooled_confusion_and_new_tasks_are_added():
    frame, _ = _frame(tasks=600, workers=12, classes=3, seed=4)
    # new workers in the middle (4) and at the end (11) of the sorted ids; new tasks among
    # the fitted ones (odd ids above 500) and after them
    new_workers = frame["worker"].isin([4, 11])
    new_tasks = (frame["task"] >= 550) | ((frame["task"] > 500) & (frame["task"] % 2 == 1))
    old, new = frame[~(new_workers | new_tasks)], frame[new_workers | new_tasks]
    est = DawidSkeneEstimator(confusion_concentration=2).fit(old)
    fitted_conf = est.confusions_.to_numpy().reshape(10, 3, 3)
    counts = old["worker"].value_counts().sort_index().to_numpy()
    pooled = np.tensordot(counts / counts.sum(), fitted_conf, axes=1)
    prior = est.priors_.copy()
    # n_iter=0: the result is the warm start itself, and probas_ its E-step
    est.set_params(n_iter=0).partial_fit(new)
    start = est.confusions_.to_numpy().reshape(12, 3, 3)
    kept = [w for w in range(12) if w not in (4, 11)]
    np.testing.assert_allclose(start[kept], fitted_conf, rtol=1e-6)
    np.testing.assert_allclose(start[[4, 11]], np.stack([pooled, pooled]), rtol=1e-6)
    pd.testing.assert_series_equal(est.priors_, prior)
    assert list(est.labels_.index) == list(range(600))
    assert list(est.table_.workers) == list(range(12))
    assert est.n_iter_ == 0
    # the codes are those of a fit to all the rows, in the order old then new
    joined = DawidSkeneEstimator(n_iter=0).fit(pd.concat([old, new]))
    for name in ("item_idx", "worker_idx", "label_idx"):
        assert torch.equal(getattr(est.table_, name), getattr(joined.table_, name)), name
    # a later update with one label of a new task: the task comes last in sorted order
    est.set_params(n_iter=1000).partial_fit(new.iloc[:1].assign(task=10_000))
    assert est.labels_.index[-1] == 10_000 and len(est.labels_) == 601


def test_the_torch_path_gives_the_array_paths_update(monkeypatch):
    frame, _ = _frame(tasks=500, workers=10, classes=3, seed=5)
    is_new = (frame["task"] >= 450) | (frame["worker"] == 9)
    old, new = frame[~is_new], frame[is_new]
    with default_dtype(torch.float64):
        arrays = DawidSkeneEstimator(tol=1e-8).fit(old).partial_fit(new)
        monkeypatch.setattr("pyromodels.crowd.estimators.dawid_skene.fit_on_arrays",
                            lambda *args, **kwargs: False)
        reference = DawidSkeneEstimator(tol=1e-8).fit(old).partial_fit(new)
    assert "_em_arrays" in vars(arrays) and "_em_arrays" not in vars(reference)
    assert arrays.n_iter_ == reference.n_iter_
    for name in ("probas_", "confusions_", "errors_"):
        pd.testing.assert_frame_equal(getattr(arrays, name), getattr(reference, name), rtol=1e-10)
    pd.testing.assert_series_equal(arrays.priors_, reference.priors_, rtol=1e-10)
    assert arrays.labels_.equals(reference.labels_)
    # the torch objects of the update are those of the joined labels
    assert arrays.table_.num_labels == reference.table_.num_labels == len(frame)


def test_a_refit_drops_the_torch_objects_built_for_the_earlier_fit():
    frame, _ = _frame(tasks=200, workers=8, classes=3, seed=6)
    est = DawidSkeneEstimator().fit(frame)
    assert est.table_.num_items == 200  # built from the arrays
    est.fit(frame[frame["task"] < 100])
    assert est.table_.num_items == 100
    est.partial_fit(frame[frame["task"] >= 100])
    assert est.table_.num_items == 200 and est.posterior_.params["probas"].shape[0] == 200


def test_partial_fit_before_fit_is_not_fitted_error():
    frame, _ = _frame(tasks=50, workers=8, classes=3)
    with pytest.raises(NotFittedError, match=r"call fit\(df\) before partial_fit"):
        DawidSkeneEstimator().partial_fit(frame)


@pytest.fixture(scope="module")
def fitted():
    frame, _ = _frame(tasks=200, workers=8, classes=3, seed=7)
    old, new = frame[frame["task"] < 150], frame[frame["task"] >= 150]
    return DawidSkeneEstimator().fit(old), old, new


@pytest.mark.parametrize("change, error, message", [
    (lambda df: df.assign(label=df["label"].replace(2, 7)), ValueError,
     r"df\['label'\] holds 1 label\(s\) outside the fitted classes, e.g. \[7\]"),
    (lambda df: df.assign(label=pd.Categorical(df["label"], categories=[0, 1, 2, 3])),
     ValueError, r"categorical with categories \[0, 1, 2, 3\], not the fitted classes"),
    (lambda df: df.drop(columns="worker"), MissingColumnError, r"missing column\(s\) \['worker'\]"),
    (lambda df: df.iloc[:0], ValueError, "df must not be empty"),
    (lambda df: df.assign(worker=df["worker"].astype(str)), ValueError,
     "mixes strings and non-strings"),
    (lambda df: df.assign(task=df["task"].astype(float).where(df["task"] != 160)), ValueError,
     "missing value"),
    (lambda df: df.values, TypeError, "df must be a pandas DataFrame"),
])
def test_bad_new_labels_are_refused_and_the_fit_kept(fitted, change, error, message):
    est, old, new = fitted
    before = est.confusions_.copy()
    with pytest.raises(error, match=message):
        est.partial_fit(change(new))
    pd.testing.assert_frame_equal(est.confusions_, before)
    assert len(est.labels_) == 150


def test_a_repeated_pair_and_another_class_set_are_refused(fitted):
    est, old, new = fitted
    with pytest.raises(ValueError, match="repeated"):
        DawidSkeneEstimator().fit(old).partial_fit(old.iloc[:2])
    other = DawidSkeneEstimator(classes=[0, 1, 2]).fit(old)
    other.set_params(classes=[0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"classes=\[0, 1, 2, 3\] is not the class set"):
        other.partial_fit(new)


@pytest.mark.parametrize("fit_kw, fit_args, message", [
    ({"method": "gibbs", "num_samples": 5, "num_warmup": 5, "num_chains": 1,
      "diagnostic_warnings": False}, {},
     "partial_fit updates an EM fit; this one was fitted with method='gibbs'"),
    ({}, {"true_labels": pd.Series({0: 1})}, "cannot update a fit with true_labels"),
])
def test_fits_partial_fit_cannot_update_are_refused(fitted, fit_kw, fit_args, message):
    _, old, new = fitted
    est = DawidSkeneEstimator(**fit_kw).fit(old, **fit_args)
    with pytest.raises(ValueError, match=message):
        est.partial_fit(new)


def test_method_changed_after_fit_and_an_empty_fit_are_refused(fitted):
    _, old, new = fitted
    est = DawidSkeneEstimator().fit(old).set_params(method="svi")
    with pytest.raises(ValueError, match="partial_fit runs EM: method must be 'em'"):
        est.partial_fit(new)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        empty = DawidSkeneEstimator().fit(old.iloc[:0])
    with pytest.raises(ValueError, match="fitted to a table without rows"):
        empty.partial_fit(new)


def test_fitted_codes_of_a_table_are_its_codes(fitted):
    est, old, _ = fitted
    codes = fitted_codes(est.table_)
    for name in ("item_idx", "worker_idx", "label_idx"):
        assert np.array_equal(getattr(codes, name), getattr(est.table_, name).numpy())
    assert codes.items.equals(est.table_.items) and codes.num_labels == len(old)


def test_label_warnings_name_the_line_that_called_partial_fit(fitted):
    est, old, new = fitted
    est = DawidSkeneEstimator().fit(old)
    lone = new.iloc[:1].assign(worker=999)  # a new worker with one label
    with pytest.warns(UserWarning, match="gave a single label") as caught:
        est.partial_fit(lone)
    assert caught[0].filename == __file__


def test_a_failure_part_way_through_storing_the_update_keeps_the_fit(fitted, monkeypatch):
    _, old, new = fitted
    est = DawidSkeneEstimator().fit(old)
    before = dict(vars(est))

    def fail(*args, **kwargs):
        raise KeyboardInterrupt

    # after EM, with probas_ and labels_ already replaced
    monkeypatch.setattr(DawidSkeneEstimator, "_store_confusions", fail)
    with pytest.raises(KeyboardInterrupt):
        est.partial_fit(new)
    assert vars(est).keys() == before.keys()
    assert all(vars(est)[k] is v for k, v in before.items())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_partial_fit_on_cuda_gives_the_cpu_update():
    frame, _ = _frame(tasks=300, workers=8, classes=3, seed=8)
    old, new = frame[frame["task"] < 250], frame[frame["task"] >= 250]
    with default_dtype(torch.float64):
        cpu = DawidSkeneEstimator(tol=1e-8).fit(old).partial_fit(new)
        gpu = DawidSkeneEstimator(tol=1e-8, device="cuda").fit(old).partial_fit(new)
    assert gpu.n_iter_ == cpu.n_iter_ and gpu.labels_.equals(cpu.labels_)
    pd.testing.assert_frame_equal(gpu.confusions_, cpu.confusions_, rtol=1e-9)


def test_repeats_are_kept_with_allow_repeats(fitted):
    _, old, new = fitted
    est = DawidSkeneEstimator(allow_repeats=True).fit(old).partial_fit(old.iloc[:2])
    refit = DawidSkeneEstimator(allow_repeats=True).fit(pd.concat([old, old.iloc[:2]]))
    assert est.table_.num_labels == len(old) + 2 == refit.table_.num_labels
    assert est.labels_.index.equals(refit.labels_.index)
