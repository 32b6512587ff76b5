"""The record a demo or a paper reproduction hands to the report writer, and its checks.

A :class:`DemoResult` holds a summary paragraph, nested metrics (for example
``{engine: {metric: value}}``), pandas tables, matplotlib figures and ``arviz.InferenceData``
per engine; :func:`~pyromodels.report.write_report` turns a list of them into a report
directory. Names become directory and file names there, so they must pass
:func:`~pyromodels.checks.check_name`.
"""

from __future__ import annotations

import hashlib
import json
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..checks import check_name

__all__ = ["DemoResult", "check_metrics", "metrics_digest"]


def _check_str_dict(
    value, name: str, kind: type | None = None, kind_name: str = "", file_safe: bool = False
) -> None:
    """Raise unless ``value`` is a dict with non-empty string keys and ``kind`` values.

    With ``file_safe`` the keys must also pass :func:`check_name` (they become file names).
    """
    if not isinstance(value, dict):
        raise TypeError(f"{name} must be a dict, got {type(value).__name__}")
    for key, item in value.items():
        if file_safe:
            check_name(key, f"{name} key")
        elif not isinstance(key, str):
            raise TypeError(f"{name} keys must be strings, got {type(key).__name__} {key!r}")
        elif not key.strip():
            raise ValueError(f"{name} keys must be non-empty strings, got {key!r}")
        if kind is not None and not isinstance(item, kind):
            raise TypeError(f"{name}[{key!r}] must be {kind_name}, got {type(item).__name__}")


def check_metrics(metrics, name: str = "metrics"):
    """Return a JSON-ready copy of nested ``metrics``, or raise naming the offending entry.

    Accepted: dicts with string keys, lists or tuples (written as lists), strings, booleans,
    ``None`` and real numbers, numpy scalars included (written as Python ``int``/``float``;
    non-finite floats become ``None``, so ``metrics.json`` is strict JSON with ``null`` where
    a number is undefined).
    Arrays and tensors are rejected: convert them with ``float(x)`` or ``x.tolist()`` first.

    Example:
        >>> check_metrics({"nuts": {"ess": 812.5, "divergences": 0}})
        {'nuts': {'ess': 812.5, 'divergences': 0}}
    """
    if isinstance(metrics, Mapping):
        out = {}
        for key, value in metrics.items():
            if not isinstance(key, str):
                raise TypeError(f"{name} keys must be strings, got {type(key).__name__} {key!r}")
            out[key] = check_metrics(value, f"{name}[{key!r}]")
        return out
    if isinstance(metrics, list | tuple):
        return [check_metrics(v, f"{name}[{i}]") for i, v in enumerate(metrics)]
    if metrics is None or isinstance(metrics, str | bool):
        return metrics
    if isinstance(metrics, np.bool_):
        return bool(metrics)
    if isinstance(metrics, numbers.Integral):
        return int(metrics)
    if isinstance(metrics, numbers.Real):
        value = float(metrics)
        return value if math.isfinite(value) else None
    raise TypeError(
        f"{name} must be a number, string, bool, None, list or dict, got "
        f"{type(metrics).__name__}; convert arrays and tensors with float(x) or x.tolist()"
    )


def metrics_digest(metrics: dict) -> str:
    """The SHA-256 (hex) of ``metrics`` (as :func:`check_metrics` returns them) written as
    canonical JSON, sorted keys and no spaces: the same for the metrics a report writes and
    for those read back from its ``metrics.json``, so an edited value shows.

    Example:
        >>> metrics_digest({"a": 1, "b": [0.5]}) == metrics_digest({"b": [0.5], "a": 1})
        True
    """
    text = json.dumps(metrics, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class DemoResult:
    """What a demo or a paper reproduction hands to the report writer.

    Attributes:
        name: the result's name, used as its section anchor and directory in the report.
        summary: a plain-text paragraph (blank lines separate paragraphs).
        metrics: nested dict of JSON-ready values, for example ``{engine: {metric: value}}``.
        tables: name -> ``pandas.DataFrame``.
        figures: name -> ``matplotlib.figure.Figure`` (the report closes them once drawn).
        inference_data: engine -> ``arviz.InferenceData``, written as ``<name>/<engine>.nc``.

    Example:
        >>> DemoResult(name="toy", summary="A toy.", metrics={"svi": {"elbo": -12.5}})
        DemoResult(name='toy', metrics=['svi'], tables=[], figures=[], inference_data=[])
    """

    name: str
    summary: str = ""
    metrics: dict[str, Any] = field(default_factory=dict)
    tables: dict[str, Any] = field(default_factory=dict)
    figures: dict[str, Any] = field(default_factory=dict)
    inference_data: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        check_name(self.name, "name")
        if not isinstance(self.summary, str):
            raise TypeError(f"summary must be a string, got {type(self.summary).__name__}")
        if not isinstance(self.metrics, dict):
            raise TypeError(f"metrics must be a dict, got {type(self.metrics).__name__}")
        check_metrics(self.metrics)
        # Type checks import the heavy libraries only when there is something to check.
        if self.tables:
            import pandas as pd

            _check_str_dict(self.tables, "tables", pd.DataFrame, "a pandas DataFrame")
        else:
            _check_str_dict(self.tables, "tables")
        if self.figures:
            from matplotlib.figure import Figure

            _check_str_dict(self.figures, "figures", Figure, "a matplotlib Figure")
        else:
            _check_str_dict(self.figures, "figures")
        if self.inference_data:
            from arviz import InferenceData

            _check_str_dict(
                self.inference_data, "inference_data", InferenceData, "an InferenceData", True
            )
        else:
            _check_str_dict(self.inference_data, "inference_data", file_safe=True)

    def __repr__(self) -> str:
        return (
            f"DemoResult(name={self.name!r}, metrics={list(self.metrics)}, "
            f"tables={list(self.tables)}, figures={list(self.figures)}, "
            f"inference_data={list(self.inference_data)})"
        )
