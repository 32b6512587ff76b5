"""n_jobs on moment matching: the starts in loky workers give the serial result bit for bit."""

import pytest
import torch

from pyromodels.crowd.moments.fit import fit_moments, solve_moments
from pyromodels.crowd.moments.statistics import population_moments
from pyromodels.data import simulate_annotations
from pyromodels.data.simulate_crowd import random_confusions


def test_starts_in_workers_equal_the_serial_starts():
    table, _ = simulate_annotations(300, 5, 3, seed=2)
    serial = fit_moments(table, n_init=3, max_iter=4, seed=1)
    parallel = fit_moments(table, n_init=3, max_iter=4, seed=1, n_jobs=2)
    assert torch.equal(serial.prior, parallel.prior)
    assert torch.equal(serial.confusion, parallel.confusion)
    assert serial.history == parallel.history


def test_n_jobs_zero_is_a_value_error_naming_n_jobs():
    moments = population_moments(torch.tensor([0.4, 0.6]),
                                 random_confusions(4, 2, force_dominant=True, seed=0))
    with pytest.raises(ValueError, match="^n_jobs must be None"):
        solve_moments(moments, n_jobs=0)
