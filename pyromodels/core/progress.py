"""Progress bars and callbacks shared by the engines."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from tqdm.auto import tqdm

__all__ = ["progress_bar", "check_callbacks", "run_callbacks"]

logger = logging.getLogger("pyromodels")


def progress_bar(total: int, desc: str, enabled: bool):
    """A tqdm bar over ``range(total)``, or a silent one when ``enabled`` is false."""
    return tqdm(total=total, desc=desc, disable=not enabled, leave=False, dynamic_ncols=True)


def check_callbacks(callbacks: Iterable[Callable] | None) -> tuple[Callable, ...]:
    """Validate ``callbacks``: an iterable of callables ``f(step, info) -> bool | None``."""
    if callbacks is None:
        return ()
    if callable(callbacks):
        callbacks = (callbacks,)
    callbacks = tuple(callbacks)
    for i, cb in enumerate(callbacks):
        if not callable(cb):
            raise TypeError(f"callbacks[{i}] must be callable f(step, info), got {cb!r}")
    return callbacks


def run_callbacks(callbacks: tuple[Callable, ...], step: int, info: dict) -> bool:
    """Call each callback with ``(step, info)``; return ``True`` if any asks to stop."""
    stop = False
    for cb in callbacks:
        if cb(step, info):
            stop = True
    return stop
