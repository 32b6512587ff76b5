"""Invariance and ordering properties of the clustering metrics on small random labelings."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels import metrics

TOL = 1e-12


@st.composite
def relabelled_pair(draw):
    """``(y_true, y_pred, renamed)``: ``renamed`` is ``y_pred`` under a bijective relabelling."""
    n = draw(st.integers(1, 14))
    y_true = draw(st.lists(st.integers(0, 4), min_size=n, max_size=n))
    y_pred = draw(st.lists(st.integers(0, 5), min_size=n, max_size=n))
    image = draw(st.permutations(range(6)))
    as_text = draw(st.booleans())
    renamed = [f"c{image[p]}" if as_text else 10 * image[p] - 7 for p in y_pred]
    return y_true, y_pred, renamed


INVARIANT = [
    metrics.nmi,
    metrics.ami,
    metrics.ari,
    metrics.v_measure,
    metrics.clustering_accuracy,
    metrics.majority_accuracy,
    metrics.f_measure,
]


@settings(deadline=None, max_examples=50)
@given(relabelled_pair())
def test_relabelling_the_prediction_changes_nothing(case):
    y_true, y_pred, renamed = case
    for metric in INVARIANT:
        assert abs(metric(y_true, y_pred) - metric(y_true, renamed)) <= TOL, metric.__name__
    assert np.allclose(metrics.pair_f1(y_true, y_pred), metrics.pair_f1(y_true, renamed))
    # The matching follows the renaming: cluster p maps where its new name maps.
    before, after = metrics.hungarian_mapping(y_true, y_pred), metrics.hungarian_mapping(y_true, renamed)
    renamed_of = dict(zip(y_pred, renamed))
    accuracy = metrics.clustering_accuracy(y_true, y_pred)
    assert sum(after.get(renamed_of[p]) == t for t, p in zip(y_true, y_pred)) / len(y_true) == accuracy
    assert sum(before.get(p) == t for t, p in zip(y_true, y_pred)) / len(y_true) == accuracy


@settings(deadline=None, max_examples=50)
@given(relabelled_pair())
def test_symmetry_bounds_and_ordering(case):
    y_true, y_pred, _ = case
    for metric in (metrics.nmi, metrics.ari, metrics.ami):
        assert abs(metric(y_true, y_pred) - metric(y_pred, y_true)) <= TOL, metric.__name__
    for method in ("arithmetic", "geometric", "min", "max"):
        assert -TOL <= metrics.nmi(y_true, y_pred, method) <= 1 + TOL
    # min <= geometric <= arithmetic <= max as normalisers, so NMI is ordered the other way.
    ordered = [metrics.nmi(y_true, y_pred, m) for m in ("max", "arithmetic", "geometric", "min")]
    assert all(a <= b + TOL for a, b in zip(ordered, ordered[1:]))
    # A one-to-one map is a special many-to-one map.
    assert metrics.clustering_accuracy(y_true, y_pred) <= metrics.majority_accuracy(y_true, y_pred)
    assert metrics.ari(y_true, y_pred) <= 1.0 and metrics.ami(y_true, y_pred) <= 1 + TOL


@settings(deadline=None, max_examples=50)
@given(st.lists(st.integers(0, 4), min_size=1, max_size=14), st.permutations(range(5)))
def test_a_relabelled_copy_scores_one(y_true, image):
    copy = [image[t] for t in y_true]
    assert metrics.clustering_accuracy(y_true, copy) == 1.0
    assert metrics.ari(y_true, copy) == 1.0
    assert metrics.nmi(y_true, copy) == 1.0
    assert metrics.ami(y_true, copy) == 1.0
    assert metrics.f_measure(y_true, copy) == 1.0
    assert metrics.pair_f1(y_true, copy).f1 == (1.0 if len(set(y_true)) < len(y_true) else 0.0)
