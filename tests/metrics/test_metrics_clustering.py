"""Counting-based clustering metrics against scikit-learn, brute force and hand computations."""

import itertools
from fractions import Fraction

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score
from sklearn.metrics.cluster import contingency_matrix as sk_contingency
from sklearn.metrics.cluster import pair_confusion_matrix

from pyromodels.metrics import (
    PairScores,
    ari,
    clustering_accuracy,
    contingency_matrix,
    f_measure,
    f_measure_per_level,
    hungarian_mapping,
    majority_accuracy,
    pair_f1,
    purity,
)

TOL = 1e-12


def _injective_maps(clusters, classes):
    """Every injective map from clusters to classes, clusters beyond the classes left unmapped."""
    padded = list(classes) + [None] * max(0, len(clusters) - len(classes))
    for image in itertools.permutations(padded, len(clusters)):
        yield dict(zip(clusters, image))


def _accuracy_of_map(y_true, y_pred, mapping):
    return np.mean([mapping.get(p) == t for t, p in zip(y_true.tolist(), y_pred.tolist())])


def _small_cases():
    cases = []
    for seed in range(12):
        rng = np.random.default_rng(100 + seed)
        n = int(rng.integers(6, 25))
        n_classes, n_clusters = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        cases.append((rng.integers(0, n_classes, n), rng.integers(0, n_clusters, n) * 3 + 1))
    return cases


def test_contingency_matrix_matches_sklearn(labelings):
    for y_true, y_pred in labelings:
        np.testing.assert_array_equal(contingency_matrix(y_true, y_pred), sk_contingency(y_true, y_pred))


def test_contingency_matrix_of_text_labels():
    table = contingency_matrix(["b", "a", "b"], [2, 2, 7])
    np.testing.assert_array_equal(table, [[1, 0], [1, 1]])
    assert table.dtype == np.int64


@pytest.mark.parametrize("case", range(12))
def test_hungarian_accuracy_equals_best_injective_map(case):
    y_true, y_pred = _small_cases()[case]
    clusters, classes = np.unique(y_pred).tolist(), np.unique(y_true).tolist()
    best = max(_accuracy_of_map(y_true, y_pred, m) for m in _injective_maps(clusters, classes))
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(best, abs=TOL)
    mapping = hungarian_mapping(y_true, y_pred)
    assert len(mapping) == min(len(clusters), len(classes))
    assert len(set(mapping.values())) == len(mapping)  # one-to-one
    assert set(mapping) <= set(clusters) and set(mapping.values()) <= set(classes)
    assert _accuracy_of_map(y_true, y_pred, mapping) == pytest.approx(best, abs=TOL)


@pytest.mark.parametrize("case", range(12))
def test_majority_accuracy_equals_best_many_to_one_map(case):
    y_true, y_pred = _small_cases()[case]
    clusters, classes = np.unique(y_pred).tolist(), np.unique(y_true).tolist()
    best = max(
        _accuracy_of_map(y_true, y_pred, dict(zip(clusters, image)))
        for image in itertools.product(classes, repeat=len(clusters))
    )
    assert majority_accuracy(y_true, y_pred) == pytest.approx(best, abs=TOL)
    assert purity(y_true, y_pred) == majority_accuracy(y_true, y_pred)


def test_hungarian_mapping_with_more_clusters_than_classes():
    y_true = [0, 0, 0, 1, 1, 1, 1]
    y_pred = ["x", "x", "y", "z", "z", "z", "y"]
    assert hungarian_mapping(y_true, y_pred) == {"x": 0, "z": 1}
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(5 / 7, abs=TOL)
    assert majority_accuracy(y_true, y_pred) == pytest.approx(6 / 7, abs=TOL)


def test_hungarian_mapping_with_fewer_clusters_than_classes():
    y_true = [0, 0, 1, 1, 1, 2]
    y_pred = [4, 4, 9, 9, 9, 9]
    assert hungarian_mapping(y_true, y_pred) == {4: 0, 9: 1}
    assert clustering_accuracy(y_true, y_pred) == pytest.approx(5 / 6, abs=TOL)


def test_purity_hand_computed():
    # Clusters {0,0}, {0,1,1}, {2}: majorities 2 + 2 + 1 of 6 samples.
    assert purity([0, 0, 0, 1, 1, 2], [0, 0, 1, 1, 1, 2]) == pytest.approx(5 / 6, abs=TOL)
    # One cluster per sample is perfectly pure; one cluster has the largest class share.
    assert purity([0, 0, 1, 1, 1], [0, 1, 2, 3, 4]) == 1.0
    assert purity([0, 0, 1, 1, 1], [0, 0, 0, 0, 0]) == pytest.approx(3 / 5, abs=TOL)


def _pair_counts_by_enumeration(y_true, y_pred):
    tp = fp = fn = 0
    for a, b in itertools.combinations(range(len(y_true)), 2):
        same_true, same_pred = y_true[a] == y_true[b], y_pred[a] == y_pred[b]
        tp += same_true and same_pred
        fp += same_pred and not same_true
        fn += same_true and not same_pred
    return tp, fp, fn


def test_pair_f1_equals_explicit_pair_enumeration(labelings):
    for y_true, y_pred in labelings[:15]:
        tp, fp, fn = _pair_counts_by_enumeration(y_true.tolist(), y_pred.tolist())
        scores = pair_f1(y_true, y_pred)
        assert isinstance(scores, PairScores)
        assert scores.precision == pytest.approx(tp / (tp + fp), abs=TOL)
        assert scores.recall == pytest.approx(tp / (tp + fn), abs=TOL)
        assert scores.f1 == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=TOL)


