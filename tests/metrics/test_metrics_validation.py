"""Input checking shared by every metric: pinned error messages and accepted containers."""

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels import metrics

PAIRWISE = [
    metrics.ami,
    metrics.ari,
    metrics.clustering_accuracy,
    metrics.contingency_matrix,
    metrics.f_measure,
    metrics.hungarian_mapping,
    metrics.macro_f1,
    metrics.majority_accuracy,
    metrics.nmi,
    metrics.pair_f1,
    metrics.precision_recall_per_class,
    metrics.purity,
    metrics.v_measure,
]
IDS = [f.__name__ for f in PAIRWISE]


@pytest.mark.parametrize("metric", PAIRWISE, ids=IDS)
def test_mismatched_lengths(metric):
    with pytest.raises(ValueError, match="y_true and y_pred must have the same length, got 3 and 2"):
        metric([0, 1, 1], [0, 1])


@pytest.mark.parametrize("metric", PAIRWISE, ids=IDS)
def test_empty_input(metric):
    with pytest.raises(ValueError, match="y_true must not be empty"):
        metric([], [])
    with pytest.raises(ValueError, match="y_pred must not be empty"):
        metric([1], np.array([], dtype=np.int64))


@pytest.mark.parametrize("metric", PAIRWISE, ids=IDS)
def test_missing_values(metric):
    with pytest.raises(ValueError, match=r"y_pred must not contain NaN or None, found 1 missing"):
        metric([0, 1, 1], [0.0, np.nan, 1.0])
    with pytest.raises(ValueError, match=r"y_true must not contain NaN or None, found 2 missing"):
        metric([0, None, None], [0, 1, 1])
    with pytest.raises(ValueError, match="y_true must not contain NaN or None"):
        metric(pd.Series([0, None, 1], dtype="Int64"), [0, 1, 1])
    with pytest.raises(ValueError, match="y_pred must not contain NaN or None"):
        metric([0, 1, 1], torch.tensor([0.0, 1.0, float("nan")]))


@pytest.mark.parametrize("metric", PAIRWISE, ids=IDS)
def test_non_integral_and_infinite_floats(metric):
    with pytest.raises(TypeError, match="y_pred must hold integer labels, got non-integral value 0.5"):
        metric([0, 1, 1], [0.0, 0.5, 1.0])
    with pytest.raises(TypeError, match="y_true must hold integer labels, got non-integral value 1.25"):
        metric(np.array([0, 1.25, 2], dtype=object), [0, 1, 1])
    with pytest.raises(ValueError, match="y_true must hold finite labels, found infinity"):
        metric([0.0, np.inf, 1.0], [0, 1, 1])


def test_rejected_dtypes_and_shapes():
    with pytest.raises(TypeError, match="y_true must hold integer or text labels, got dtype bool"):
        metrics.nmi([True, False], [0, 1])
    with pytest.raises(TypeError, match="y_pred must hold integer or text labels, got booleans"):
        metrics.nmi([0, 1], np.array([True, 1], dtype=object))
    with pytest.raises(TypeError, match="y_true must hold integer or text labels, got dtype"):
        metrics.ari(np.array([1 + 2j, 0]), [0, 1])
    with pytest.raises(ValueError, match=r"y_pred must be 1-dimensional, got shape \(2, 2\)"):
        metrics.ari([0, 1, 0, 1], [[0, 1], [0, 1]])
    with pytest.raises(TypeError, match="y_true must be a 1-dimensional array-like of labels"):
        metrics.ari([[0], [1, 2]], [0, 1])
    with pytest.raises(TypeError, match="y_true must hold mutually comparable labels"):
        metrics.nmi(np.array([1, "a", 2], dtype=object), [0, 1, 1])


def test_joint_labels_must_share_a_kind():
    with pytest.raises(TypeError, match="y_true and y_pred must hold labels of the same kind"):
        metrics.macro_f1(["a", "b"], [0, 1])
    with pytest.raises(TypeError, match="y_true and labels must hold labels of the same kind"):
        metrics.precision_recall_per_class([0, 1], [0, 1], labels=["a"])
    with pytest.raises(ValueError, match="labels must not contain duplicates, found 1$"):
        metrics.macro_f1([0, 1], [0, 1], labels=[1, 0, 1])
    with pytest.raises(ValueError, match="labels must not be empty"):
        metrics.macro_f1([0, 1], [0, 1], labels=[])


def test_parameter_checks():
    with pytest.raises(ValueError, match="average_method must be one of"):
        metrics.nmi([0, 1], [0, 1], average_method="harmonic")
    with pytest.raises(ValueError, match="average_method must be one of"):
        metrics.ami([0, 1], [0, 1], average_method="mean")
    with pytest.raises(ValueError, match="beta must be >= 0, got -1.0"):
        metrics.v_measure([0, 1], [0, 1], beta=-1.0)
    with pytest.raises(TypeError, match="beta must be a real number"):
        metrics.v_measure([0, 1], [0, 1], beta="1")


def test_level_assignments_checks():
    y_true = [0, 0, 1]
    with pytest.raises(ValueError, match="level_assignments must hold at least one clustering"):
        metrics.f_measure_per_level(y_true, [])
    with pytest.raises(ValueError, match=r"level_assignments must be an array of shape"):
        metrics.f_measure_per_level(y_true, np.array([0, 0, 1]))
    with pytest.raises(TypeError, match="level_assignments must be an array of shape"):
        metrics.f_measure_per_level(y_true, {0: [0, 0, 1]})
    with pytest.raises(ValueError, match=r"y_true and level_assignments\[1\] must have the same length"):
        metrics.f_measure_per_level(y_true, [[0, 0, 0], [0, 1]])
    with pytest.raises(ValueError, match=r"level_assignments\[0\] must not contain NaN"):
        metrics.f_measure_per_level(y_true, [[0, np.nan, 1]])


def test_containers_and_label_kinds_give_the_same_scores():
    rng = np.random.default_rng(5)
    y_true, y_pred = rng.integers(0, 4, 40), rng.integers(0, 5, 40)
    names = np.array(["ant", "bee", "cat", "dog", "eel"])
    variants = [
        (y_true.tolist(), y_pred.tolist()),
        (pd.Series(y_true), pd.Series(y_pred)),
        (torch.as_tensor(y_true), torch.as_tensor(y_pred)),
        (torch.as_tensor(y_true, dtype=torch.float64), y_pred.astype(np.float32)),
        (y_true.astype(np.uint8), pd.Series(names[y_pred], dtype="category")),
        (y_true - 10, names[y_pred].tolist()),
    ]
    for metric in (metrics.nmi, metrics.ami, metrics.ari, metrics.clustering_accuracy):
        expected = metric(y_true, y_pred)
        for a, b in variants:
            assert metric(a, b) == pytest.approx(expected, abs=1e-12)
    graph_labels = torch.as_tensor(y_pred).requires_grad_(False)
    assert metrics.purity(y_true, graph_labels) == metrics.purity(y_true, y_pred)
