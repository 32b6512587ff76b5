import pytest
import torch

from pyromodels.mixture import GaussianMixtureModel


def two_blobs(n0=36, n1=24, seed=0, sep=3.0):
    g = torch.Generator().manual_seed(seed)
    x = torch.cat([torch.randn(n0, 2, generator=g) - sep, torch.randn(n1, 2, generator=g) + sep])
    truth = torch.cat([torch.zeros(n0, dtype=torch.long), torch.ones(n1, dtype=torch.long)])
    return x, truth


@pytest.fixture
def blobs():
    return two_blobs()


@pytest.fixture
def make_blobs():
    return two_blobs


@pytest.fixture
def mixture():
    return GaussianMixtureModel(2)
