"""simulate_label_frame: the Dawid-Skene story at millions of labels, checked on small ones."""

import numpy as np
import pytest

from pyromodels.crowd import simulate_label_frame
from pyromodels.crowd.simulate import distinct_workers


def test_shape_distinct_workers_and_reproducible():
    frame, truth = simulate_label_frame(500, 9, 4, labels_per_task=9, seed=3)
    assert frame.shape == (4500, 3) and list(frame.columns) == ["task", "worker", "label"]
    assert (frame.dtypes == np.int64).all()
    assert (frame.groupby("task")["worker"].nunique() == 9).all()  # every worker, once
    assert frame["label"].between(0, 3).all() and truth["z"].shape == (500,)
    np.testing.assert_allclose(truth["confusion"].sum(-1), 1.0)
    again, _ = simulate_label_frame(500, 9, 4, labels_per_task=9, seed=3)
    assert again.equals(frame)


def test_labels_follow_the_confusion_rows():
    # one worker-class cell at a time would be noisy; pool: the share of labels equal to the
    # truth against the mean diagonal, within four binomial standard errors
    frame, truth = simulate_label_frame(20_000, 30, 3, labels_per_task=3, seed=5)
    z = truth["z"][frame["task"].to_numpy()]
    expected = truth["confusion"][frame["worker"].to_numpy(), z, z].mean()
    observed = float(np.mean(frame["label"].to_numpy() == z))
    assert abs(observed - expected) <= 4 * np.sqrt(expected * (1 - expected) / len(frame))
    # workers are drawn uniformly: each gets L / M labels on average
    counts = frame["worker"].value_counts().to_numpy()
    mean = len(frame) / 30
    assert np.abs(counts - mean).max() <= 5 * np.sqrt(mean)


@pytest.mark.parametrize("kw, error, message", [
    ({"num_workers": 3}, ValueError, "num_workers must be an integer >= 4"),
    ({"dominance": 1.0}, ValueError, "dominance must lie strictly between 0 and 1"),
    ({"concentration": 0}, ValueError, "concentration must be > 0"),
    ({"concentration": True}, TypeError, "concentration must be a real number"),
    ({"labels_per_task": 0}, ValueError, "labels_per_task must be an integer >= 1"),
    ({"num_classes": 1}, ValueError, "num_classes must be an integer >= 2"),
])
def test_bad_arguments(kw, error, message):
    args = {"num_tasks": 10, "num_workers": 6, "num_classes": 3, "labels_per_task": 4, "seed": 0}
    with pytest.raises(error, match=message):
        simulate_label_frame(**{**args, **kw})


def test_distinct_workers_draws_distinct_workers_per_task():
    # the benchmark's parquet chunks draw each task's workers with this function
    grid = distinct_workers(np.random.default_rng(0), 20_000, 10, 6)
    assert grid.shape == (20_000, 6)
    assert (np.sort(grid, axis=1)[:, 1:] != np.sort(grid, axis=1)[:, :-1]).all()
    share = np.bincount(grid.ravel(), minlength=10) / grid.size  # uniform: 0.1 each
    assert np.abs(share - 0.1).max() < 5 * np.sqrt(0.1 * 0.9 / grid.size)
