"""Every bad input to the Dawid-Skene model and the estimators gets a clear, pinned error."""

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.crowd.ds.data import SparseWorkerWarning
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.estimators import DawidSkeneEstimator, MajorityVote
from pyromodels.data import AnnotationTable


def frame():
    return pd.DataFrame({"task": ["a", "a", "b", "b", "c", "c"],
                         "worker": ["u", "v", "u", "v", "u", "v"],
                         "label": ["x", "y", "y", "y", "x", "x"]})


def test_labels_outside_the_class_set():
    with pytest.raises(ValueError, match=r"df\['label'\] holds id\(s\) not in classes: 'y'"):
        DawidSkeneEstimator(classes=["x", "z"]).fit(frame())
    with pytest.raises(ValueError, match=r"label_idx must lie in \[0, 1\] \(num_classes=2\)"):
        AnnotationTable.from_arrays([0, 1], [0, 0], [0, 2], num_classes=2)


def test_an_item_with_no_labels_is_an_error_unless_allowed():
    table = AnnotationTable.from_arrays([0, 0, 1, 1], [0, 1, 0, 1], [0, 1, 1, 1], num_items=3)
    msg = r"1 item\(s\) have no label, e.g. \[2\].*allow_unlabelled=True"
    with pytest.raises(ValueError, match=msg):
        DawidSkene().fit(table, method="em", progress=False)
    post = DawidSkene(allow_unlabelled=True).fit(table, method="em", progress=False)
    torch.testing.assert_close(post.params["probas"][2], post.params["prior"])


def test_a_worker_with_one_label_is_allowed_with_a_warning():
    df = pd.concat([frame(), pd.DataFrame({"task": ["a"], "worker": ["w"], "label": ["x"]})])
    msg = r"1 worker\(s\) gave a single label, e.g. \['w'\]"
    with pytest.warns(SparseWorkerWarning, match=msg):
        est = DawidSkeneEstimator().fit(df)
    assert list(est.labels_.index) == ["a", "b", "c"]


def test_nan_in_the_data_and_in_the_confusion_initialiser():
    bad = frame().astype({"label": object})
    bad.loc[2, "label"] = np.nan
    with pytest.raises(ValueError, match=r"df\['label'\] has 1 missing value\(s\) \(NaN or None\)"):
        DawidSkeneEstimator().fit(bad)
    init = np.full((2, 2, 2), 0.5)
    init[1, 0, 0] = np.nan
    with pytest.raises(ValueError, match="init_confusion must be finite: found 1 NaN"):
        DawidSkeneEstimator(init_confusion=init).fit(frame())
    with pytest.raises(ValueError, match=r"init_confusion must have shape \(2, 2, 2\), got"):
        DawidSkeneEstimator(init_confusion=np.full((2, 2), 0.5)).fit(frame())
    with pytest.raises(ValueError, match=r"init_confusion must have rows summing to 1 \(last "
                       r"axis\); row init_confusion\[0, 0\] sums to 0\.8 \(off by 0\.2"):
        DawidSkeneEstimator(init_confusion=np.full((2, 2, 2), 0.4)).fit(frame())
    with pytest.raises(ValueError, match="init_confusion must be non-negative"):
        DawidSkeneEstimator(init_confusion=np.array([[[1.5, -0.5], [0, 1]]] * 2)).fit(frame())
    partial = pd.DataFrame([[0.9, 0.1], [0.2, 0.8]], columns=["x", "y"],
                           index=pd.MultiIndex.from_tuples([("u", "x"), ("u", "y")]))
    with pytest.raises(ValueError, match=r"init_confusion lacks 2 \(worker, true label\) row\(s\)"):
        DawidSkeneEstimator(init_confusion=partial).fit(frame())
    with pytest.raises(ValueError, match="init_confusion=<ndarray> is not used by "
                                         "method='gibbs', only by method='em'"):
        DawidSkeneEstimator(method="gibbs", init_confusion=np.full((2, 2, 2), 0.5)).fit(frame())


def test_one_class_is_an_error():
    with pytest.raises(ValueError, match=r"Dawid-Skene needs at least 2 classes, the data have 1"):
        DawidSkeneEstimator().fit(frame().assign(label="x"))
    with pytest.raises(ValueError, match="num_classes must be an integer >= 2, got 1"):
        DawidSkene(num_classes=1)
    # an unused class is kept when the class list is given
    est = DawidSkeneEstimator(classes=["x", "y"]).fit(frame().assign(label="x"))
    assert list(est.probas_.columns) == ["x", "y"]


def test_num_classes_must_match_the_data():
    table = AnnotationTable.from_arrays([0, 1], [0, 0], [0, 1], num_classes=2)
    with pytest.raises(ValueError, match=r"num_classes=3 but the data have 2 classes \[0, 1\]"):
        DawidSkene(num_classes=3).prepare(table)


