"""Choosing between a compiled CPU kernel (numba) and a portable implementation.

Several engines have two implementations of one computation: a vectorised one in torch (or
plain Python) that runs anywhere and can be differentiated, and a numba kernel that is faster
on the CPU. They take ``backend="auto" | "numba" | <portable>`` and call
:func:`resolve_backend` to pick; the tests check both against each other.
"""

from __future__ import annotations

import functools
import importlib.util

import torch

from ..checks import check_in

__all__ = ["have_numba", "resolve_backend"]


@functools.cache
def have_numba() -> bool:
    """Whether the numba package is installed."""
    return importlib.util.find_spec("numba") is not None


def resolve_backend(backend: str, *tensors: torch.Tensor, portable: str = "torch") -> str:
    """``"numba"`` or ``portable`` for ``backend`` in ``("auto", "numba", portable)``.

    ``"auto"`` gives numba when it is installed, every tensor in ``tensors`` is on the CPU and
    none requires a gradient, and ``portable`` otherwise. An explicit ``"numba"`` raises a
    ``ValueError`` when it cannot run.

    Example:
        >>> resolve_backend("torch", torch.zeros(2))
        'torch'
    """
    check_in(backend, "backend", ("auto", "numba", portable))
    cpu = all(t.device.type == "cpu" for t in tensors)
    if backend == "numba":
        if not cpu:
            raise ValueError(f"backend='numba' runs on the CPU only; move the tensors or use "
                             f"'{portable}'")
        if not have_numba():
            raise ValueError(f"backend='numba' needs the numba package; use backend='{portable}'")
        return backend
    if backend == portable:
        return backend
    grad = any(t.requires_grad for t in tensors)
    return "numba" if cpu and not grad and have_numba() else portable
