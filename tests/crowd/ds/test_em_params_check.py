"""EM's parameter check: full on what a user passes, shapes only on its own M-step's output."""

import pytest
import torch

from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import WorkerPopulation, simulate_annotations


def _data(num_workers, seed=0):
    table, _ = simulate_annotations(30, WorkerPopulation(num_workers), 3, seed=seed)
    return DawidSkene().prepare(table)


def test_m_step_output_passes_through_and_user_dicts_are_checked():
    data = _data(4)
    made = em.majority_start(data)
    assert isinstance(made, em.MStepParams)
    assert em.check_params(data, made) is made  # no second pass over the values
    plain = dict(made)
    plain["confusion"] = plain["confusion"].clone()
    plain["confusion"][0, 0] = torch.tensor([0.5, 0.6, -0.1], dtype=data.dtype)
    with pytest.raises(ValueError, match=r"params\['confusion'\]"):
        em.check_params(data, plain)


def test_m_step_output_of_other_data_gets_the_full_check():
    """Parameters an M-step made for five workers must not reach the compiled pass of a table
    with four (it does not check bounds)."""
    other = em.majority_start(_data(5, seed=1))
    with pytest.raises(ValueError, match=r"params\['confusion'\].*shape"):
        em.check_params(_data(4), other)
    cast = em.MStepParams({k: v.float() for k, v in em.majority_start(_data(4)).items()})
    assert em.check_params(_data(4), cast)["confusion"].dtype == _data(4).dtype
