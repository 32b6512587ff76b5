"""Values pinned before the scores were delegated to scikit-learn, the 0/0 conventions, and the
package's import boundary."""

import warnings

import numpy as np
import pytest

from pyromodels import metrics

TOL = 1e-12
METHODS = ("arithmetic", "geometric", "min", "max")

# Values of the written-out implementation that preceded the scikit-learn wrappers, in the order
# ARI, NMI (4 methods), AMI (4 methods), V (beta 0.5, 2), pair P/R/F1, F-measure, ACC, ACC_maj,
# macro-F1.
PINNED = [
    ([0, 2, 0, 0, 1, 1, 3, 3, 3, 3, 0, 0, 3, 0, 0, 0, 3, 1, 1, 0, 1, 2, 3, 2, 3, 0, 1, 2, 2, 0],
     [1, 2, 0, 5, 3, 4, 3, 3, 2, 1, 0, 1, 4, 2, 4, 1, 4, 5, 4, 1, 2, 1, 4, 4, 2, 1, 0, 1, 0, 0],
     [0.025918338177140406, 0.20555949186091477, 0.20700891629922188, 0.23309475448574787,
      0.18384236711769675, -0.0002186709520703614, -0.00022061575964523258,
      -0.0002568752849360432, -0.00019035934619534935, 0.213985458384726, 0.19777195397798455,
      0.273972602739726, 0.18518518518518517, 0.22099447513812154, 0.4124696356275303,
      0.3333333333333333, 0.5333333333333333, 0.15643939393939393]),
    ([2, 1, 2, 0, 1, 2, 1, 0, 1, 2, 1, 1], [1, 1, 1, 2, 0, 2, 0, 0, 0, 0, 1, 0],
     [0.045454545454545456, 0.2284438263205289, 0.2284438263205289, 0.2284438263205289,
      0.2284438263205289, 0.009068626295067434, 0.009068626295067434, 0.009068626295067434,
      0.009068626295067434, 0.2284438263205289, 0.2284438263205289, 0.36363636363636365,
      0.36363636363636365, 0.36363636363636365, 0.5833333333333334, 0.5833333333333334,
      0.5833333333333334, 0.3277777777777778]),
    ([0, 0, 1, 1, 2, 2, 2, 3], [0, 1, 1, 2, 3, 4, 5, 6],
     [-0.06329113924050633, 0.7112403002464232, 0.7232342657753391, 0.8688104138107328,
      0.6020505680834787, -0.0711397314001712, -0.07580287771466306, -0.2173913043478219,
      -0.042528425457020395, 0.7570045183990944, 0.6706939326844997, 0.0, 0.0, 0.0,
      0.6458333333333333, 0.5, 0.875, 0.16666666666666666]),
    ([0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 2, 2],
     [0.24242424242424243, 0.5158037429793887, 0.5295405780575617, 0.6666666666666666,
      0.4206198357143049, 0.29879245817088995, 0.31045550319770204, 0.44444444444444436,
      0.22504228319830877, 0.5578858913022596, 0.4796249331362628, 0.6666666666666666,
      0.3333333333333333, 0.4444444444444444, 0.8000000000000002, 0.6666666666666666,
      0.8333333333333334, 0.4000000000000001]),
]


@pytest.mark.parametrize("case", range(len(PINNED)))
def test_scores_equal_the_pinned_values(case):
    y_true, y_pred, expected = PINNED[case]
    values = [
        metrics.ari(y_true, y_pred),
        *[metrics.nmi(y_true, y_pred, m) for m in METHODS],
        *[metrics.ami(y_true, y_pred, m) for m in METHODS],
        metrics.v_measure(y_true, y_pred, 0.5),
        metrics.v_measure(y_true, y_pred, 2.0),
        *metrics.pair_f1(y_true, y_pred),
        metrics.f_measure(y_true, y_pred),
        metrics.clustering_accuracy(y_true, y_pred),
        metrics.majority_accuracy(y_true, y_pred),
        metrics.macro_f1(y_true, y_pred),
    ]
    np.testing.assert_allclose(values, expected, rtol=0, atol=TOL)
    assert all(type(v) is float for v in values)


@pytest.mark.parametrize("seed", range(10))
def test_identical_partitions_of_many_blocks_score_exactly_one(seed):
    # scikit-learn reaches I and H along different paths; the wrappers return 1 exactly.
    rng = np.random.default_rng(seed)
    y_true = rng.integers(0, 40, 500)
    y_pred = rng.permutation(60)[y_true]
    for method in METHODS:
        assert metrics.nmi(y_true, y_pred, method) == 1.0
        assert metrics.ami(y_true, y_pred, method) == 1.0
    for beta in (0.0, 0.5, 1.0, 3.0):
        assert metrics.v_measure(y_true, y_pred, beta) == 1.0
    assert metrics.ari(y_true, y_pred) == 1.0


def test_v_measure_with_beta_zero_and_zero_completeness_is_zero():
    # A single class: h = 1 (H(U) = 0) and c = I / H(V) = 0, so beta h + c = 0 and V reads 0/0;
    # the limit beta -> 0 of (1 + beta) h c / (beta h + c) is 0.
    assert metrics.v_measure([0, 0, 0, 0], [0, 1, 1, 2], beta=0.0) == 0.0
    # Independent partitions: I = 0, so h = c = 0.
    assert metrics.v_measure([0, 0, 1, 1], [0, 1, 0, 1], beta=0.0) == pytest.approx(0.0, abs=TOL)
    # With beta > 0 the same single-class case is an ordinary 0.
    assert metrics.v_measure([0, 0, 0, 0], [0, 1, 1, 2], beta=1e-9) == 0.0


def test_ami_zero_over_zero_cases_follow_the_convention():
    # Against one block per sample (or a single block) every labeling has I = E[I]: AMI is 0,
    # also where the normaliser equals E[I] and the formula reads 0/0 (average "min").
    singletons = list(range(6))
    for other in ([0, 0, 1, 1, 2, 2], [0, 0, 0, 0, 0, 0], [0, 1, 1, 1, 1, 1]):
        for method in METHODS:
            assert metrics.ami(other, singletons, method) == 0.0
            assert metrics.ami(singletons, other, method) == 0.0
    assert metrics.ami(singletons, singletons[::-1], "min") == 1.0
    assert metrics.ami([0, 0, 0], [4, 4, 4]) == 1.0
    assert metrics.ami([7], ["a"]) == 1.0


def test_zero_division_gives_zero_without_warnings():
    # Class 2 is never predicted (precision 0/0) and class 3 never occurs (recall 0/0).
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        table = metrics.precision_recall_per_class([0, 1, 2, 2], [0, 1, 1, 3])
        score = metrics.macro_f1([0, 1, 2, 2], [0, 1, 1, 3])
        listed = metrics.macro_f1([0, 1, 2, 2], [0, 1, 1, 3], labels=[2, 3, 9])
    assert table.loc[2].tolist() == [0.0, 0.0, 0.0, 2]
    assert table.loc[3].tolist() == [0.0, 0.0, 0.0, 0]
    assert table.loc[1, "precision"] == 0.5
    assert score == pytest.approx((1.0 + 2 / 3 + 0.0 + 0.0) / 4, abs=TOL)
    assert listed == 0.0
