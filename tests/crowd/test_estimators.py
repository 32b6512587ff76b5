"""The crowd-kit style estimators: results indexed by the user's ids, equal to the model's."""

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.base import clone

from pyromodels.core import NotFittedError
from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.estimators import DawidSkeneEstimator, MajorityVote
from pyromodels.crowd.estimators.dawid_skene import em_diagonal
from pyromodels.crowd.majority import vote_fractions
from pyromodels.data import AnnotationTable, WorkerPopulation, simulate_annotations

GENRES = np.array(["jazz", "rock", "pop"])


def string_frame(n=120, m=5, seed=3, missing_rate=None):
    """Simulated labels with string task, worker and class ids in custom columns."""
    table, truth = simulate_annotations(n,
                                        WorkerPopulation(m, dominance=0.75, missing_rate=missing_rate),
                                        3, seed=seed)
    df = pd.DataFrame({
        "item": [f"song-{i:03d}" for i in table.item_idx.tolist()],
        "annotator": [f"ann-{w}" for w in table.worker_idx.tolist()],
        "answer": GENRES[table.label_idx.numpy()],
    }).sample(frac=1.0, random_state=0)  # rows in no particular order
    return df, table, truth


COLUMNS = {"task": "item", "worker": "annotator", "label": "answer"}


def test_results_are_indexed_by_the_users_ids_and_equal_the_models():
    df, table, truth = string_frame()
    est = DawidSkeneEstimator(**COLUMNS).fit(df)
    model = DawidSkene(diagonal=em_diagonal(table))
    post = model.fit(table, method="em", seed=0, progress=False, max_iter=100, tol=1e-5)
    reorder = np.argsort(np.argsort(GENRES))  # code in the user's table of each simulated code
    np.testing.assert_allclose(est.posterior_.params["probas"].numpy()[:, reorder],
                               post.params["probas"].numpy(), atol=1e-12)
    # probas_ and labels_ are what the last M-step was fitted to: the posteriors one step earlier
    assert est.n_iter_ == post.diagnostics["n_iter"] > 1
    post = model.fit(table, method="em", seed=0, progress=False, max_iter=est.n_iter_ - 1, tol=0)
    ids = pd.Index([f"song-{i:03d}" for i in range(120)], name="item")
    assert est.labels_.index.equals(ids) and est.labels_.name == "agg_label"
    # codes of the simulated table follow the same sorted order of ids and classes
    classes = np.sort(GENRES)
    expected = classes[np.argsort(np.argsort(GENRES))][post.params["labels"].numpy()]
    np.testing.assert_array_equal(est.labels_.to_numpy(), expected)
    assert list(est.probas_.columns) == list(classes) and est.probas_.index.equals(ids)
    np.testing.assert_allclose(est.probas_.to_numpy()[:, reorder], post.params["probas"].numpy(),
                               atol=1e-12)
    # confusions_: rows (worker, true label), each row a law over the labels given
    assert est.confusions_.index.names == ["worker", "true"]
    assert list(est.confusions_.index.get_level_values(0).unique()) == [f"ann-{w}" for w in range(5)]
    np.testing.assert_allclose(est.confusions_.sum(axis=1), 1.0, atol=1e-12)
    # errors_ (crowd-kit's layout): rows (worker, label given), each column a law per worker
    assert est.errors_.index.names == ["annotator", "answer"]
    np.testing.assert_allclose(est.errors_.groupby(level=0).sum(), 1.0, atol=1e-12)
    assert list(est.priors_.index) == list(classes)
    assert est.fit_predict(df).equals(est.labels_)
    assert est.fit_predict_proba(df).equals(est.probas_)


def test_em_attributes_describe_the_run():
    df, _, _ = string_frame()
    est = DawidSkeneEstimator(n_iter=500, tol=1e-10, **COLUMNS).fit(df)
    assert est.converged_ is True and est.n_iter_ == len(est.loss_history_) - 1
    assert all(b >= a - 1e-9 for a, b in zip(est.loss_history_, est.loss_history_[1:]))
    assert est.posterior_.method == "em"
    capped = DawidSkeneEstimator(n_iter=2, tol=1e-10, **COLUMNS)
    with pytest.warns(UserWarning, match="EM did not converge"):
        capped.fit(df)
    assert capped.n_iter_ == 2 and capped.converged_ is False


def test_not_fitted_errors():
    est = DawidSkeneEstimator()
    msg = r"not fitted yet: call fit\(df\) before using labels_"
    with pytest.raises(NotFittedError, match=msg):
        _ = est.labels_
    df, _, _ = string_frame(n=10)
    with pytest.raises(NotFittedError, match="before using table_"):
        est.predict_proba(df)
    with pytest.raises(NotFittedError, match="MajorityVote is not fitted"):
        _ = MajorityVote().probas_


