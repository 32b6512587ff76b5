"""What the tutorials share: sizes that shrink in smoke mode, showing a figure once, and the
session's display settings.

A tutorial starts with::

    SMOKE_TEST = os.environ.get("SMOKE_TEST") == "1"
    size = sizes(SMOKE_TEST)  # size(full, smoke): full normally, smoke in smoke mode
    start_session()

and ends each figure with ``show(fig)``. Nothing here is needed to use the library.
"""

from __future__ import annotations

import io
from collections.abc import Callable
from typing import TypeVar

import matplotlib.pyplot as plt
import pandas as pd
import pyro
import torch

from . import __version__

__all__ = ["sizes", "show", "start_session"]

T = TypeVar("T")


def sizes(smoke_test: bool) -> Callable[[T, T], T]:
    """A function ``size(full, smoke)`` that returns ``smoke`` when ``smoke_test`` is true and
    ``full`` otherwise: the one switch between a tutorial's real and quick runs.

    Args:
        smoke_test: whether this is a quick (smoke) run.

    Returns:
        ``size(full, smoke)``.

    Example:
        >>> size = sizes(True)
        >>> size(2000, 20)
        20
        >>> sizes(False)(2000, 20)
        2000
    """
    if not isinstance(smoke_test, bool):
        raise TypeError(f"smoke_test must be a bool, got {type(smoke_test).__name__}")

    def size(full: T, smoke: T) -> T:
        return smoke if smoke_test else full

    return size


def show(fig) -> None:
    """Display ``fig`` once, then close it.

    In a notebook the figure appears in the cell's output; in a script (a non-interactive
    backend such as Agg) nothing is drawn. A figure that pyplot does not manage (one made as
    ``matplotlib.figure.Figure()`` directly, which ``plt.show()`` never sees) is displayed as a
    PNG when running under IPython.

    Args:
        fig: a ``matplotlib.figure.Figure``.

    Example:
        >>> fig, ax = plt.subplots()
        >>> show(fig)
        >>> plt.fignum_exists(fig.number)
        False
    """
    from matplotlib.figure import Figure

    if not isinstance(fig, Figure):
        raise TypeError(f"fig must be a matplotlib Figure, got {type(fig).__name__}")
    if fig.canvas.manager is None:
        shell = _ipython_shell()
        if shell is not None:
            from IPython.display import Image, display

            png = io.BytesIO()
            fig.savefig(png, format="png", bbox_inches="tight")
            display(Image(png.getvalue()))
    plt.show()
    plt.close(fig)


def start_session(max_columns: int | None = 12) -> None:
    """Set pandas' display width (120 characters) and column limit for readable tables, and
    print one line with the versions of pyromodels, Pyro and torch that the run used.

    Args:
        max_columns: how many columns pandas prints before eliding (``None``: pandas' default).

    Example:
        >>> start_session()  # doctest: +ELLIPSIS
        pyromodels ..., pyro ..., torch ...
    """
    if max_columns is not None and (isinstance(max_columns, bool) or not isinstance(max_columns, int)
                                    or max_columns < 1):
        raise ValueError(f"max_columns must be a positive int or None, got {max_columns!r}")
    pd.set_option("display.width", 120)
    if max_columns is not None:
        pd.set_option("display.max_columns", max_columns)
    print(f"pyromodels {__version__}, pyro {pyro.__version__}, torch {torch.__version__}")


def _ipython_shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()
