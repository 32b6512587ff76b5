"""Information-theoretic metrics against scikit-learn and exhaustive enumeration."""

import itertools
import math
from collections import Counter

import pytest
from sklearn.metrics import (
    adjusted_mutual_info_score,
    completeness_score,
    homogeneity_score,
    normalized_mutual_info_score,
    v_measure_score,
)

from pyromodels.metrics import ami, nmi, v_measure

TOL = 1e-12
METHODS = ["arithmetic", "geometric", "min", "max"]


@pytest.mark.parametrize("method", METHODS)
def test_nmi_matches_sklearn(labelings, method):
    for y_true, y_pred in labelings:
        expected = normalized_mutual_info_score(y_true, y_pred, average_method=method)
        assert nmi(y_true, y_pred, average_method=method) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("method", METHODS)
def test_ami_matches_sklearn(labelings, method):
    for y_true, y_pred in labelings:
        expected = adjusted_mutual_info_score(y_true, y_pred, average_method=method)
        assert ami(y_true, y_pred, average_method=method) == pytest.approx(expected, abs=TOL)


@pytest.mark.parametrize("beta", [0.25, 1.0, 2.0])
def test_v_measure_matches_sklearn(labelings, beta):
    for y_true, y_pred in labelings:
        expected = v_measure_score(y_true, y_pred, beta=beta)
        assert v_measure(y_true, y_pred, beta=beta) == pytest.approx(expected, abs=TOL)


def test_v_measure_with_beta_zero_is_homogeneity(labelings):
    # V = h c / c = h; where c = 0 (a single class) the value is the beta -> 0 limit, 0.
    for y_true, y_pred in labelings:
        homogeneity = homogeneity_score(y_true, y_pred)
        expected = homogeneity if completeness_score(y_true, y_pred) > 0 else 0.0
        assert v_measure(y_true, y_pred, beta=0.0) == pytest.approx(expected, abs=TOL)


def test_v_measure_equals_arithmetic_nmi(labelings):
    for y_true, y_pred in labelings:
        assert v_measure(y_true, y_pred) == pytest.approx(nmi(y_true, y_pred), abs=TOL)


def _entropy(labels):
    n = len(labels)
    return -sum(c / n * math.log(c / n) for c in Counter(labels).values())


def _mutual_information(y_true, y_pred):
    n = len(y_true)
    joint, a, b = Counter(zip(y_true, y_pred)), Counter(y_true), Counter(y_pred)
    return sum(c / n * math.log(n * c / (a[i] * b[j])) for (i, j), c in joint.items())


def _mean(h_true, h_pred, method):
    return {
        "arithmetic": (h_true + h_pred) / 2,
        "geometric": math.sqrt(h_true * h_pred),
        "min": min(h_true, h_pred),
        "max": max(h_true, h_pred),
    }[method]


TINY = [
    ([0, 0, 1, 1, 2, 2, 2], [0, 1, 1, 1, 2, 2, 0]),
    ([0, 0, 0, 1, 1, 1, 1], [0, 0, 1, 1, 2, 2, 3]),
    ([0, 1, 2, 0, 1, 2], [0, 0, 0, 1, 1, 0]),
    ([0, 0, 1, 1, 1], [1, 0, 1, 0, 2]),
    ([0, 0, 0, 0, 0, 1, 1], [0, 0, 0, 0, 1, 1, 2]),  # blocks of 5 and 4 of 7 overlap >= 2
]


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("case", range(len(TINY)))
def test_ami_equals_average_over_all_permutations(case, method):
    # The expected mutual information of the permutation model is the plain average of the
    # mutual information over all n! reorderings of y_pred.
    y_true, y_pred = TINY[case]
    mis = [
        _mutual_information(y_true, [y_pred[i] for i in order])
        for order in itertools.permutations(range(len(y_pred)))
    ]
    expected_mi = math.fsum(mis) / len(mis)
    mi = _mutual_information(y_true, y_pred)
    normalizer = _mean(_entropy(y_true), _entropy(y_pred), method)
    expected = (mi - expected_mi) / (normalizer - expected_mi)
    assert ami(y_true, y_pred, average_method=method) == pytest.approx(expected, abs=TOL)
    assert nmi(y_true, y_pred, average_method=method) == pytest.approx(mi / normalizer, abs=TOL)


@pytest.mark.parametrize("method", METHODS)
def test_identical_partitions_score_exactly_one(method):
    y_true = [0, 0, 1, 1, 1, 2]
    y_pred = ["c", "c", "a", "a", "a", "b"]
    assert nmi(y_true, y_pred, method) == 1.0
    assert ami(y_true, y_pred, method) == 1.0
    assert v_measure(y_true, y_pred) == 1.0


@pytest.mark.parametrize("method", METHODS)
def test_single_block_conventions_agree_with_sklearn(method):
    cases = [([0, 0, 0], [1, 1, 1]), ([0, 0, 0, 0], [0, 1, 1, 2]), ([0, 1, 1, 2], [5, 5, 5, 5])]
    for y_true, y_pred in cases:
        assert nmi(y_true, y_pred, method) == normalized_mutual_info_score(
            y_true, y_pred, average_method=method
        )
        assert ami(y_true, y_pred, method) == adjusted_mutual_info_score(
            y_true, y_pred, average_method=method
        )
        assert v_measure(y_true, y_pred) == v_measure_score(y_true, y_pred)


def test_ami_with_one_cluster_per_sample():
    # Every labeling with singleton blocks has I = H(y_true) = E[I], so AMI is 0 even where the
    # formula reads 0/0 (average "min"); identical singleton partitions score 1.
    y_true, singletons = [0, 0, 1, 1, 1], [0, 1, 2, 3, 4]
    for method in METHODS:
        assert ami(y_true, singletons, method) == 0.0
        assert ami(singletons, y_true, method) == 0.0
        assert ami(singletons, singletons[::-1], method) == 1.0
    assert nmi(y_true, singletons, "min") == 1.0
