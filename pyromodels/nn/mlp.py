"""Small multilayer perceptrons with seeded initialisation.

Every network of :mod:`pyromodels.nn` is built here so that its initial weights come from a
``torch.Generator`` passed in (never from torch's global RNG). The default initialisation is
PyTorch's own for ``nn.Linear``: weights and biases uniform on ``(-b, b)`` with
``b = 1 / sqrt(fan_in)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from ..checks import check_in, check_int

__all__ = ["mlp", "linear", "init_linear_", "check_dims"]

_ACTIVATIONS = {"relu": nn.ReLU, "tanh": nn.Tanh, "elu": nn.ELU, "leaky_relu": nn.LeakyReLU}


def check_dims(dims, name: str, minimum_length: int = 0) -> tuple[int, ...]:
    """Return ``dims`` as a tuple of positive ints, or raise naming ``name``.

    Args:
        dims: a sequence of layer widths (a bare int counts as a one-element sequence).
        name: the argument's name, used in error messages.
        minimum_length: the fewest widths accepted.

    Example:
        >>> check_dims([500, 10], "dims")
        (500, 10)
    """
    if isinstance(dims, bool) or not isinstance(dims, Sequence | int):
        raise TypeError(f"{name} must be a sequence of positive integers, got {type(dims).__name__}")
    if isinstance(dims, int):
        dims = (dims,)
    out = tuple(check_int(d, f"{name}[{i}]", minimum=1) for i, d in enumerate(dims))
    if len(out) < minimum_length:
        raise ValueError(f"{name} must hold at least {minimum_length} width(s), got {out}")
    return out


def init_linear_(layer: nn.Linear, generator: torch.Generator | None, scale: float = 1.0) -> nn.Linear:
    """Fill ``layer``'s weight and bias in place, uniform on ``(-b, b)``, ``b = scale / sqrt(fan_in)``.

    ``scale=0`` zeroes the layer. The draws are made on the CPU from ``generator`` (a fresh
    unseeded one when ``None``) and copied to the layer's device and dtype, so one seed gives
    the same network on every device.

    Example:
        >>> layer = init_linear_(torch.nn.Linear(4, 2), torch.Generator().manual_seed(0))
        >>> bool(layer.weight.abs().max() <= 0.5)
        True
    """
    bound = float(scale) / math.sqrt(layer.in_features)
    gen = generator if generator is not None else torch.Generator()
    with torch.no_grad():
        for p in (layer.weight, layer.bias):
            if p is None:
                continue
            draw = torch.rand(p.shape, generator=gen, dtype=torch.float64) * (2 * bound) - bound
            p.copy_(draw.to(dtype=p.dtype, device=p.device))
    return layer


def linear(in_features: int, out_features: int, generator: torch.Generator | None = None,
           scale: float = 1.0, dtype: torch.dtype | None = None, device=None) -> nn.Linear:
    """An ``nn.Linear`` initialised by :func:`init_linear_` without touching the global RNG.

    Example:
        >>> linear(3, 2, torch.Generator().manual_seed(1)).weight.shape
        torch.Size([2, 3])
    """
    device = torch.device("cpu") if device is None else torch.device(device)
    layer = nn.utils.skip_init(nn.Linear, in_features, out_features, dtype=dtype, device=device)
    return init_linear_(layer, generator, scale)


def mlp(in_features: int, hidden: Sequence[int], out_features: int, activation: str = "relu",
        generator: torch.Generator | None = None, last_scale: float = 1.0,
        dtype: torch.dtype | None = None, device=None) -> nn.Sequential:
    """A multilayer perceptron ``in -> hidden[0] -> ... -> hidden[-1] -> out``.

    Each hidden layer is ``Linear`` then the activation; the output layer is linear.

    Args:
        in_features: input width.
        hidden: the hidden widths (may be empty: one linear layer).
        out_features: output width.
        activation: ``"relu"`` (default), ``"tanh"``, ``"elu"`` or ``"leaky_relu"``.
        generator: the source of the initial weights (see :func:`init_linear_`).
        last_scale: scale of the output layer's initial weights; ``0.0`` makes the network
            output zero for every input at initialisation.
        dtype, device: of the parameters (torch's defaults when ``None``).

    Returns:
        ``nn.Sequential`` mapping ``(..., in_features)`` to ``(..., out_features)``.

    Example:
        >>> net = mlp(3, (8, 8), 2, generator=torch.Generator().manual_seed(0))
        >>> net(torch.zeros(5, 3)).shape
        torch.Size([5, 2])
    """
    in_features = check_int(in_features, "in_features", minimum=1)
    out_features = check_int(out_features, "out_features", minimum=1)
    hidden = check_dims(hidden, "hidden")
    check_in(activation, "activation", tuple(_ACTIVATIONS))
    widths = (in_features,) + hidden + (out_features,)
    layers: list[nn.Module] = []
    for i, (a, b) in enumerate(zip(widths[:-1], widths[1:])):
        last = i == len(widths) - 2
        layers.append(linear(a, b, generator, last_scale if last else 1.0, dtype=dtype, device=device))
        if not last:
            layers.append(_ACTIVATIONS[activation]())
    return nn.Sequential(*layers)