def test_predict_proba_for_new_tasks_by_known_workers():
    df, table, _ = string_frame(missing_rate=0.2)
    df = df[df["item"].isin(df["item"].unique()[:100])]
    est = DawidSkeneEstimator(**COLUMNS).fit(df)
    new = pd.DataFrame({"item": ["new-a", "new-a", "new-b"],
                        "annotator": ["ann-0", "ann-3", "ann-1"],
                        "answer": ["pop", "pop", "jazz"]})
    probas = est.predict_proba(new)
    assert list(probas.index) == ["new-a", "new-b"]
    assert list(probas.columns) == ["jazz", "pop", "rock"]
    post = est.posterior_
    conf = post.params["confusion"]
    workers, classes = list(est.table_.workers), list(est.table_.classes)
    w0, w3, pop = workers.index("ann-0"), workers.index("ann-3"), classes.index("pop")
    logits = post.params["prior"].log() + conf[w0, :, pop].log() + conf[w3, :, pop].log()
    np.testing.assert_allclose(probas.loc["new-a"].to_numpy(), torch.softmax(logits, -1).numpy())
    assert est.predict(new).to_dict() == dict(zip(probas.index, probas.idxmax(axis=1)))
    msg = r"df holds 1 worker id\(s\) not seen by fit, e.g. \['ann-9'\]"
    with pytest.raises(ValueError, match=msg):
        est.predict_proba(new.assign(annotator=["ann-0", "ann-9", "ann-1"]))
    with pytest.raises(ValueError, match=r"holds id\(s\) not in .*'blues'"):
        est.predict_proba(new.assign(answer=["pop", "blues", "jazz"]))


def test_init_confusion_from_a_confusions_frame_starts_em_there():
    df, table, truth = string_frame()
    first = DawidSkeneEstimator(**COLUMNS).fit(df)
    start = first.confusions_.copy()
    start.loc[:, :] = 1.0 / 3  # uninformative start: every worker answers at random
    with pytest.warns(UserWarning, match="did not converge"):
        one = DawidSkeneEstimator(n_iter=1, init_confusion=start, **COLUMNS).fit(df)
    data = one.posterior_.data
    params = em.majority_start(data, 1e-10)
    params["confusion"] = torch.full_like(params["confusion"], 1.0 / 3)
    expected = em.em_step(data, params, 1e-10)
    torch.testing.assert_close(one.posterior_.params["confusion"], expected["confusion"])


@pytest.mark.parametrize("method", ["gibbs", "svi"])
def test_bayesian_methods_through_the_estimator(method):
    df, _, truth = string_frame(n=150, m=5, seed=4)
    by_em = DawidSkeneEstimator(**COLUMNS).fit(df)
    knobs = {"num_steps": 300, "lr": 0.05} if method == "svi" else {"num_warmup": 100}
    est = DawidSkeneEstimator(method=method, num_samples=200, **knobs, **COLUMNS).fit(df)
    assert est.converged_ is None and est.posterior_.method == method
    expected_iter = 300 if method == "svi" else 100 + 200
    assert est.n_iter_ == expected_iter
    # a clear-cut set (5 workers at 0.75): posterior modes match EM's labels on confident items
    sure = by_em.probas_.max(axis=1) > 0.95
    assert (est.labels_[sure] == by_em.labels_[sure]).all()
    np.testing.assert_allclose(est.probas_.sum(axis=1), 1.0, atol=1e-12)


def test_fixed_uniform_prior():
    df, _, _ = string_frame()
    est = DawidSkeneEstimator(update_prior=False, **COLUMNS).fit(df)
    np.testing.assert_allclose(est.priors_.to_numpy(), np.full(3, 1 / 3))


def test_majority_vote_estimator():
    df, table, _ = string_frame(missing_rate=0.3, n=60)
    mv = MajorityVote(**COLUMNS).fit(df)
    t = AnnotationTable.from_dataframe(df, item="item", worker="annotator", label="answer")
    np.testing.assert_allclose(mv.probas_.to_numpy(), vote_fractions(t).numpy())
    votes = t.vote_counts()
    chosen = t.encode_classes(mv.labels_.to_numpy())
    assert bool((votes.gather(1, chosen.unsqueeze(1)).squeeze(1) == votes.max(1).values).all())
    again = MajorityVote(**COLUMNS).fit(df)
    assert again.labels_.equals(mv.labels_)  # seeded ties


def test_estimators_follow_the_scikit_learn_parameter_protocol():
    est = DawidSkeneEstimator(n_iter=7, method="gibbs", diagonal=2.0)
    params = est.get_params()
    assert params["n_iter"] == 7 and params["diagonal"] == 2.0 and params["method"] == "gibbs"
    copy = clone(est).set_params(n_iter=9)
    assert copy.n_iter == 9 and est.n_iter == 7
    assert "n_iter=7" in repr(est)
