"""Moment matching: bad input is refused with a message naming the argument."""

import math

import pytest
import torch

from pyromodels.crowd.moments.fit import MomentEstimate, fit_moments, moment_labels, solve_moments
from pyromodels.crowd.moments.sequential import (
    LagMoments,
    fit_sequential_moments,
    lag_moments,
    solve_joint,
    transition_from_joint,
)
from pyromodels.crowd.moments.simplex import project_simplex, simplex_least_squares
from pyromodels.crowd.moments.statistics import population_moments, sample_moments
from pyromodels.data import AnnotationTable, Sequences
from pyromodels.data.simulate_crowd import simulate_annotations, simulate_sequential_annotations


@pytest.fixture
def table():
    return simulate_annotations(30, 4, 3, seed=0)[0]


def test_one_class_is_refused():
    one = AnnotationTable.from_arrays([0, 0, 0, 1], [0, 1, 2, 0], [0, 0, 0, 0], num_classes=1)
    with pytest.raises(ValueError, match="at least 2 classes, the table has 1"):
        fit_moments(one)
    with pytest.raises(ValueError, match="at least 2 classes"):
        population_moments([1.0], torch.ones(3, 1, 1))


def test_fewer_than_three_workers_are_refused():
    two = simulate_annotations(20, 2, 3, seed=1)[0]
    with pytest.raises(ValueError, match="third-order moments need at least 3 workers, got 2"):
        sample_moments(two)
    with pytest.raises(ValueError, match="third-order moments need at least 3 workers, got 2"):
        fit_moments(two)
    with pytest.raises(ValueError, match="at least 3 workers"):
        solve_moments(population_moments([0.5, 0.5], torch.eye(2).expand(2, 2, 2)))


def test_no_item_shared_by_three_workers_is_refused():
    # every item is labelled by exactly two workers: no third-order moment exists
    sparse = AnnotationTable.from_arrays([0, 0, 1, 1, 2, 2], [0, 1, 1, 2, 2, 0], [0, 1, 1, 0, 0, 1])
    with pytest.raises(ValueError, match="no item was labelled by three of the selected workers"):
        fit_moments(sparse)


def test_worker_selection_arguments(table):
    with pytest.raises(ValueError, match="at most one of workers and max_workers"):
        sample_moments(table, workers=[0, 1, 2], max_workers=3)
    with pytest.raises(ValueError, match="workers must not repeat"):
        sample_moments(table, workers=[0, 1, 1, 2])
    with pytest.raises(ValueError, match=r"workers must lie in \[0, 3\]"):
        sample_moments(table, workers=[0, 1, 7])
    with pytest.raises(ValueError, match="max_workers must be an integer >= 1"):
        fit_moments(table, max_workers=0)
    with pytest.raises(ValueError, match="num_classes must equal the table's number of classes 3"):
        fit_moments(table, num_classes=4)


def test_table_type_and_repeats(table):
    with pytest.raises(TypeError, match="table must be an AnnotationTable, got DataFrame"):
        fit_moments(table.to_frame())
    repeated = AnnotationTable.from_arrays([0, 0, 0, 0], [0, 1, 2, 0], [0, 1, 1, 0],
                                           allow_repeats=True)
    with pytest.raises(ValueError, match="at most one label per \\(item, worker\\)"):
        sample_moments(repeated)


def test_fit_options(table):
    with pytest.raises(ValueError, match="n_init must be an integer >= 1"):
        fit_moments(table, n_init=0)
    with pytest.raises(ValueError, match="tol must be > 0"):
        fit_moments(table, tol=0.0)
    with pytest.raises(ValueError, match="min_overlap must be an integer >= 1"):
        fit_moments(table, min_overlap=0)
    with pytest.raises(TypeError, match="moments must be a Moments object"):
        solve_moments({"first": 1})
    mom = sample_moments(table)
    with pytest.raises(ValueError, match=r"init\[0\] must have shape \(3,\), got \(2,\)"):
        solve_moments(mom, init=(torch.ones(2) / 2, torch.eye(3).expand(4, 3, 3)))
    with pytest.raises(ValueError, match=r"init\[1\] must have shape \(4, 3, 3\), got \(5, 3, 3\)"):
        solve_moments(mom, init=(torch.ones(3) / 3, torch.eye(3).expand(5, 3, 3)))


def test_nan_is_refused(table):
    with pytest.raises(ValueError, match="prior must be finite"):
        population_moments([math.nan, 0.5, 0.5], torch.eye(3).expand(4, 3, 3))
    bad = torch.eye(3).expand(4, 3, 3).clone()
    bad[1, 1, 1] = math.nan
    with pytest.raises(ValueError, match="confusion must be finite"):
        population_moments([0.2, 0.3, 0.5], bad)
    with pytest.raises(ValueError, match="v must be finite"):
        project_simplex([0.1, math.nan])
    seqs = Sequences(table, [10, 20])
    est = MomentEstimate(torch.ones(3) / 3, bad, 0.0, (), torch.arange(4))
    with pytest.raises(ValueError, match="moment_estimate.confusion must be finite"):
        fit_sequential_moments(seqs, est)
    with pytest.raises(ValueError, match="joint must be finite"):
        transition_from_joint([[math.nan, 0.5], [0.25, 0.25]])


