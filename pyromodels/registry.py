"""The model registry: every model module adds a :class:`ModelEntry` at import time.

The command line (:mod:`pyromodels.cli`) reads the registry; it knows nothing of the models
themselves. A model module registers itself::

    from pyromodels.registry import ModelEntry, register

    register(ModelEntry(
        name="gaussian-mixture",
        title="Finite Gaussian mixture",
        paper="reference",
        engines=("em", "gibbs", "svi", "nuts"),
        factory=GaussianMixture,
        demo=demo,
    ))

A demo returns a :class:`~pyromodels.report.DemoResult`, the record the report writes.

An entry that ``pyromodels fit`` can fit has a ``loader`` and says, in ``data_format``, what
data it reads; ``options`` lists the model-specific command-line options it takes (each one of
:data:`LOADER_OPTIONS`, :data:`MODEL_OPTIONS`, :data:`REPORT_OPTIONS` or
:data:`FIT_ARGUMENTS`), which reach its ``loader``, its ``factory``, its ``describe`` hook or
the model's ``fit`` as keyword arguments when given.
:func:`load_builtin` imports :mod:`pyromodels.models_index`, which imports every built-in
model module so that each registers.

The record is imported for type annotations only: importing the report package at run time
would load ArviZ and matplotlib into every ``pyromodels`` command. Entry names and engine names
pass :func:`~pyromodels.checks.check_name`, as the record's names do (they become file names).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .checks import check_name

if TYPE_CHECKING:
    from .report.result import DemoResult

__all__ = [
    "SCALES",
    "LOADER_OPTIONS",
    "MODEL_OPTIONS",
    "REPORT_OPTIONS",
    "FIT_ARGUMENTS",
    "FitOutput",
    "ModelEntry",
    "UnknownModelError",
    "entries",
    "get",
    "load_builtin",
    "register",
    "unregister",
]

#: problem sizes a reproduction can run at
SCALES = ("small", "medium", "paper")

BUILTIN_INDEX = "pyromodels.models_index"

#: options of ``pyromodels fit`` passed to an entry's ``loader``: a named data set instead of
#: ``--data``, the column names of a crowd-label table, the sequence and position columns of
#: sequential labels, the edge list of networked labels
LOADER_OPTIONS = ("dataset", "task_col", "worker_col", "label_col", "sequence_col",
                  "position_col", "edges")
#: options passed to an entry's ``factory``
MODEL_OPTIONS = ("num_components",)
#: options passed to an entry's ``describe`` hook: gold labels to score a fit against
REPORT_OPTIONS = ("gold",)
#: options passed to the model's ``fit``, under the names given here: RBHMC's regularisation
#: constant and margin
FIT_ARGUMENTS = {"regularisation": "C", "margin": "eps0"}

_REGISTRY: dict[str, ModelEntry] = {}


class UnknownModelError(KeyError, ValueError):
    """A model name that is not in the registry; the message lists the registered names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _check_optional_callable(value, name: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")


@dataclass(frozen=True)
class FitOutput:
    """What an entry's ``describe`` hook makes of one fit.

    Attributes:
        result: the report entry of the fit (a :class:`~pyromodels.report.DemoResult`).
        files: ``{file name: pandas.DataFrame}`` written as CSV beside the report (for
            example ``labels.csv``).
    """

    result: DemoResult
    files: dict[str, Any]


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
        data_format: what ``loader`` reads, in a sentence or two (shown by ``fit --help``).
        options: the model-specific ``fit`` options the entry takes, as keyword names
            (``"task_col"`` for ``--task-col``), each from :data:`LOADER_OPTIONS`,
            :data:`MODEL_OPTIONS`, :data:`REPORT_OPTIONS` or :data:`FIT_ARGUMENTS`.
        describe: ``describe(posterior, data, *, name, **report_options) -> FitOutput``,
            the report of one fit, or ``None`` for the generic one
            (:func:`~pyromodels.report.result_from_posterior`).
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
    data_format: str = ""
    options: tuple[str, ...] = ()
    describe: Callable[..., FitOutput] | None = None

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
        for attr in ("demo", "reproduce", "loader", "describe"):
            _check_optional_callable(getattr(self, attr), attr)
        if not isinstance(self.data_format, str):
            raise TypeError(f"data_format must be a string, got {type(self.data_format).__name__}")
        known = LOADER_OPTIONS + MODEL_OPTIONS + REPORT_OPTIONS + tuple(FIT_ARGUMENTS)
        if not isinstance(self.options, tuple) or not set(self.options) <= set(known):
            raise ValueError(f"options must be a tuple drawn from {known}, got {self.options!r}")
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
