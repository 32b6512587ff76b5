"""Dawid-Skene EM and labels that (almost) no one else uses.

Maximum likelihood fits every worker's confusion row of a class from the items believed to be
of that class. A class whose items are one or two (a label only one worker gives, or a tiny
data set) gets rows that reproduce those items' labels exactly, so claiming them as its own
beats their true class in likelihood however many workers agree on it: a degenerate optimum
that EM's majority-vote start walks into. The estimator's default diagonal prior, which acts on
such thin classes only, rules it out.
"""

import warnings
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from pyromodels.crowd.ds.data import SingleWorkerClassWarning
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.estimators import DawidSkeneEstimator, MajorityVote
from pyromodels.crowd.estimators.em_prior import em_diagonal

PRIVATE = 2  # the label only worker 0 uses, once, on item 0


def small_frame():
    """Four items, four workers: every item has a strict plurality label."""
    return pd.DataFrame({"task": list("aaaabbbbccccdddd"), "worker": list("uvwx") * 4,
                         "label": [-1, 1, 0, 1, 1, -1, 0, 1, 0, -1, 1, 0, 1, -1, 1, 1]})


def private_code_frame(seed, num_items=30, num_workers=5, accuracy=0.75):
    """Binary labels from workers right with probability ``accuracy``; worker 0 answers
    :data:`PRIVATE` on item 0 instead. Returns the frame and the true classes."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, num_items)
    right = rng.random((num_items, num_workers)) < accuracy
    labels = np.where(right, truth[:, None], 1 - truth[:, None])
    labels[0, 0] = PRIVATE
    items, workers = np.indices(labels.shape)
    df = pd.DataFrame({"task": items.ravel(), "worker": workers.ravel(),
                       "label": labels.ravel()})
    return df, truth


def fit(df, **options):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SingleWorkerClassWarning)
        return DawidSkeneEstimator(**options).fit(df)


def test_default_em_keeps_the_plurality_label_of_a_tiny_set():
    df = small_frame()
    plurality = MajorityVote().fit_predict(df)
    assert fit(df).labels_.to_dict() == plurality.to_dict()
    # maximum likelihood gives b and d (three and two of four workers say 1) to -1 with
    # certainty: four items leave room for classes that fit their items exactly
    ml = fit(df, diagonal=0.0)
    assert ml.labels_[["b", "d"]].tolist() == [-1, -1]
    assert ml.probas_.loc[["b", "d"], -1].min() > 0.999


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_default_em_never_crowns_a_label_one_worker_uses(seed):
    df, truth = private_code_frame(seed)
    est = fit(df)
    assert (est.labels_ != PRIVATE).all()
    assert est.probas_.loc[0, PRIVATE] < 1e-3
    assert est.labels_.loc[0] == MajorityVote().fit_predict(df).loc[0]


@pytest.mark.parametrize("em_floor", [1e-10, 0.0])
def test_maximum_likelihood_prefers_the_private_class_whatever_the_floor(em_floor):
    # not an artefact of the start or of the floor: the item in a class of its own has a
    # higher likelihood than the item in the class the other workers agree on
    df, truth = private_code_frame(0)
    ml = fit(df, diagonal=0.0, em_floor=em_floor, n_iter=500, tol=1e-10)
    assert ml.labels_.loc[0] == PRIVATE and ml.probas_.loc[0, PRIVATE] > 0.999
    sensible = fit(df)
    assert sensible.labels_.loc[0] == truth[0]
    data = ml.model_.prepare(ml.posterior_.data)

    def log_likelihood(est):
        params = {"prior": est.posterior_.mean("prior"),
                  "confusion": est.posterior_.mean("confusion")}
        return float(DawidSkene().em_outputs(data, params)["log_likelihood"])

    assert log_likelihood(ml) > log_likelihood(sensible)


def test_a_class_used_by_a_single_worker_is_named_with_its_worker():
    df, _ = private_code_frame(0)
    with pytest.warns(SingleWorkerClassWarning,
                      match=r"1 class\(es\) are used by a single worker: class 2 only by worker 0"):
        DawidSkene().prepare(df)
    with pytest.warns(SingleWorkerClassWarning, match="class 2 only by worker 0"):
        DawidSkeneEstimator().fit(df)
    assert issubclass(SingleWorkerClassWarning, UserWarning)


def test_no_warning_when_every_class_has_two_workers():
    df, _ = private_code_frame(0)
    df.loc[(df["task"] == 1) & (df["worker"] == 1), "label"] = PRIVATE
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingleWorkerClassWarning)
        DawidSkene().prepare(df)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SingleWorkerClassWarning)
        DawidSkene().prepare(small_frame())


def sparse_private_code_frame(seed, num_items=300, num_workers=30, per_item=5, accuracy=0.75):
    """Binary labels, each item from ``per_item`` of ``num_workers`` workers (a sixth of the
    grid filled); the first worker of item 0 answers :data:`PRIVATE` there instead."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 2, num_items)
    workers = np.stack([rng.choice(num_workers, per_item, replace=False)
                        for _ in range(num_items)])
    right = rng.random(workers.shape) < accuracy
    labels = np.where(right, truth[:, None], 1 - truth[:, None])
    labels[0, 0] = PRIVATE
    items = np.repeat(np.arange(num_items), per_item)
    df = pd.DataFrame({"task": items, "worker": workers.ravel(), "label": labels.ravel()})
    return df, truth


