"""DawidSkeneEstimator.partial_fit's running counts and the frames built on first use: the
counts, the errors_ row order and the labels grouped by task that an update forms from the
new rows equal those counted afresh from all the labels, an update reads no fitted row to
check or count it, and the lazily built probas_ and labels_ equal the eager ones."""

import pickle

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from pyromodels.core.device import default_dtype
from pyromodels.crowd.ds.kernels import groups
from pyromodels.crowd.estimators import DawidSkeneEstimator, ds_stats
from pyromodels.crowd.estimators.base import errors_row_order
from pyromodels.crowd.estimators.ds_partial import JoinedCodes
from pyromodels.crowd.simulate import simulate_label_frame
from pyromodels.data.columns import LabelCodes
from pyromodels.data.idmaps import c_table_passes

pytestmark = pytest.mark.skipif(c_table_passes() is None, reason="needs the C extensions")


def _frame(tasks=600, workers=12, classes=4, seed=3):
    frame, _ = simulate_label_frame(tasks, workers, classes, labels_per_task=5, seed=seed)
    return frame.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _batches(frame):
    """The fitted rows and three updates: new tasks after the fitted ones, a new worker in
    the middle of the sorted ids and new tasks among the fitted ones (both move codes), and
    more labels for fitted tasks."""
    late = frame["task"] >= 500
    middle_worker = frame["worker"] == 5
    odd = (frame["task"] > 300) & (frame["task"] % 7 == 0) & ~late
    rest = ~(late | middle_worker | odd)
    more = rest & (np.arange(len(frame)) % 10 == 0)
    old = rest & ~more
    return frame[old], [frame[late & ~middle_worker], frame[middle_worker | odd],
                        frame[more]]


def _fresh(codes) -> LabelCodes:
    """The same codes in a new object, so that nothing cached for ``codes`` is reused."""
    return LabelCodes(*(np.array(a) for a in (codes.item_idx, codes.worker_idx,
                                              codes.label_idx)),
                      codes.items, codes.workers, codes.classes)


def _assert_counts_afresh(est):
    state = est._em_arrays
    codes, stats = state.codes, state.stats
    want = ds_stats.count_stats(_fresh(codes), c_table_passes(), True)
    for name in stats._fields:
        np.testing.assert_array_equal(getattr(stats, name), getattr(want, name), err_msg=name)
    # the grouped labels EM read are those the grouping pass builds
    ptr, cells = groups.item_cells(codes)
    want_ptr, want_cells = groups.item_cells(_fresh(codes))
    np.testing.assert_array_equal(ptr, want_ptr)
    np.testing.assert_array_equal(cells, want_cells)
    order = errors_row_order(codes)
    assert est.errors_.index.equals(est.errors_.sort_index().index[order])


def test_counts_after_several_updates_equal_those_counted_afresh():
    frame = _frame()
    old, updates = _batches(frame)
    est = DawidSkeneEstimator().fit(old)
    joined = old
    for new in updates:
        est.partial_fit(new)
        joined = pd.concat([joined, new])
        _assert_counts_afresh(est)
    # and the update's attributes are those of the torch path on the same joined labels
    assert est._em_arrays.codes.num_labels == len(frame)
    assert list(est.labels_.index) == sorted(frame["task"].unique())


def test_an_update_reads_no_fitted_row_to_check_or_count_it(monkeypatch):
    frame = _frame()
    old, updates = _batches(frame)
    est = DawidSkeneEstimator().fit(old)
    reference = DawidSkeneEstimator().fit(old)
    groups.item_cells(est._em_arrays.codes)  # as EM built them

    def refuse(*args, **kwargs):
        raise AssertionError("a pass over all the labels")

    with monkeypatch.context() as patch:
        patch.setattr(LabelCodes, "has_repeats", refuse)
        patch.setattr(ds_stats, "count_labels", refuse)
        patch.setattr("pyromodels.crowd.estimators.base.first_pairs", refuse)
        patch.setattr("pyromodels.crowd.estimators.em_prior.to_numpy", refuse)
        patch.setattr(groups, "c_passes", refuse)  # the grouping pass
        for new in updates:
            est.partial_fit(new)
    for new in updates:
        reference.partial_fit(new)
    for name in ("probas_", "labels_", "errors_", "confusions_", "priors_"):
        got, want = getattr(est, name), getattr(reference, name)
        assert got.equals(want), name


