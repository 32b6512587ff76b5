"""The MLP builder: shapes, the initialisation bounds, a zero output layer, pinned errors."""

import math

import pytest
import torch

from pyromodels.nn import mlp


def test_layers_shapes_and_activations():
    net = mlp(3, (5, 7), 2, generator=torch.Generator().manual_seed(0))
    kinds = [type(m).__name__ for m in net]
    assert kinds == ["Linear", "ReLU", "Linear", "ReLU", "Linear"]
    assert [tuple(m.weight.shape) for m in net if hasattr(m, "weight")] == [(5, 3), (7, 5), (2, 7)]
    assert net(torch.zeros(4, 3)).shape == (4, 2)
    assert [type(m).__name__ for m in mlp(3, (), 2)] == ["Linear"]
    assert type(mlp(3, (4,), 2, activation="tanh")[1]).__name__ == "Tanh"


def test_initialisation_is_uniform_with_the_fan_in_bound_and_seeded():
    net = mlp(400, (300,), 1, generator=torch.Generator().manual_seed(0), last_scale=0.0)
    w = net[0].weight.detach()
    bound = 1 / math.sqrt(400)
    assert w.abs().max() <= bound
    # U(-b, b) has variance b^2 / 3; with 120,000 draws the sample variance has relative
    # standard error sqrt(0.8 / 120000) < 0.3%, so 2% is over six standard errors
    assert w.var().item() == pytest.approx(bound**2 / 3, rel=0.02)
    assert torch.all(net[2].weight == 0) and torch.all(net[2].bias == 0)
    again = mlp(400, (300,), 1, generator=torch.Generator().manual_seed(0))
    assert torch.equal(again[0].weight, net[0].weight)


def test_bad_arguments_are_reported():
    with pytest.raises(ValueError, match="in_features must be an integer >= 1, got 0"):
        mlp(0, (4,), 2)
    with pytest.raises(TypeError, match=r"hidden\[0\] must be an integer, got float"):
        mlp(3, (4.0,), 2)
    with pytest.raises(ValueError, match="activation must be one of"):
        mlp(3, (4,), 2, activation="gelu")
