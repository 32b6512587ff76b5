"""The paper's metric row against scikit-learn and on the edge cases of the paper notes (8.2)."""

import numpy as np
import pytest
from sklearn.metrics import adjusted_rand_score, v_measure_score
from sklearn.metrics.cluster import contingency_matrix, pair_confusion_matrix

from pyromodels.ddpm import PAPER_METRICS, paper_scores


def _sklearn_row(y_true, y_pred):
    (_, fp), (fn, tp) = pair_confusion_matrix(y_true, y_pred)
    table = contingency_matrix(y_true, y_pred)
    return {
        "F score": 2 * tp / (2 * tp + fp + fn),
        "V score": v_measure_score(y_true, y_pred),
        "ARI": adjusted_rand_score(y_true, y_pred),
        "ACC*": table.max(axis=0).sum() / table.sum(),
        "K": table.shape[1],
    }


@pytest.mark.parametrize("seed", range(4))
def test_row_matches_sklearn_on_random_labelings(seed):
    gen = np.random.default_rng(seed)
    y_true = gen.integers(0, 4, size=60)
    y_pred = np.where(gen.random(60) < 0.6, y_true, gen.integers(0, 7, size=60))
    got = paper_scores(y_true, y_pred)
    want = _sklearn_row(y_true, y_pred)
    assert tuple(got) == PAPER_METRICS
    for key in PAPER_METRICS:
        assert got[key] == pytest.approx(want[key], rel=1e-12, abs=1e-14)
    assert isinstance(got["K"], int)


def test_hand_computed_small_case():
    # classes {0,1,2 | 3,4}, clusters {0,1 | 2,3,4}: TP = 1 + 1 = 2, pairs together in the
    # clustering 1 + 3 = 4, in the classes 3 + 1 = 4 -> F = 4 / 8 = 0.5; ACC* = (2 + 2) / 5
    got = paper_scores([0, 0, 0, 1, 1], [7, 7, 3, 3, 3])
    assert got["F score"] == pytest.approx(0.5)
    assert got["ACC*"] == pytest.approx(0.8)
    assert got["K"] == 2


def test_perfect_clustering_scores_one_everywhere():
    y = [0, 0, 1, 1, 2, 2, 2]
    assert paper_scores(y, [5, 5, 9, 9, 1, 1, 1]) == {"F score": 1.0, "V score": 1.0, "ARI": 1.0,
                                                      "ACC*": 1.0, "K": 3}


def test_all_singletons_have_acc_one_and_ari_zero():
    y = [0, 0, 0, 1, 1, 1]
    got = paper_scores(y, list(range(6)))
    assert got["ACC*"] == 1.0 and got["ARI"] == pytest.approx(0.0, abs=1e-15)
    assert got["F score"] == 0.0 and got["K"] == 6
    assert 0.0 < got["V score"] < 1.0


def test_one_cluster_scores():
    got = paper_scores([0, 0, 0, 1], [4, 4, 4, 4])
    # ARI 0; V 0 (no homogeneity gain); F = 2*3/(2*3+3+0) = 2/3; ACC* = 3/4
    assert got["ARI"] == pytest.approx(0.0, abs=1e-15) and got["V score"] == pytest.approx(0.0)
    assert got["F score"] == pytest.approx(2 / 3) and got["ACC*"] == 0.75 and got["K"] == 1


def test_ari_can_be_negative():
    assert paper_scores([0, 0, 1, 1], [0, 1, 0, 1])["ARI"] < 0


def test_bad_input():
    with pytest.raises(ValueError, match="y_true and y_pred must have the same length, got 2 and 3"):
        paper_scores([0, 1], [0, 1, 2])
    with pytest.raises(ValueError, match="y_true must not be empty"):
        paper_scores([], [])