def test_the_default_diagonal_tops_thin_classes_up_to_their_free_probabilities():
    # d_k = max(0, K - 1 - L_k / M): L_k labels k in the table, M workers, K classes
    small = fit(small_frame())  # K = 3, M = 4; labels -1, 0, 1 given 4, 4 and 8 times
    assert small.model_.diagonal == (1.0, 1.0, 0.0)
    df, _ = private_code_frame(0)  # K = 3, M = 5; PRIVATE given once, 0 and 1 over 70 times
    assert fit(df).model_.diagonal == (0.0, 0.0, 2 - 1 / 5)
    sparse, _ = sparse_private_code_frame(0)  # M = 30; PRIVATE once, 0 and 1 about 750 times
    assert fit(sparse).model_.diagonal == (0.0, 0.0, 2 - 1 / 30)
    assert fit(sparse, diagonal=0.5).model_.diagonal == 0.5
    # codes with no worker and no label (what an empty table would hold): K - 1 everywhere
    no_labels = SimpleNamespace(num_classes=2, num_workers=0, label_idx=np.zeros(0, np.int64))
    assert em_diagonal(no_labels) == (1.0, 1.0)
    assert fit(sparse, method="gibbs", num_samples=5, num_warmup=5,
               num_chains=1).model_.diagonal is None  # flat priors for the Bayesian methods


def test_the_default_prior_is_the_em_objective_of_its_per_class_diagonal():
    # the facade's default fit is the MAP of DawidSkene with that diagonal, on either path
    df = small_frame()
    est = fit(df)
    post = DawidSkene(diagonal=(1.0, 1.0, 0.0)).fit(est.table_, method="em", seed=0,
                                                    progress=False, max_iter=100, tol=1e-5)
    np.testing.assert_allclose(est.probas_.to_numpy(), post.params["probas"].numpy(),
                               atol=1e-12)
    B = post.data.confusion_concentration
    assert B.tolist() == [[2.0, 1.0, 1.0], [1.0, 2.0, 1.0], [1.0, 1.0, 1.0]]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_the_default_prior_keeps_the_fix_in_a_sparse_table(seed):
    df, truth = sparse_private_code_frame(seed)
    ml = fit(df, diagonal=0.0)
    assert ml.labels_.loc[0] == PRIVATE  # the degenerate optimum is there in sparse tables too
    est = fit(df)
    assert (est.labels_ != PRIVATE).all() and est.probas_.loc[0, PRIVATE] < 1e-3


def test_the_default_prior_loses_no_task_to_maximum_likelihood_on_the_web_set():
    # every class of the web-search set is given at least 1858 times by 177 workers, more
    # than K - 1 = 4 labels per confusion row, so the default puts no prior there and labels
    # exactly as maximum likelihood: 2199 of the 2653 gold tasks in float64. The earlier
    # defaults lost tasks to it: a fixed diagonal=1 61 (2138), the share of the grid that
    # holds a label (d = 0.0330) 3 (2196). Threshold: not one task fewer than ML.
    from pyromodels.data import load_crowd
    from pyromodels.data.columns import labelled_cells

    answers, gold = load_crowd("web")
    tasks = gold.index.intersection(pd.Index(answers["task"].unique()))

    def right(est):
        return int((est.labels_.loc[tasks].to_numpy() == gold.loc[tasks].to_numpy()).sum())

    ml = fit(answers, diagonal=0.0, allow_repeats=True)
    default = fit(answers, allow_repeats=True)
    assert default.model_.diagonal == (0.0,) * 5
    assert right(default) >= right(ml)
    table = ml.table_
    share = labelled_cells(table) / (table.num_items * table.num_workers)
    assert right(fit(answers, diagonal=share, allow_repeats=True)) < right(ml)
    assert right(fit(answers, diagonal=1.0, allow_repeats=True)) < right(ml)
