"""Every test of the nn parts writes its cached weights under its own temporary directory."""

import pytest
import torch


@pytest.fixture(autouse=True)
def _private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("PYROMODELS_CACHE", str(tmp_path / "cache-root"))


@pytest.fixture
def manifold_data():
    """200 points in R^8 near a 2-D piecewise-linear manifold, float64."""
    gen = torch.Generator().manual_seed(0)
    z = torch.randn(200, 2, generator=gen, dtype=torch.float64)
    a = torch.randn(2, 8, generator=gen, dtype=torch.float64)
    return torch.relu(z @ a) + 0.05 * torch.randn(200, 8, generator=gen, dtype=torch.float64)
