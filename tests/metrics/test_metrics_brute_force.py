"""The scikit-learn wrappers and the matching step against brute force on small cases."""

import itertools
import math
from collections import Counter
from fractions import Fraction

import numpy as np
import pytest

from pyromodels import metrics

TOL = 1e-12


def _small_cases():
    cases = []
    for seed in range(15):
        rng = np.random.default_rng(500 + seed)
        n = int(rng.integers(2, 9))
        cases.append((rng.integers(0, int(rng.integers(1, 4)), n).tolist(),
                      rng.integers(0, int(rng.integers(1, 5)), n).tolist()))
    return cases + [([0, 0, 0], [1, 2, 3]), ([0, 1, 2], [0, 1, 2]), ([4, 4], [4, 4])]


CASES = _small_cases()


def _pairs_together(labels):
    return {(a, b) for a, b in itertools.combinations(range(len(labels)), 2) if labels[a] == labels[b]}


@pytest.mark.parametrize("case", range(len(CASES)))
def test_contingency_matrix_counts_each_pair_of_labels(case):
    y_true, y_pred = CASES[case]
    table = metrics.contingency_matrix(y_true, y_pred)
    counts = Counter(zip(y_true, y_pred))
    classes, clusters = sorted(set(y_true)), sorted(set(y_pred))
    assert table.tolist() == [[counts[(i, j)] for j in clusters] for i in classes]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_ari_equals_rand_index_adjusted_over_all_permutations(case):
    # ARI = (RI - E[RI]) / (max RI - E[RI]) with the expectation over every reordering of y_pred
    # and the maximum (A + B) / 2 written in pairs together in both labelings.
    y_true, y_pred = CASES[case]
    true_pairs = _pairs_together(y_true)
    together = [len(true_pairs & _pairs_together([y_pred[i] for i in order]))
                for order in itertools.permutations(range(len(y_pred)))]
    expected_s = Fraction(sum(together), len(together))
    s = len(true_pairs & _pairs_together(y_pred))
    bound = Fraction(len(true_pairs) + len(_pairs_together(y_pred)), 2)
    expected = 1.0 if bound == expected_s else float((s - expected_s) / (bound - expected_s))
    assert metrics.ari(y_true, y_pred) == pytest.approx(expected, abs=TOL)


def _entropy(labels):
    n = len(labels)
    return -sum(c / n * math.log(c / n) for c in Counter(labels).values())


def _conditional_entropy(target, given):
    """``H(target | given)`` from the joint counts."""
    n, joint, margin = len(target), Counter(zip(target, given)), Counter(given)
    return -sum(c / n * math.log(c / margin[g]) for (_, g), c in joint.items())


@pytest.mark.parametrize("beta", [0.0, 0.5, 1.0, 2.5])
@pytest.mark.parametrize("case", range(len(CASES)))
def test_v_measure_from_conditional_entropies(case, beta):
    y_true, y_pred = CASES[case]
    h_true, h_pred = _entropy(y_true), _entropy(y_pred)
    homogeneity = 1 - _conditional_entropy(y_true, y_pred) / h_true if h_true else 1.0
    completeness = 1 - _conditional_entropy(y_pred, y_true) / h_pred if h_pred else 1.0
    denominator = beta * homogeneity + completeness
    expected = (1 + beta) * homogeneity * completeness / denominator if abs(denominator) > TOL else 0.0
    assert metrics.v_measure(y_true, y_pred, beta) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_per_class_scores_by_counting(case):
    y_true, y_pred = CASES[case]
    table = metrics.precision_recall_per_class(y_true, y_pred)
    f1s = []
    for k in sorted(set(y_true) | set(y_pred)):
        tp = sum(t == k and p == k for t, p in zip(y_true, y_pred))
        fp = sum(t != k and p == k for t, p in zip(y_true, y_pred))
        fn = sum(t == k and p != k for t, p in zip(y_true, y_pred))
        row = table.loc[k]
        assert row["precision"] == pytest.approx(tp / (tp + fp) if tp + fp else 0.0, abs=TOL)
        assert row["recall"] == pytest.approx(tp / (tp + fn) if tp + fn else 0.0, abs=TOL)
        f1s.append(2 * tp / (2 * tp + fp + fn))
        assert row["f1"] == pytest.approx(f1s[-1], abs=TOL)
        assert row["support"] == tp + fn
    assert metrics.macro_f1(y_true, y_pred) == pytest.approx(sum(f1s) / len(f1s), abs=TOL)


@pytest.mark.parametrize("shape", [(3, 3), (2, 4), (4, 2), (1, 3)])
@pytest.mark.parametrize("maximize", [True, False])
def test_optimal_assignment_is_the_best_injective_matching(shape, maximize):
    rng = np.random.default_rng(sum(shape))
    score = rng.integers(-5, 10, shape)
    rows, cols = metrics.optimal_assignment(score, maximize=maximize)
    k = min(shape)
    assert len(rows) == len(cols) == k
    assert len(set(rows.tolist())) == len(set(cols.tolist())) == k
    totals = [
        score[list(r), list(c)].sum()
        for r in itertools.combinations(range(shape[0]), k)
        for c in itertools.permutations(range(shape[1]), k)
    ]
    assert score[rows, cols].sum() == (max(totals) if maximize else min(totals))
