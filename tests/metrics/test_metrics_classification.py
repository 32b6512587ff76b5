"""Classification scores against scikit-learn; confusion-matrix error against direct norms."""

import itertools

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import f1_score, precision_recall_fscore_support

from pyromodels.metrics import confusion_matrix_error, macro_f1, precision_recall_per_class

TOL = 1e-12


def _predictions():
    """Random (y_true, y_pred) with 2-6 classes; some classes are never predicted."""
    cases = []
    for seed in range(25):
        rng = np.random.default_rng(200 + seed)
        n, n_classes = int(rng.integers(5, 60)), int(rng.integers(2, 7))
        y_true = rng.integers(0, n_classes, n)
        noisy = rng.random(n) < 0.4
        y_pred = np.where(noisy, rng.integers(0, n_classes, n), y_true)
        if seed % 3 == 0:  # never predict the last class
            y_pred[y_pred == n_classes - 1] = 0
        if seed % 4 == 0:  # a predicted label absent from y_true
            y_pred[0] = n_classes
        cases.append((y_true, y_pred))
    return cases


CASES = _predictions()


@pytest.mark.parametrize("case", range(len(CASES)))
def test_per_class_scores_match_sklearn(case):
    y_true, y_pred = CASES[case]
    table = precision_recall_per_class(y_true, y_pred)
    precision, recall, f1, support = precision_recall_fscore_support(y_true, y_pred, zero_division=0.0)
    np.testing.assert_array_equal(table.index, np.union1d(y_true, y_pred))
    np.testing.assert_allclose(table["precision"], precision, rtol=0, atol=TOL)
    np.testing.assert_allclose(table["recall"], recall, rtol=0, atol=TOL)
    np.testing.assert_allclose(table["f1"], f1, rtol=0, atol=TOL)
    np.testing.assert_array_equal(table["support"], support)
    expected = f1_score(y_true, y_pred, average="macro", zero_division=0.0)
    assert macro_f1(y_true, y_pred) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("case", range(0, len(CASES), 4))
def test_labels_argument_matches_sklearn(case):
    y_true, y_pred = CASES[case]
    labels = [2, 0, 9]  # any order, one label that never occurs
    table = precision_recall_per_class(y_true, y_pred, labels=labels)
    precision, recall, f1, support = precision_recall_fscore_support(
        y_true, y_pred, labels=labels, zero_division=0.0
    )
    assert table.index.tolist() == labels
    np.testing.assert_allclose(table["precision"], precision, rtol=0, atol=TOL)
    np.testing.assert_allclose(table["recall"], recall, rtol=0, atol=TOL)
    np.testing.assert_allclose(table["f1"], f1, rtol=0, atol=TOL)
    np.testing.assert_array_equal(table["support"], support)
    expected = f1_score(y_true, y_pred, labels=labels, average="macro", zero_division=0.0)
    assert macro_f1(y_true, y_pred, labels=labels) == pytest.approx(expected, abs=TOL)


def test_never_predicted_class_has_precision_zero():
    table = precision_recall_per_class(["a", "a", "b", "c"], ["a", "a", "a", "c"])
    assert table.index.name == "class"
    assert table.columns.tolist() == ["precision", "recall", "f1", "support"]
    assert table.loc["b"].tolist() == [0.0, 0.0, 0.0, 1]
    assert table.loc["a", "precision"] == pytest.approx(2 / 3, abs=TOL)
    assert table["support"].dtype == np.int64
    assert macro_f1(["a", "a", "b", "c"], ["a", "a", "a", "c"]) == pytest.approx(
        (0.8 + 0.0 + 1.0) / 3, abs=TOL
    )


def test_inputs_of_every_container_type_agree():
    y_true, y_pred = CASES[1]
    expected = macro_f1(y_true, y_pred)
    for convert in (list, pd.Series, torch.as_tensor, lambda a: torch.as_tensor(a * 1.0)):
        assert macro_f1(convert(y_true), convert(y_pred)) == expected


def _column_stochastic(rng, m, k):
    return np.stack([rng.dirichlet(np.ones(k), size=k).T for _ in range(m)])


def test_confusion_error_is_mean_induced_one_norm():
    rng = np.random.default_rng(3)
    truth, estimate = _column_stochastic(rng, 4, 3), _column_stochastic(rng, 4, 3)
    expected = np.mean([np.linalg.norm(t - e, ord=1) for t, e in zip(truth, estimate)])
    assert confusion_matrix_error(truth, estimate, align=False) == pytest.approx(expected, abs=TOL)
    single = confusion_matrix_error(truth[0], estimate[0], align=False)
    assert single == pytest.approx(np.linalg.norm(truth[0] - estimate[0], ord=1), abs=TOL)


@pytest.mark.parametrize("seed", range(5))
def test_alignment_undoes_a_known_permutation(seed):
    rng = np.random.default_rng(seed)
    truth = _column_stochastic(rng, 3, 4)
    perm = rng.permutation(4)
    while (perm == np.arange(4)).all():
        perm = rng.permutation(4)
    permuted = truth[:, :, perm]
    assert confusion_matrix_error(truth, permuted) == 0.0
    unaligned = np.mean([np.linalg.norm(t - e, ord=1) for t, e in zip(truth, permuted)])
    assert confusion_matrix_error(truth, permuted, align=False) == pytest.approx(unaligned, abs=TOL)
    assert unaligned > 0
    # A small perturbation of the permuted copy: the error is that of the unpermuted noise.
    noise = rng.normal(scale=1e-3, size=truth.shape)
    direct = np.mean([np.linalg.norm(d, ord=1) for d in noise])
    noisy = (truth + noise)[:, :, perm]
    assert confusion_matrix_error(truth, noisy) == pytest.approx(direct, abs=TOL)


def test_alignment_uses_the_permutation_closest_on_summed_matrices():
    rng = np.random.default_rng(11)
    truth, estimate = _column_stochastic(rng, 2, 4), _column_stochastic(rng, 2, 4)
    total_true, total_est = truth.sum(axis=0), estimate.sum(axis=0)
    best = min(
        itertools.permutations(range(4)),
        key=lambda p: np.abs(total_true - total_est[:, list(p)]).sum(),
    )
    aligned = estimate[:, :, list(best)]
    expected = np.mean([np.linalg.norm(t - e, ord=1) for t, e in zip(truth, aligned)])
    assert confusion_matrix_error(truth, estimate) == pytest.approx(expected, abs=TOL)
    assert confusion_matrix_error(torch.as_tensor(truth), estimate) == pytest.approx(expected, abs=TOL)


def test_confusion_error_rejects_bad_shapes():
    square = np.eye(3)
    with pytest.raises(ValueError, match=r"est_matrix must have shape \(K, K\) or \(M, K, K\)"):
        confusion_matrix_error(square, np.ones((3, 2)))
    with pytest.raises(ValueError, match=r"true_matrix must have shape \(K, K\) or \(M, K, K\)"):
        confusion_matrix_error(np.ones(3), square)
    with pytest.raises(ValueError, match="true_matrix and est_matrix must have the same shape"):
        confusion_matrix_error(np.stack([square, square]), square)
    with pytest.raises(ValueError, match="est_matrix must be finite"):
        confusion_matrix_error(square, np.full((3, 3), np.nan))
