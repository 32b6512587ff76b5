"""Minibatches of rows for the natural-gradient engine: the data's shape checked once, rows
shuffled per epoch from the run's generator, and the same rows taken from every tensor."""

from __future__ import annotations

import torch

__all__ = ["data_tensors", "check_data", "num_rows", "take_rows", "batch_indices"]


def data_tensors(data) -> tuple:
    """The tensors of ``data``: itself, or the values of a dict, or the items of a tuple or
    list."""
    if isinstance(data, dict):
        return tuple(data.values())
    return tuple(data) if isinstance(data, list | tuple) else (data,)


def check_data(data) -> None:
    """Raise unless ``data`` is a tensor, or a non-empty dict, tuple or list of tensors, each
    with at least one axis and the same number of rows (at least one).

    Raises:
        TypeError: an entry that is not a tensor (the message names it).
        ValueError: an entry without a first axis, no rows, or different numbers of rows.
    """
    if isinstance(data, dict):
        named = [(f"data[{k!r}]", v) for k, v in data.items()]
    elif isinstance(data, list | tuple):
        named = [(f"data[{i}]", v) for i, v in enumerate(data)]
    else:
        named = [("data", data)]
    if not named:
        raise ValueError("data must hold at least one tensor, got an empty container")
    rows = set()
    for name, value in named:
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a tensor whose first axis indexes the items, got "
                            f"{type(value).__name__}")
        if value.dim() < 1 or value.shape[0] < 1:
            raise ValueError(f"{name} must have a first axis with at least one item, got shape "
                             f"{tuple(value.shape)}")
        rows.add(value.shape[0])
    if len(rows) > 1:
        shapes = ", ".join(f"{name} {tuple(v.shape)}" for name, v in named)
        raise ValueError(f"the tensors of data must share their first axis (the items), got {shapes}")


def num_rows(data) -> int:
    """Number of items (rows) of checked ``data``."""
    return int(data_tensors(data)[0].shape[0])


def take_rows(data, indices: torch.Tensor):
    """The rows ``indices`` of every tensor of ``data``, in ``data``'s structure."""
    if isinstance(data, dict):
        return {k: v[indices.to(v.device)] for k, v in data.items()}
    if isinstance(data, list | tuple):
        return type(data)(v[indices.to(v.device)] for v in data)
    return data[indices.to(data.device)]


def batch_indices(n: int, batch_size: int | None, generator: torch.Generator, device):
    """The minibatches of one epoch: ``None`` gives all rows in order as one batch; otherwise
    a permutation drawn from ``generator`` cut into batches of ``batch_size`` (the last may be
    smaller)."""
    if batch_size is None:
        return [torch.arange(n, device=device)]
    perm = torch.randperm(n, generator=generator, device=generator.device).to(device)
    return list(perm.split(batch_size))
