"""Test-wide settings: float64, a fresh Pyro state per test, argument validation on."""

import matplotlib
import pyro
import pytest
import torch

matplotlib.use("Agg")
# Small tensors: one intra-op thread is faster and keeps two xdist workers from contending.
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _fresh_pyro_state():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    pyro.clear_param_store()
    pyro.enable_validation(True)
    yield
    torch.set_default_dtype(old)
    pyro.clear_param_store()
