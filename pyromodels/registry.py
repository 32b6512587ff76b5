"""The model registry: every model module adds a :class:`ModelEntry` at import time.

The command line (:mod:`pyromodels.cli`) and the report writer (:mod:`pyromodels.report`) read
the registry; they know nothing of the models themselves. A model module registers itself::

    from pyromodels.registry import ModelEntry, register

    register(ModelEntry(
        name="gaussian-mixture",
        title="Finite Gaussian mixture",
        paper="reference",
        engines=("em", "gibbs", "svi", "nuts"),
        factory=GaussianMixture,
        demo=demo,
    ))

A demo returns a :class:`DemoResult`: a summary paragraph, nested metrics (for example
``{engine: {metric: value}}``), pandas tables, matplotlib figures and ``arviz.InferenceData``
per engine. :func:`load_builtin` imports :mod:`pyromodels.models_index`, which imports every
built-in model module so that each registers.
"""

from __future__ import annotations

import importlib
import numbers
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = [
    "DemoResult",
    "ModelEntry",
    "UnknownModelError",
    "entries",
    "get",
    "load_builtin",
    "register",
    "unregister",
    "check_metrics",
    "check_name",
]

#: problem sizes a reproduction can run at
SCALES = ("small", "medium", "paper")

BUILTIN_INDEX = "pyromodels.models_index"

# Names become directory and file names in reports, so they are restricted to a portable set.
_NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")

_REGISTRY: dict[str, ModelEntry] = {}


class UnknownModelError(KeyError, ValueError):
    """A model name that is not in the registry; the message lists the registered names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def check_name(value, name: str) -> str:
    """Raise unless ``value`` is a name usable as a file name: letters, digits, ``.``, ``_``, ``-``.

    Example:
        >>> check_name("gaussian-mixture", "name")
        'gaussian-mixture'
    """
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__} {value!r}")
    if not _NAME_PATTERN.fullmatch(value):
        raise ValueError(
            f"{name} must start with a letter or digit and hold only letters, digits, '.', '_' "
            f"and '-', got {value!r}"
        )
    return value


def _check_optional_callable(value, name: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")


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
    non-finite floats are written as JSON ``NaN``/``Infinity``, which Python's ``json`` reads).
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
        return float(metrics)
    raise TypeError(
        f"{name} must be a number, string, bool, None, list or dict, got "
        f"{type(metrics).__name__}; convert arrays and tensors with float(x) or x.tolist()"
    )


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


@dataclass(frozen=True)
class ModelEntry:
    """One registered model.

    Attributes:
        name: command-line name, for example ``"gaussian-mixture"``.
        title: a human title, for example ``"Finite Gaussian mixture"``.
        paper: a short citation, or ``"reference"`` for textbook models.
        engines: the fit methods the model supports, for example ``("em", "svi")``.
        factory: ``factory()`` returns a model object with ``fit(data, method=..., ...)``.
        demo: ``demo(*, smoke, progress, seed) -> DemoResult``, or ``None``.
        reproduce: ``reproduce(*, scale, progress, seed) -> DemoResult`` with ``scale`` one of
            ``"small"``, ``"medium"``, ``"paper"``, or ``None``.
        loader: ``loader(path)`` returns the data ``fit`` takes (``path`` ``None`` means the
            model's default data set), or ``None`` when the model has no data loader.
        scales: the scales ``reproduce`` accepts (a subset of ``SCALES``).
    """

    name: str
    title: str
    paper: str
    engines: tuple[str, ...]
    factory: Callable[[], Any]
    demo: Callable[..., DemoResult] | None = None
    reproduce: Callable[..., DemoResult] | None = None
    loader: Callable[[str | None], Any] | None = None
    scales: tuple[str, ...] = ("small", "medium", "paper")

    def __post_init__(self):
        check_name(self.name, "name")
        for attr in ("title", "paper"):
            if not isinstance(getattr(self, attr), str):
                raise TypeError(
                    f"{attr} must be a string, got {type(getattr(self, attr)).__name__}"
                )
        if not isinstance(self.engines, tuple):
            raise TypeError(
                f"engines must be a tuple of strings, got {type(self.engines).__name__}"
            )
        if not self.engines:
            raise ValueError("engines must name at least one method, got ()")
        for i, engine in enumerate(self.engines):
            check_name(engine, f"engines[{i}]")
        if len(set(self.engines)) != len(self.engines):
            raise ValueError(f"engines must not repeat a method, got {self.engines!r}")
        if not callable(self.factory):
            raise TypeError(f"factory must be callable, got {type(self.factory).__name__}")
        for attr in ("demo", "reproduce", "loader"):
            _check_optional_callable(getattr(self, attr), attr)
        if not isinstance(self.scales, tuple) or not self.scales or not set(self.scales) <= set(SCALES):
            raise ValueError(f"scales must be a non-empty tuple drawn from {SCALES}, got {self.scales!r}")


def register(entry: ModelEntry) -> ModelEntry:
    """Add ``entry`` to the registry and return it; a name already taken raises ``ValueError``."""
    if not isinstance(entry, ModelEntry):
        raise TypeError(f"entry must be a ModelEntry, got {type(entry).__name__}")
    if entry.name in _REGISTRY:
        raise ValueError(f"a model named {entry.name!r} is already registered")
    _REGISTRY[entry.name] = entry
    return entry


def unregister(name: str) -> ModelEntry:
    """Remove and return the entry ``name``; an unknown name raises :class:`UnknownModelError`."""
    entry = get(name)
    del _REGISTRY[entry.name]
    return entry


def get(name: str) -> ModelEntry:
    """The entry ``name``; an unknown name raises :class:`UnknownModelError` listing known ones."""
    try:
        return _REGISTRY[name]
    except (KeyError, TypeError):
        known = ", ".join(sorted(_REGISTRY)) or "none registered"
        raise UnknownModelError(f"unknown model {name!r}; known models: {known}") from None


def entries() -> tuple[ModelEntry, ...]:
    """Every registered entry, sorted by name."""
    return tuple(_REGISTRY[name] for name in sorted(_REGISTRY))


def load_builtin() -> None:
    """Import :mod:`pyromodels.models_index` so the built-in models register.

    An index that does not exist yet is not an error (no built-in models are then listed); an
    import error raised from inside the index or a model module propagates.
    """
    try:
        importlib.import_module(BUILTIN_INDEX)
    except ModuleNotFoundError as exc:
        if exc.name != BUILTIN_INDEX:
            raise
