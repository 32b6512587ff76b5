"""The soft NMI of the LTVAE paper's App. D: equal to the geometric NMI on one-hot rows, to a
hand computation on soft rows, and its conventions and checks."""

import math

import numpy as np
import pytest

from pyromodels.metrics import nmi, soft_nmi


def _one_hot(labels, k):
    return np.eye(k)[np.asarray(labels)]


def test_one_hot_rows_give_the_geometric_nmi():
    rng = np.random.default_rng(0)
    a, b = rng.integers(0, 4, 200), rng.integers(0, 3, 200)
    b[:120] = a[:120] % 3  # some agreement
    assert soft_nmi(_one_hot(a, 4), _one_hot(b, 3)) == pytest.approx(
        nmi(a, b, average_method="geometric"), abs=1e-12)


def test_soft_rows_match_a_hand_computation():
    p = np.array([[0.9, 0.1], [0.2, 0.8]])
    q = np.array([[1.0, 0.0], [0.0, 1.0]])
    joint = np.array([[0.45, 0.1], [0.05, 0.4]])
    pu, pv = joint.sum(1), joint.sum(0)
    info = sum(joint[i, j] * math.log(joint[i, j] / (pu[i] * pv[j]))
               for i in range(2) for j in range(2))
    h = [-(m * np.log(m)).sum() for m in (pu, pv)]
    assert soft_nmi(p, q) == pytest.approx(info / math.sqrt(h[0] * h[1]), abs=1e-12)


def test_single_blocks_follow_the_nmi_conventions():
    single = np.ones((4, 1))
    assert soft_nmi(single, single) == 1.0
    assert soft_nmi(single, _one_hot([0, 1, 0, 1], 2)) == 0.0


def test_bad_rows_are_refused():
    with pytest.raises(ValueError, match="p"):
        soft_nmi([[0.5, 0.6]], [[1.0]])
    with pytest.raises(ValueError, match="rows"):
        soft_nmi(np.ones((3, 1)), np.ones((2, 1)))
