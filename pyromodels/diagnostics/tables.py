"""Tables of statistics with one row per engine (ArviZ's posterior summary of one fit is
:func:`pyromodels.core.posterior.summary`)."""

from __future__ import annotations

import numbers

import pandas as pd
import torch

from ..core.posterior import check_posterior

__all__ = ["compare_engines"]


def _scalar(value, engine: str, stat: str) -> float:
    if isinstance(value, torch.Tensor):
        if value.numel() != 1:
            raise ValueError(
                f"stats[{stat!r}] must return a scalar, got a tensor of shape "
                f"{tuple(value.shape)} for engine {engine!r}"
            )
        value = value.item()
    if hasattr(value, "item") and getattr(value, "size", 1) == 1:
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ValueError(
            f"stats[{stat!r}] must return a real number, got {type(value).__name__} "
            f"for engine {engine!r}"
        )
    return float(value)


def compare_engines(posteriors: dict, stats: dict) -> pd.DataFrame:
    """A table of summary statistics with one row per engine (or per fit).

    Args:
        posteriors: ``{engine_label: Posterior}``, for example ``{"em": ..., "gibbs": ...}``.
        stats: ``{column_name: f}`` where ``f(posterior)`` returns a real number (a Python or
            NumPy scalar, or a one-element tensor).

    Returns:
        ``pandas.DataFrame`` indexed by engine label (index name ``"engine"``), one float
        column per statistic, in the order given.

    Example:
        >>> import torch
        >>> from pyromodels.core import Posterior
        >>> fits = {"nuts": Posterior(samples={"mu": torch.ones(2, 3)}, method="nuts"),
        ...         "svi": Posterior(samples={"mu": torch.zeros(1, 3)}, method="svi")}
        >>> compare_engines(fits, {"mean mu": lambda p: p.mean("mu")})["mean mu"].tolist()
        [1.0, 0.0]
    """
    if not isinstance(posteriors, dict) or not posteriors:
        raise TypeError("posteriors must be a non-empty dict {engine_label: Posterior}")
    if not isinstance(stats, dict) or not stats:
        raise TypeError("stats must be a non-empty dict {column_name: callable(posterior)}")
    for name, fn in stats.items():
        if not callable(fn):
            raise TypeError(f"stats[{name!r}] must be callable(posterior), got {type(fn).__name__}")
    rows = {}
    for engine, posterior in posteriors.items():
        check_posterior(posterior, f"posteriors[{engine!r}]")
        rows[engine] = {name: _scalar(fn(posterior), engine, name) for name, fn in stats.items()}
    table = pd.DataFrame.from_dict(rows, orient="index", columns=list(stats))
    table.index.name = "engine"
    return table