def test_confusion_and_estimate_shapes(table):
    with pytest.raises(ValueError, match=r"confusion must have shape \(M, 3, 3\)"):
        population_moments([0.2, 0.3, 0.5], torch.ones(4, 3, 2) / 2)
    with pytest.raises(ValueError, match=r"confusion must have rows summing to 1 \(last "
                                         r"axis\); row confusion\[0, 0\] sums to 3"):
        population_moments([0.2, 0.3, 0.5], torch.ones(4, 3, 3))
    est = MomentEstimate(torch.ones(3) / 3, torch.eye(3).expand(5, 3, 3), 0.0, (), torch.arange(5))
    with pytest.raises(ValueError, match=r"estimate.confusion must have shape \(4, 3, 3\)"):
        moment_labels(table, est)
    with pytest.raises(TypeError, match="estimate must be a MomentEstimate, got dict"):
        moment_labels(table, {"prior": 1})


def test_sequences_arguments(table):
    with pytest.raises(ValueError, match="lengths must sum to the data length 30, got sum 25"):
        Sequences(table, [10, 15])
    with pytest.raises(TypeError, match="sequences must be a Sequences object whose data is an "
                                        "AnnotationTable, got AnnotationTable"):
        fit_sequential_moments(table)
    with pytest.raises(TypeError, match="sequences must be a Sequences object"):
        lag_moments(Sequences(torch.zeros(5), [5]))
    seqs, truth = simulate_sequential_annotations([6] * 4, 4, 3, seed=2)
    est = MomentEstimate(torch.ones(3) / 3, truth["confusion"], 0.0, (), torch.arange(4))
    with pytest.raises(ValueError, match="pairs must be one of"):
        fit_sequential_moments(seqs, est, pairs="both")
    with pytest.raises(TypeError, match="moment_estimate must be a MomentEstimate or None"):
        fit_sequential_moments(seqs, truth["confusion"])
    singles = Sequences(table, [1] * 30)  # no two consecutive items in any sequence
    est4 = MomentEstimate(torch.ones(3) / 3, torch.eye(3).expand(4, 3, 3), 0.0, (), torch.arange(4))
    with pytest.raises(ValueError, match="no pair of workers labelled two consecutive items"):
        fit_sequential_moments(singles, est4)


def test_joint_programme_arguments():
    lag = LagMoments(torch.arange(3), torch.full((3, 3, 2, 2), 0.25))
    with pytest.raises(ValueError, match=r"confusion must have shape \(3, 2, 2\)"):
        solve_joint(lag, torch.eye(2).expand(4, 2, 2))
    with pytest.raises(TypeError, match="lag must be LagMoments"):
        solve_joint(lag.second, torch.eye(2).expand(3, 2, 2))
    with pytest.raises(ValueError, match=r"joint must have entries summing to 1 in "
                                         r"total, got sum 2 \(off by 1"):
        transition_from_joint([[0.5, 0.5], [0.5, 0.5]])
    with pytest.raises(ValueError, match=r"joint must be a square \(K, K\) matrix"):
        transition_from_joint([[0.5, 0.5]])
    with pytest.raises(ValueError, match="tol must be > 0"):
        simplex_least_squares(torch.eye(1), torch.eye(2), torch.ones(1, 2), torch.ones(1, 2) / 2,
                              tol=-1.0)


def test_float32_input_is_accepted_within_its_rounding(table):
    conf32 = simulate_annotations(30, 4, 3, seed=0)[1]["confusion"].to(torch.float32)
    conf32[0, 0] = torch.tensor([0.1, 0.2, 0.7])  # sums to 1 only up to float32 rounding
    pop = population_moments(torch.tensor([0.1, 0.2, 0.7]), conf32)
    assert pop.first.dtype == torch.float64
    bad = conf32.clone()
    bad[0, 0, 0] += 1e-4  # far beyond float32 rounding
    with pytest.raises(ValueError, match=r"confusion must have rows summing to 1 \(last "
                                         r"axis\); row confusion\[0, 0\] sums to 1\.0000999"):
        population_moments(torch.tensor([0.1, 0.2, 0.7]), bad)
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float32)
    try:  # a float32 session: vote fractions and starts are computed in float32
        est = fit_moments(table, n_init=1, tol=1e-6)
    finally:
        torch.set_default_dtype(old)
    assert est.confusion.dtype == torch.float64
    torch.testing.assert_close(est.confusion.sum(-1), torch.ones(4, 3, dtype=torch.float64))
