"""Progress bars and callbacks shared by the engines.

A bar asked for with ``enabled=True`` follows tqdm's ``disable=None`` rule: it draws only when
its stream is a terminal, so logs and redirected output get no ``\\r`` lines. Bars opened
inside another bar (an engine's bar under the command line's "demos" bar) take the next line
(``position``), so nested bars do not overwrite each other. In a notebook the widget bar of
``tqdm.auto`` is used only when ipywidgets is installed; without it the plain text bar is used
instead of tqdm's ``IProgress not found`` warning.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
import sys
from collections.abc import Callable, Iterable, Iterator

from ..checks import check_bool

__all__ = ["progress_bar", "bars_drawn", "tqdm_class", "check_callbacks", "run_callbacks"]

logger = logging.getLogger("pyromodels")

_open_bars = [0]  # how many bars are open now: the next one goes on the line below them


def tqdm_class() -> type:
    """The tqdm bar class to use: ``tqdm.auto``'s when ipywidgets can draw notebook bars,
    else the plain text bar (``tqdm.auto`` without ipywidgets warns in a notebook).

    Example:
        >>> from tqdm.std import tqdm
        >>> issubclass(tqdm_class(), tqdm)  # tqdm.auto's class, where used, is a tqdm too
        True
    """
    if importlib.util.find_spec("ipywidgets") is not None:
        from tqdm.auto import tqdm
    else:
        from tqdm.std import tqdm
    return tqdm


def bars_drawn(enabled: bool, stream=None) -> bool:
    """Whether a bar asked for with ``enabled`` draws: only on a terminal (tqdm's
    ``disable=None`` rule), for libraries' own bars (Pyro's ``MCMC(disable_progbar=...)``).

    Args:
        enabled: the caller's ``progress`` argument.
        stream: the bar's stream; ``sys.stderr`` by default.

    Example:
        >>> import io
        >>> bars_drawn(True, io.StringIO())
        False
    """
    enabled = check_bool(enabled, "progress")
    stream = sys.stderr if stream is None else stream
    isatty = getattr(stream, "isatty", None)
    return bool(enabled) and callable(isatty) and bool(isatty())


@contextlib.contextmanager
def progress_bar(total: int | None, desc: str, enabled: bool) -> Iterator:
    """A tqdm bar over ``total`` steps, used as a context manager.

    Args:
        total: the number of steps, or ``None`` for a counter without an end.
        desc: the bar's label.
        enabled: ``True`` draws the bar when its stream (stderr) is a terminal and stays
            silent otherwise (tqdm's ``disable=None``); ``False`` never draws it. Every
            engine's ``progress`` argument comes here.

    Yields:
        The bar (``update()``, ``set_postfix()``, ``reset()`` work whether it draws or not).

    Example:
        >>> with progress_bar(3, "steps", enabled=False) as bar:
        ...     bar.update()

    Raises:
        TypeError: ``enabled`` not a bool (``progress="no"`` would read as true).
    """
    enabled = check_bool(enabled, "progress")
    position = _open_bars[0]
    bar = tqdm_class()(total=total, desc=desc, disable=None if enabled else True, leave=False,
                       position=position, dynamic_ncols=True)
    _open_bars[0] += 1
    try:
        yield bar
    finally:
        _open_bars[0] -= 1
        bar.close()


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
