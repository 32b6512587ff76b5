"""The DataFrame facade of the pairwise worker model: outputs, their index, and errors."""

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core.not_fitted import NotFittedError
from pyromodels.metrics import clustering_accuracy
from pyromodels.scdc.pairwise_estimator import PairwiseDawidSkeneEstimator


def _frame(make_pairs, seed=0):
    pairs, z = make_pairs(60, 3, [0.95, 0.9, 0.8], 400, seed=seed)
    items = np.array([f"item{n:02d}" for n in range(60)])
    workers = np.array(["ann", "bob", "cy"])
    df = pd.DataFrame({"a": items[pairs.i_idx.numpy()], "b": items[pairs.j_idx.numpy()],
                       "who": workers[pairs.worker_idx.numpy()], "same": pairs.link.numpy()})
    return df, pd.Series(z.numpy(), index=items)


def _estimator(**kwargs):
    return PairwiseDawidSkeneEstimator(3, item_a="a", item_b="b", worker="who", link="same",
                                       n_init=2, **kwargs)


def test_outputs_are_indexed_by_the_users_ids(make_pairs):
    df, truth = _frame(make_pairs)
    est = _estimator().fit(df)
    assert list(est.labels_.index) == sorted(truth.index)
    assert est.probas_.shape == (60, 3)
    np.testing.assert_allclose(est.probas_.sum(axis=1), 1.0)
    assert list(est.probas_.columns) == [0, 1, 2]
    for name in ("alpha_", "beta_", "weights_"):
        assert list(getattr(est, name).index) == ["ann", "bob", "cy"]
    np.testing.assert_allclose(est.weights_, np.log(est.alpha_ / (1 - est.alpha_))
                               + np.log(est.beta_ / (1 - est.beta_)))
    assert est.weights_.is_monotonic_decreasing  # ann (0.95) > bob (0.9) > cy (0.8)
    assert (est.labels_ == est.probas_.to_numpy().argmax(1)).all()
    assert clustering_accuracy(truth[est.labels_.index].to_numpy(), est.labels_.to_numpy()) > 0.95
    assert est.loss_history_[-1] == pytest.approx(est.elbo_)
    pd.testing.assert_series_equal(_estimator().fit_predict(df), est.labels_)


def test_items_in_no_pair_keep_the_prior(make_pairs):
    df, truth = _frame(make_pairs)
    items = ["lonely", *truth.index]
    est = _estimator().fit(df, items=items)
    assert list(est.labels_.index) == items
    pi = est.posterior_.params["pi_concentration"]
    expected = torch.softmax(torch.digamma(pi) - torch.digamma(pi.sum()), 0)
    # q was last updated under the weights of the step before, which the fit's tolerance
    # leaves a few 1e-6 (relative) from the final ones
    np.testing.assert_allclose(est.probas_.loc["lonely"].to_numpy(), expected.numpy(), rtol=1e-4)
    assert not np.allclose(est.probas_.loc["lonely"].to_numpy(), 1 / 3, rtol=1e-2)


def test_random_state_wins_over_seed(make_pairs):
    df, _ = _frame(make_pairs, seed=1)
    a = _estimator(seed=5).fit(df)
    b = _estimator(seed=0, random_state=5).fit(df)
    pd.testing.assert_frame_equal(a.probas_, b.probas_)


def test_errors(make_pairs):
    df, _ = _frame(make_pairs)
    with pytest.raises(ValueError, match="n_clusters must be >= 2"):
        PairwiseDawidSkeneEstimator(1, item_a="a", item_b="b").fit(df)
    with pytest.raises(TypeError, match="n_clusters must be an int"):
        PairwiseDawidSkeneEstimator(2.5).fit(df)
    with pytest.raises(TypeError, match="pairs_df must be a pandas DataFrame"):
        _estimator().fit(df.to_numpy())
    with pytest.raises(ValueError, match="item_a and item_b"):
        PairwiseDawidSkeneEstimator(2, item_a="a", item_b="a").fit(df)
    with pytest.raises(ValueError, match="'same'"):  # links other than 0/1, from the table's checks
        _estimator().fit(df.assign(same=df["same"] * 2))
    with pytest.raises(ValueError, match="itself"):
        _estimator().fit(df.assign(b=df["a"]))
    twice = pd.concat([df, df.iloc[:1].assign(same=1 - df["same"].iloc[0])])
    with pytest.raises(ValueError, match="repeated"):
        _estimator().fit(twice)
    kept = _estimator(duplicates="first").fit(twice)  # the table keeps the first judgement
    assert len(kept.pairs_) == len(df)
    with pytest.raises(ValueError, match="missing column.*'item_a'.*item_a="):
        PairwiseDawidSkeneEstimator(2).fit(df)  # default columns absent: named by our arguments
    with pytest.raises(NotFittedError, match="fit"):
        _ = _estimator().labels_
    with pytest.raises(ValueError, match="start must be one of"):
        _estimator(start="kmeans").fit(df)


def test_both_starts_find_the_clusters(make_pairs):
    """Three workers of 80-95% on 60 items: the spectral start (default) and the annealed
    random start both recover the three clusters."""
    df, z = _frame(make_pairs)
    for start in ("links", "random"):
        est = _estimator(start=start).fit(df)
        assert est.model_.start == start
        assert clustering_accuracy(z[est.labels_.index].to_numpy(), est.labels_.to_numpy()) > 0.95


def test_a_failed_fit_forgets_the_last_one(make_pairs):
    df, _ = _frame(make_pairs)
    est = _estimator().fit(df)
    with pytest.raises(ValueError):
        est.set_params(n_clusters=1).fit(df)
    with pytest.raises(NotFittedError):
        _ = est.labels_