def test_unknown_worker_ids_at_predict():
    est = DawidSkeneEstimator().fit(frame())
    new = pd.DataFrame({"task": ["d"], "worker": ["stranger"], "label": ["x"]})
    msg = r"df holds 1 worker id\(s\) not seen by fit, e.g. \['stranger'\]"
    with pytest.raises(ValueError, match=msg):
        est.predict_proba(new)
    other = AnnotationTable.from_arrays([0], [2], [0], num_workers=3, num_classes=2)
    msg = "new_data must be coded with the fitted 2 workers and 2 classes"
    with pytest.raises(ValueError, match=msg):
        est.posterior_.predict(other)
    with pytest.raises(TypeError, match="new_data must be an AnnotationTable, got DataFrame"):
        est.posterior_.predict(new)


def test_bad_priors_and_settings():
    table = AnnotationTable.from_dataframe(frame())
    with pytest.raises(ValueError, match="confusion_concentration must be >= 1 for EM"):
        DawidSkene(confusion_concentration=0.5).fit(table, method="em", progress=False)
    with pytest.raises(ValueError, match="prior_concentration must be > 0 everywhere"):
        DawidSkene(prior_concentration=[1.0, 0.0]).prepare(table)
    msg = r"prior_concentration must be a positive number or have shape \(2,\)"
    with pytest.raises(ValueError, match=msg):
        DawidSkene(prior_concentration=[1.0, 2.0, 3.0]).prepare(table)
    with pytest.raises(ValueError, match="diagonal must be >= 0, got -1.0"):
        DawidSkene(diagonal=-1.0).prepare(table)
    with pytest.raises(ValueError, match=r"diagonal must be >= 0 for every class, "
                                         r"got \[1\.0, -1\.0\]"):
        DawidSkene(diagonal=(1.0, -1.0)).prepare(table)
    with pytest.raises(ValueError, match=r"diagonal must be a number >= 0 or have shape \(2,\) "
                                         r"\(one value per class\) for K = 2, got shape \(3,\)"):
        DawidSkene(diagonal=[1.0, 2.0, 3.0]).prepare(table)
    with pytest.raises(ValueError, match=r"diagonal must be finite: found 1 NaN"):
        DawidSkeneEstimator(diagonal=(0.0, float("nan"))).fit(frame())
    msg = "class_prior fixes the class prior, so it needs update_prior=False"
    with pytest.raises(ValueError, match=msg):
        DawidSkene(class_prior=[0.5, 0.5])
    with pytest.raises(ValueError, match=r"class_prior must sum to 1, got sum 1\.1"):
        DawidSkene(update_prior=False, class_prior=[0.5, 0.6]).prepare(table)
    with pytest.raises(TypeError, match="update_prior must be a bool, got str 'no'"):
        DawidSkene(update_prior="no")
    with pytest.raises(ValueError, match="em_floor must be >= 0"):
        DawidSkene(em_floor=-1e-3)
    with pytest.raises(TypeError, match="data must be an AnnotationTable or a pandas DataFrame"):
        DawidSkene().prepare(np.zeros((3, 3)))
    msg = r"method must be one of \['em', 'gibbs', 'svi', 'nuts'\], got 'mcmc'"
    with pytest.raises(ValueError, match=msg):
        DawidSkeneEstimator(method="mcmc").fit(frame())
    # n_iter=0 (the start) and tol=0 (never stop early) are crowd-kit's settings, both valid
    with pytest.raises(ValueError, match="n_iter must be an integer >= 0, got -1"):
        DawidSkeneEstimator(n_iter=-1).fit(frame())
    with pytest.raises(ValueError, match="tol must be >= 0"):
        DawidSkeneEstimator(tol=-1e-3).fit(frame())
    with pytest.raises(ValueError, match=r"ties must be one of \['random', 'smallest', 'first'\]"):
        MajorityVote(ties="last").fit(frame())


def test_bad_frames():
    with pytest.raises(ValueError, match=r"df is missing column\(s\) \['answer'\]"):
        DawidSkeneEstimator(label="answer").fit(frame())
    with pytest.raises(TypeError, match="df must be a pandas DataFrame, got list"):
        MajorityVote().fit([1, 2])
    repeated = pd.concat([frame(), frame().iloc[:1]])
    msg = r"1 repeated \(item, worker\) row\(s\).*allow_repeats=True"
    with pytest.raises(ValueError, match=msg):
        DawidSkeneEstimator().fit(repeated)
    assert len(DawidSkeneEstimator(allow_repeats=True).fit(repeated).labels_) == 3