def test_a_repeat_in_the_new_rows_is_found_against_the_fitted_rows_and_among_them():
    frame = _frame()
    old, (new, *_) = _batches(frame)
    est = DawidSkeneEstimator().fit(old)
    for repeat in (old.iloc[[3]], new.iloc[[0]]):
        with pytest.raises(ValueError, match="repeated"):
            est.partial_fit(pd.concat([new, repeat]))
    rng = np.random.default_rng(0)
    for _ in range(20):  # the check against the C count over all rows
        item = rng.integers(0, 30, 200)
        worker = rng.integers(0, 8, 200)
        pair = np.unique(item * 8 + worker, return_index=True)[1]
        fitted = np.sort(pair)[:60]  # fitted rows without repeats
        rows = np.concatenate([fitted, rng.integers(0, 200, 10)])
        df = pd.DataFrame({"task": item[rows], "worker": worker[rows], "label": rows % 3})
        codes = LabelCodes.from_dataframe(df)
        new_rows = tuple(c[60:] for c in (codes.item_idx, codes.worker_idx, codes.label_idx))
        assert ds_stats.new_rows_repeat(codes, new_rows) is codes.has_repeats()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_probas_and_labels_built_on_first_use_equal_the_eager_ones(dtype, monkeypatch):
    frame = _frame(seed=4)
    old, updates = _batches(frame)
    with default_dtype(dtype):
        est = DawidSkeneEstimator().fit(old)
        assert "probas_" not in vars(est) and "labels_" not in vars(est)
        with monkeypatch.context() as patch:
            patch.setattr("pyromodels.crowd.estimators.dawid_skene.fit_on_arrays",
                          lambda *args, **kwargs: False)
            eager = DawidSkeneEstimator().fit(old)
            eager_update = DawidSkeneEstimator().fit(old).partial_fit(updates[1])
        loaded = pickle.loads(pickle.dumps(est))  # before the frames exist
        copy = clone(est)
        est.set_params(task="item", label="answer")  # the frames keep the fit's names
        for name in ("probas_", "labels_"):
            got = getattr(est, name)
            assert name in vars(est) and got.equals(getattr(eager, name)), name
            assert got.index.name == "task"
            assert getattr(loaded, name).equals(getattr(eager, name)), name
        assert est.probas_.columns.name == "label"
        assert not hasattr(copy, "_em_arrays") and "probas_" not in vars(copy)
        est.set_params(task="task", label="label").partial_fit(updates[1])
    assert "probas_" not in vars(est)  # the fit's frames are dropped by the update
    assert est.labels_.equals(eager_update.labels_)
    tol = 1e-10 if dtype == torch.float64 else 1e-5
    for name in ("probas_", "errors_"):
        pd.testing.assert_frame_equal(getattr(est, name), getattr(eager_update, name), rtol=tol)


def test_updates_that_keep_the_codes_append_them_without_copying_the_fitted_labels():
    frame = _frame(workers=12)
    # new tasks after the fitted ones, a new last worker, more labels for fitted tasks
    late, last = frame["task"] >= 500, frame["worker"] == 11
    more = ~(late | last) & (np.arange(len(frame)) % 10 == 0)
    old = frame[~(late | last | more)]
    updates = [frame[late & (frame["task"] < 550)], frame[last & ~late], frame[more],
               frame[late & (frame["task"] >= 550)]]
    est = DawidSkeneEstimator().fit(old)
    fitted = est._em_arrays.codes
    loaded = pickle.loads(pickle.dumps(est))  # without the labels grouped by task
    for new in updates:
        est.partial_fit(new)
        loaded.partial_fit(new)
    codes = est._em_arrays.codes
    assert isinstance(codes, JoinedCodes) and len(codes._parts) == 1 + len(updates)
    assert codes._parts[0][0] is fitted.item_idx  # shared, not copied
    want = LabelCodes.from_dataframe(pd.concat([old, *updates]))
    assert codes.num_labels == want.num_labels == len(frame)
    for name in ("item_idx", "worker_idx", "label_idx"):
        np.testing.assert_array_equal(getattr(codes, name), getattr(want, name), err_msg=name)
    assert len(codes._parts) == 1  # joined once read
    assert codes.items.equals(want.items) and codes.workers.equals(want.workers)
    _assert_counts_afresh(est)
    again = pickle.loads(pickle.dumps(est))
    for name in ("probas_", "labels_", "errors_", "confusions_", "priors_"):
        assert getattr(loaded, name).equals(getattr(est, name)), name
        assert getattr(again, name).equals(getattr(est, name)), name