def test_pair_f1_matches_sklearn_pair_confusion_matrix(labelings):
    for y_true, y_pred in labelings:
        (_, fp), (fn, tp) = pair_confusion_matrix(y_true, y_pred)  # ordered pairs: all doubled
        precision, recall, f1 = pair_f1(y_true, y_pred)
        assert precision == pytest.approx(tp / (tp + fp) if tp + fp else 0.0, abs=TOL)
        assert recall == pytest.approx(tp / (tp + fn) if tp + fn else 0.0, abs=TOL)
        assert f1 == pytest.approx(2 * tp / (2 * tp + fp + fn), abs=TOL)


def test_pair_f1_hand_computed_and_zero_conventions():
    # Together in truth: (0,1), (0,2), (1,2); predicted together: (0,1), (2,3); TP = 1.
    assert pair_f1([0, 0, 0, 1], [0, 0, 1, 1]) == (0.5, 1 / 3, 0.4)
    # One cluster per sample puts no pair together: precision 0 by definition, recall 0.
    assert pair_f1([0, 0, 1], [0, 1, 2]) == (0.0, 0.0, 0.0)
    assert pair_f1([0, 0, 1, 1], [5, 5, 3, 3]) == (1.0, 1.0, 1.0)


def test_ari_matches_sklearn(labelings):
    for y_true, y_pred in labelings:
        assert ari(y_true, y_pred) == pytest.approx(adjusted_rand_score(y_true, y_pred), abs=TOL)


def test_ari_trivial_partitions():
    assert ari([3], [1]) == 1.0
    assert ari([0, 1, 2], ["a", "b", "c"]) == 1.0
    assert ari([0, 0, 0], [1, 1, 1]) == 1.0
    assert ari([0, 0, 0, 0], [0, 1, 2, 3]) == 0.0
    assert ari([0, 0, 1, 1], [0, 1, 0, 1]) == pytest.approx(-0.5, abs=TOL)


def _f_measure_from_definition(y_true, y_pred):
    """Steinbach et al. (2000) with exact fractions: P, R, F(i, j), then the weighted max."""
    n = len(y_true)
    total = Fraction(0)
    for i in set(y_true):
        n_i = sum(t == i for t in y_true)
        best = Fraction(0)
        for j in set(y_pred):
            n_j = sum(p == j for p in y_pred)
            n_ij = sum(t == i and p == j for t, p in zip(y_true, y_pred))
            if n_ij:
                precision, recall = Fraction(n_ij, n_j), Fraction(n_ij, n_i)
                best = max(best, 2 * precision * recall / (precision + recall))
        total += Fraction(n_i, n) * best
    return float(total)


def test_f_measure_equals_definition(labelings):
    for y_true, y_pred in labelings[:15]:
        expected = _f_measure_from_definition(y_true.tolist(), y_pred.tolist())
        assert f_measure(y_true, y_pred) == pytest.approx(expected, abs=TOL)


def test_f_measure_hand_computed():
    # Class 0 (3): best cluster {0,0}: F = 2*2/(3+2) = 0.8. Class 1 (2): cluster {0,1,1}:
    # 2*2/(2+3) = 0.8. Class 2 (1): singleton cluster: 1. F = (3*0.8 + 2*0.8 + 1)/6 = 5/6.
    assert f_measure([0, 0, 0, 1, 1, 2], [0, 0, 1, 1, 1, 2]) == pytest.approx(5 / 6, abs=TOL)
    # One cluster per sample: class 0 (2) gets 2/(2+1), class 1 (3) gets 2/(3+1).
    one_each = (2 * (2 / 3) + 3 * (1 / 2)) / 5
    assert f_measure([0, 0, 1, 1, 1], [0, 1, 2, 3, 4]) == pytest.approx(one_each, abs=TOL)
    assert one_each == pytest.approx(17 / 30, abs=TOL)
    # A single cluster: class 0 gets 2*2/(2+5), class 1 gets 2*3/(3+5); F = 19/28.
    assert f_measure([0, 0, 1, 1, 1], [7, 7, 7, 7, 7]) == pytest.approx(19 / 28, abs=TOL)


def test_f_measure_per_level_hand_computed_tree():
    y_true = [0, 0, 1, 1, 1]
    root = [0, 0, 0, 0, 0]
    level_1 = ["a", "a", "a", "b", "b"]  # class 0: 2*2/(2+3); class 1: 2*2/(3+2); F = 0.8
    level_2 = ["aa", "aa", "ab", "ba", "ba"]  # class 0: 1; class 1: 2*2/(3+2); F = 0.88
    leaves = [0, 1, 2, 3, 4]
    scores = f_measure_per_level(y_true, [root, level_1, level_2, leaves])
    assert scores.dtype == np.float64 and scores.shape == (4,)
    np.testing.assert_allclose(scores, [19 / 28, 0.8, 0.88, 17 / 30], rtol=0, atol=TOL)


def test_f_measure_per_level_accepts_an_array_of_levels(labelings):
    y_true, y_pred = labelings[0]
    levels = np.stack([y_pred // 3, y_pred, y_true])
    expected = [f_measure(y_true, level) for level in levels]
    np.testing.assert_allclose(f_measure_per_level(y_true, levels), expected, rtol=0, atol=0)
    assert f_measure_per_level(y_true, levels)[2] == 1.0
