"""What the facades used to drop without a word: declared but unused classes, knobs the chosen
method ignores, fits too large for memory; and the networked model's init_labels errors."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from sklearn.base import clone

from pyromodels.checks import check_memory, format_bytes
from pyromodels.crowd import (
    DawidSkeneEstimator,
    MajorityVote,
    NetworkedDawidSkene,
    NetworkedDawidSkeneEstimator,
    SequentialDawidSkeneEstimator,
)
from pyromodels.crowd.mrf.fit import sample_labels
from pyromodels.crowd.mrf.labels import LabelPosterior
from pyromodels.data import WorkerPopulation, simulate_networked_annotations


def frame(labels=("x", "y", "x", "x", "y", "y", "x", "y", "x")):
    return pd.DataFrame({"task": ["a", "a", "a", "b", "b", "b", "c", "c", "c"],
                         "worker": ["u", "v", "w"] * 3, "label": list(labels)})


def sequence_frame(df):
    return df.rename(columns={"task": "sequence"}).assign(position=[0, 0, 0, 1, 1, 1, 0, 0, 0])


CATEGORIES = ["z", "x", "y"]  # "z" is declared but nobody used it


@pytest.mark.parametrize("make, fit", [
    (MajorityVote, lambda est, df: est.fit(df)),
    (DawidSkeneEstimator, lambda est, df: est.fit(df)),
    (SequentialDawidSkeneEstimator, lambda est, df: est.fit(sequence_frame(df))),
    (NetworkedDawidSkeneEstimator,
     lambda est, df: est.fit(df, pd.DataFrame({"source": ["a"], "target": ["b"]}))),
])
def test_unused_categories_of_a_categorical_label_column_stay_classes(make, fit):
    df = frame()
    df["label"] = pd.Categorical(df["label"], categories=CATEGORIES)
    est = fit(make(), df)
    assert list(est.probas_.columns) == CATEGORIES
    np.testing.assert_allclose(est.probas_.sum(axis=1), 1.0, atol=1e-9)
    assert set(est.labels_) <= {"x", "y"}
    if make is MajorityVote:
        assert (est.probas_["z"] == 0).all()


IGNORED = [
    (DawidSkeneEstimator, "em", "num_chains", 4, "'gibbs' or 'nuts'"),
    (DawidSkeneEstimator, "em", "num_samples", 10, "'gibbs', 'nuts' or 'svi'"),
    (DawidSkeneEstimator, "em", "lr", 0.1, "'svi'"),
    (DawidSkeneEstimator, "gibbs", "n_iter", 5, "'em'"),
    (DawidSkeneEstimator, "svi", "num_warmup", 10, "'gibbs' or 'nuts'"),
    (DawidSkeneEstimator, "nuts", "num_steps", 10, "'svi'"),
    (DawidSkeneEstimator, "gibbs", "em_floor", 0.0, "'em'"),
    (SequentialDawidSkeneEstimator, "em", "num_chains", 4, "'gibbs'"),
    (SequentialDawidSkeneEstimator, "gibbs", "tol", 1e-3, "'em'"),
    (NetworkedDawidSkeneEstimator, "em", "num_warmup", 7, "'gibbs'"),
    (NetworkedDawidSkeneEstimator, "gibbs", "n_iter", 3, "'em'"),
]


@pytest.mark.parametrize("make, method, name, value, users", IGNORED)
def test_a_knob_the_method_ignores_is_refused_at_fit_time(make, method, name, value, users):
    est = make(method=method, **{name: value})  # the constructor accepts it: clone works
    assert clone(est).get_params()[name] == value
    df = frame()
    data = (sequence_frame(df),) if make is SequentialDawidSkeneEstimator else (df,)
    if make is NetworkedDawidSkeneEstimator:
        data += (pd.DataFrame({"source": ["a"], "target": ["b"]}),)
    with pytest.raises(ValueError, match=rf"{name}={value!r} is not used by method="
                                         rf"'{method}', only by method={users}: leave {name} at "
                                         r"its default \(.+\) or choose a method that uses it"):
        est.fit(*data)


def test_knobs_left_at_their_defaults_or_set_for_the_method_are_accepted():
    df = frame()
    DawidSkeneEstimator(method="em", n_iter=5, tol=1e-3).fit(df)
    # a value equal to the default, given explicitly, is the default
    DawidSkeneEstimator(method="em", num_chains=2, lr=0.05).fit(df)


def test_classes_that_need_terabytes_are_refused_before_allocating():
    df = frame(labels=[0, 1, 0, 0, 1, 1, 0, 1, 0])
    start = time.perf_counter()
    with pytest.raises(ValueError, match=r"this fit would need about [\d.]+ TB of memory "
                                         r"\(.*3 workers x 1000000 x 1000000 confusion entries: "
                                         r"[\d.]+ TB\), more than the .* of this machine; the "
                                         r"1000000 classes come from classes="):
        DawidSkeneEstimator(classes=range(10**6)).fit(df)
    assert time.perf_counter() - start < 5
    with pytest.raises(ValueError, match=r"2 tasks x 10000000000000 classes of probabilities"):
        MajorityVote(classes=range(10**13)).fit(df.iloc[:6])


def test_kept_draws_count_towards_the_memory_a_fit_needs():
    with pytest.raises(ValueError, match=r"10000000000000 kept draws of those confusions "
                                         r"\(num_chains x num_samples\)"):
        DawidSkeneEstimator(method="gibbs", num_chains=1, num_samples=10**13).fit(frame())


def test_check_memory_compares_the_parts_with_the_machine(monkeypatch):
    import pyromodels.checks as checks

    monkeypatch.setattr(checks, "memory_size", lambda device=None: 1000)
    check_memory([("a", 600), ("b", 400)])  # exactly the memory: fine
    with pytest.raises(ValueError, match=r"about 1.0 kB of memory \(a: 600 B; b: 401 B\), "
                                         r"more than the 1.0 kB of this machine; use less"):
        check_memory([("a", 600), ("b", 401)], hint="use less")
    assert format_bytes(4e12) == "4.0 TB" and format_bytes(999) == "999 B"


def networked_case():
    return simulate_networked_annotations(20, WorkerPopulation(3, labels_per_item=2), 3,
                                          mean_degree=3, seed=0)


@pytest.mark.parametrize("method", ["em", "gibbs"])
def test_networked_init_labels_errors_name_init_labels(method):
    table, graph, truth = networked_case()
    model = NetworkedDawidSkene()
    options = {"num_samples": 2, "num_warmup": 1, "num_chains": 1} if method == "gibbs" else {}
    with pytest.raises(ValueError, match=r"^init_labels must have one entry per node \(20\), "
                                         r"got 2$"):
        model.fit((table, graph), method=method, init_labels=[0, 1], progress=False, **options)
    with pytest.raises(ValueError, match=r"^init_labels must lie in \[0, 2\] for 3 classes"):
        model.fit((table, graph), method=method, init_labels=[5] * 20, progress=False, **options)
    with pytest.raises(ValueError, match="give at most one of init_confusion and init_labels"):
        model.fit((table, graph), method=method, init_confusion=truth["confusion"],
                  init_labels=truth["z"], progress=False, **options)
    with pytest.raises(ValueError, match="init_prior is used only with init_confusion"):
        model.fit((table, graph), method=method, init_prior=truth["prior"], progress=False,
                  **options)


def test_label_sampler_errors_name_the_argument_passed():
    table, graph, _ = networked_case()
    model = NetworkedDawidSkene()
    data = model.prepare((table, graph))
    log_b = data.table.vote_counts().double().log_softmax(-1)
    coupling = data.coupling.symmetrized()
    with pytest.raises(ValueError, match=r"^init_labels must have one entry per node"):
        LabelPosterior().fit((log_b, coupling), init_labels=[0, 1], num_samples=2,
                             progress=False)
    with pytest.raises(ValueError, match=r"^labels must have one entry per node"):
        sample_labels(log_b, coupling, labels=[0, 1], num_samples=2)
