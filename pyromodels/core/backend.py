"""Choosing between a compiled CPU kernel (C or numba) and a portable implementation.

Several engines have two implementations of one computation: a vectorised one in torch (or
plain Python) that runs anywhere and can be differentiated, and a numba kernel that is faster
on the CPU. They take ``backend="auto" | "numba" | <portable>`` and call
:func:`resolve_backend` to pick; the tests check both against each other. A computation that
also has a C kernel built with the package (an extension module that a new process loads
without numba's start-up) passes its availability as ``have_c`` and accepts ``"c"`` too.
"""

from __future__ import annotations

import functools
import importlib.util
from collections.abc import Callable

import torch

from ..checks import check_in

__all__ = ["have_numba", "resolve_backend"]


@functools.cache
def have_numba() -> bool:
    """Whether the numba package is installed."""
    return importlib.util.find_spec("numba") is not None


def resolve_backend(backend: str, *tensors: torch.Tensor, portable: str = "torch",
                    have_c: Callable[[], bool] | None = None) -> str:
    """``"c"``, ``"numba"`` or ``portable`` for ``backend`` in ``("auto", "numba", portable)``
    (and ``"c"`` when ``have_c`` is given).

    ``"auto"`` gives a compiled backend when every tensor in ``tensors`` is on the CPU and none
    requires a gradient: ``"c"`` when ``have_c()`` says the C kernel was built, else numba when
    it is installed; ``portable`` otherwise. An explicit ``"c"`` or ``"numba"`` raises a
    ``ValueError`` when it cannot run.

    Example:
        >>> resolve_backend("torch", torch.zeros(2))
        'torch'
        >>> resolve_backend("auto", torch.zeros(2), have_c=lambda: True)
        'c'
    """
    compiled = {"numba": have_numba} if have_c is None else {"c": have_c, "numba": have_numba}
    check_in(backend, "backend", ("auto", *compiled, portable))
    cpu = all(t.device.type == "cpu" for t in tensors)
    if backend in compiled:
        if not cpu:
            raise ValueError(f"backend={backend!r} runs on the CPU only; move the tensors or use "
                             f"'{portable}'")
        if not compiled[backend]():
            need = "the numba package" if backend == "numba" else (
                "the C extension, which was not built when the package was installed (no C "
                "compiler?)")
            raise ValueError(f"backend={backend!r} needs {need}; use backend='{portable}'")
        return backend
    if backend == portable:
        return backend
    grad = any(t.requires_grad for t in tensors)
    if not cpu or grad:
        return portable
    return next((name for name, available in compiled.items() if available()), portable)
