"""The model registry: what the command line knows of each model, light and heavy.

A model is known to the command line in two steps.

* A :class:`ModelInfo` *declares* it: name, title, paper, engines, the natural engine, the
  data it reads, its command-line options and constructor arguments, and the module whose
  import registers the rest. Declarations are plain data; :func:`declare` adds one, and
  :func:`load_builtin` declares the built-in models (:mod:`pyromodels.models_index`) without
  importing torch, Pyro or any model family. ``pyromodels --help``, ``list``, ``fit MODEL
  --help`` and every usage error read declarations only (:func:`info`, :func:`infos`).
* A :class:`ModelEntry` (a :class:`ModelInfo` with the callables: factory, loader, demo,
  reproduction, report and fit hooks) *registers* it, at the import of its module::

      from pyromodels.registry import ModelInfo, register

      INFO = ModelInfo(name="gaussian-mixture", title="Finite Gaussian mixture",
                       paper="reference", engines=("em", "gibbs", "svi", "nuts"),
                       module=__name__)
      register(INFO.entry(factory=GaussianMixture, demo=demo))

  :func:`get` imports the declared module of a model that is not registered yet, so a fit
  loads one model family, and :func:`entries` loads them all (``demo``, ``reproduce all``).
  A registered entry must carry the declaration of its name unchanged: the declaration is
  the one source of what ``list`` and ``fit --help`` say.

A demo returns a :class:`~pyromodels.report.DemoResult`, the record the report writes.

An entry that ``pyromodels fit`` can fit has a ``loader`` and says, in ``data_format``, what
data it reads; ``options`` lists the model-specific command-line options it takes (each one of
:data:`LOADER_OPTIONS`, :data:`REPORT_OPTIONS` or :data:`FIT_ARGUMENTS`), which reach its
``loader``, its ``describe`` hook or the model's ``fit`` as keyword arguments when given;
``arguments`` declares the constructor arguments (priors, sizes) offered as options, which
reach its ``factory``.

The record is imported for type annotations only: importing the report package at run time
would load ArviZ and matplotlib into every ``pyromodels`` command. Entry names and engine names
pass :func:`~pyromodels.checks.check_name`, as the record's names do (they become file names).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from .checks import check_name

if TYPE_CHECKING:
    from .report.result import DemoResult

__all__ = [
    "SCALES",
    "ALL_SCALES",
    "ARGUMENT_KINDS",
    "LOADER_OPTIONS",
    "REPORT_OPTIONS",
    "FIT_ARGUMENTS",
    "Argument",
    "FitOutput",
    "ModelInfo",
    "ModelEntry",
    "UnknownModelError",
    "declare",
    "entries",
    "get",
    "info",
    "infos",
    "load_builtin",
    "register",
    "unregister",
]

#: problem sizes a reproduction can run at
SCALES = ("small", "medium", "paper")
#: every scale a reproduction may declare: ``SCALES`` and ``"smoke"`` (seconds, a quick check
#: that the whole pipeline runs; offered by the reproductions that declare it)
ALL_SCALES = ("smoke", *SCALES)

BUILTIN_INDEX = "pyromodels.models_index"

#: options of ``pyromodels fit`` passed to an entry's ``loader``: a named data set instead of
#: ``--data``, the column names of a crowd-label table, the sequence and position columns of
#: sequential labels, the edge list of networked labels, the pairwise links of a clustering
LOADER_OPTIONS = ("dataset", "task_col", "worker_col", "label_col", "sequence_col",
                  "position_col", "edges", "pairs")
#: options passed to an entry's ``describe`` hook: gold labels to score a fit against
REPORT_OPTIONS = ("gold",)
#: options passed to the model's ``fit``, under the names given here: RBHMC's regularisation
#: constant and margin; SCDC's epochs, minibatch size and the workers' initial coins; the
#: LTVAE's structure search and the epochs between its searches
FIT_ARGUMENTS = {"regularisation": "C", "margin": "eps0", "epochs": "num_epochs",
                 "batch_size": "batch_size", "coin_init": "coin_init",
                 "kl_warmup_epochs": "kl_warmup_epochs", "search": "search",
                 "search_every": "search_every"}
#: the values a declared constructor argument takes on the command line: ``positive`` a
#: finite number > 0, ``nonnegative`` a finite number >= 0, ``real`` a finite number,
#: ``count`` an integer >= 1, ``components`` an integer >= 2
ARGUMENT_KINDS = ("positive", "nonnegative", "real", "count", "components")

_DECLARED: dict[str, ModelInfo] = {}
_REGISTRY: dict[str, ModelEntry] = {}


class UnknownModelError(KeyError, ValueError):
    """A model name that is not in the registry; the message lists the registered names."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


def _check_optional_callable(value, name: str) -> None:
    if value is not None and not callable(value):
        raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")


def _check_string(value, name: str) -> None:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be a string, got {type(value).__name__}")


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
class Argument:
    """A constructor argument of a model offered as a ``pyromodels fit`` option.

    Attributes:
        dest: the keyword of the entry's ``factory`` (``"confusion_concentration"``; the
            option is ``--confusion-concentration``).
        kind: the values it takes, one of :data:`ARGUMENT_KINDS`.
        help: what it means, with its default, in a sentence (shown by ``fit MODEL --help``).
        metavar: the placeholder of its value in the help (default ``X`` for numbers, ``N``
            for integers).
    """

    dest: str
    kind: str
    help: str
    metavar: str = ""

    def __post_init__(self):
        if not isinstance(self.dest, str) or not self.dest.isidentifier():
            raise ValueError(f"dest must be a Python identifier, got {self.dest!r}")
        if self.kind not in ARGUMENT_KINDS:
            raise ValueError(f"kind must be one of {ARGUMENT_KINDS}, got {self.kind!r}")
        _check_string(self.help, "help")
        _check_string(self.metavar, "metavar")
        if not self.metavar:
            integer = self.kind in ("count", "components")
            object.__setattr__(self, "metavar", "N" if integer else "X")


@dataclass(frozen=True, kw_only=True)
class ModelInfo:
    """What the command line knows of a model without importing it: its declaration.

    Attributes:
        name: command-line name, for example ``"gaussian-mixture"``.
        title: a human title, for example ``"Finite Gaussian mixture"``.
        paper: a short citation, or ``"reference"`` for textbook models.
        engines: the fit methods the model supports, for example ``("em", "svi")``.
        default_method: the engine ``fit`` uses without ``--method``: the model's natural one
            (default: the first of ``engines``).
        module: the module whose import registers the model's :class:`ModelEntry` (``None``:
            the entry is registered by other means).
        scales: the scales ``reproduce`` accepts (a subset of ``ALL_SCALES``; default
            ``SCALES``).
        data_format: what the entry's ``loader`` reads, in a sentence or two (shown by
            ``fit --help``; empty for a model ``fit`` cannot load data for).
        options: the model-specific ``fit`` options the entry takes, as keyword names
            (``"task_col"`` for ``--task-col``), each from :data:`LOADER_OPTIONS`,
            :data:`REPORT_OPTIONS` or :data:`FIT_ARGUMENTS`.
        arguments: the constructor arguments (priors, sizes) offered as ``fit`` options,
            passed to the entry's ``factory`` as keywords when given.
        engine_options: the engine options (``"num_steps"`` for ``--num-steps``) its fit
            takes, when it takes only some of those of its engines (``None``: all of them;
            SCDC's SVI, for one, gives point estimates and takes no ``--num-samples``).
        reads_data: whether ``fit`` takes ``--data`` (``False``: the model's data come from
            its options alone, as the pairwise worker model's links from ``--pairs``).
    """

    name: str
    title: str
    paper: str
    engines: tuple[str, ...]
    default_method: str = ""
    module: str | None = None
    scales: tuple[str, ...] = SCALES
    data_format: str = ""
    options: tuple[str, ...] = ()
    arguments: tuple[Argument, ...] = ()
    engine_options: tuple[str, ...] | None = None
    reads_data: bool = True

    def __post_init__(self):
        check_name(self.name, "name")
        for attr in ("title", "paper", "data_format", "default_method"):
            _check_string(getattr(self, attr), attr)
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
        if not self.default_method:
            object.__setattr__(self, "default_method", self.engines[0])
        elif self.default_method not in self.engines:
            raise ValueError(f"default_method must be one of engines {self.engines!r}, "
                             f"got {self.default_method!r}")
        if self.module is not None:
            _check_string(self.module, "module")
        known = LOADER_OPTIONS + REPORT_OPTIONS + tuple(FIT_ARGUMENTS)
        if not isinstance(self.options, tuple) or not set(self.options) <= set(known):
            raise ValueError(f"options must be a tuple drawn from {known}, got {self.options!r}")
        if not isinstance(self.arguments, tuple) or not all(
                isinstance(a, Argument) for a in self.arguments):
            raise TypeError(f"arguments must be a tuple of Argument, got {self.arguments!r}")
        dests = [a.dest for a in self.arguments]
        clash = sorted(set(dests) & set(known) | {d for d in dests if dests.count(d) > 1})
        if clash:
            raise ValueError(f"arguments must not repeat each other or the options, got {clash}")
        if self.engine_options is not None and not (
                isinstance(self.engine_options, tuple)
                and all(isinstance(o, str) and o.isidentifier() for o in self.engine_options)):
            raise TypeError("engine_options must be None or a tuple of option names, got "
                            f"{self.engine_options!r}")
        if not isinstance(self.reads_data, bool):
            raise TypeError(f"reads_data must be a bool, got {self.reads_data!r}")
        if not isinstance(self.scales, tuple) or not self.scales or not set(self.scales) <= set(ALL_SCALES):
            raise ValueError(f"scales must be a non-empty tuple drawn from {ALL_SCALES}, got {self.scales!r}")

    def declaration(self) -> ModelInfo:
        """This declaration alone (of an entry: without its callables)."""
        return ModelInfo(**{f.name: getattr(self, f.name) for f in fields(ModelInfo)})

    def entry(self, **hooks) -> ModelEntry:
        """The :class:`ModelEntry` of this declaration with the callables ``hooks``
        (``factory=...``, ``loader=...`` and so on)."""
        return ModelEntry(**{f.name: getattr(self, f.name) for f in fields(ModelInfo)}, **hooks)


@dataclass(frozen=True, kw_only=True)
class ModelEntry(ModelInfo):
    """One registered model: its declaration (:class:`ModelInfo`) and its callables.

    Attributes:
        factory: ``factory(**arguments)`` returns a model object with ``fit(data,
            method=..., ...)``; it takes the declared ``arguments`` as keywords.
        demo: ``demo(*, smoke, progress, seed) -> DemoResult``, or ``None``.
        reproduce: ``reproduce(*, scale, progress, seed) -> DemoResult`` with ``scale`` one of
            ``"small"``, ``"medium"``, ``"paper"``, or ``None``.
        loader: ``loader(path)`` returns the data ``fit`` takes (``path`` ``None`` means the
            model's default data set), or ``None`` when the model has no data loader.
        describe: ``describe(posterior, data, *, name, **report_options) -> FitOutput``,
            the report of one fit, or ``None`` for the generic one
            (:func:`~pyromodels.report.result_from_posterior`).
        fit: ``fit(model, data, *, method, seed, progress, **options) -> Posterior``, how
            ``pyromodels fit`` runs the model with the command line's engine options, or
            ``None`` for ``model.fit(data, method=method, ...)``.
    """

    factory: Callable[..., Any]
    demo: Callable[..., DemoResult] | None = None
    reproduce: Callable[..., DemoResult] | None = None
    loader: Callable[[str | None], Any] | None = None
    describe: Callable[..., FitOutput] | None = None
    fit: Callable[..., Any] | None = None

    def __post_init__(self):
        super().__post_init__()
        if not callable(self.factory):
            raise TypeError(f"factory must be callable, got {type(self.factory).__name__}")
        for attr in ("demo", "reproduce", "loader", "describe", "fit"):
            _check_optional_callable(getattr(self, attr), attr)


def declare(declared: ModelInfo) -> ModelInfo:
    """Add the declaration ``declared`` and return it. Declaring the same one again does
    nothing; another declaration under a name already declared raises ``ValueError``."""
    if not isinstance(declared, ModelInfo) or isinstance(declared, ModelEntry):
        raise TypeError(f"declared must be a ModelInfo, got {type(declared).__name__}")
    known = _DECLARED.get(declared.name)
    if known is not None and known != declared:
        raise ValueError(f"a model named {declared.name!r} is already declared")
    _DECLARED[declared.name] = declared
    return declared


def register(entry: ModelEntry) -> ModelEntry:
    """Add ``entry`` to the registry and return it; a name already taken, or an entry that
    differs from the declaration of its name, raises ``ValueError``."""
    if not isinstance(entry, ModelEntry):
        raise TypeError(f"entry must be a ModelEntry, got {type(entry).__name__}")
    if entry.name in _REGISTRY:
        raise ValueError(f"a model named {entry.name!r} is already registered")
    declared = _DECLARED.get(entry.name)
    if declared is not None and declared != entry.declaration():
        raise ValueError(f"the entry of model {entry.name!r} differs from its declaration: "
                         "build it with the declaration's entry()")
    _REGISTRY[entry.name] = entry
    return entry


def unregister(name: str) -> ModelEntry:
    """Remove and return the entry ``name``; an unknown name raises :class:`UnknownModelError`."""
    if not isinstance(name, str) or name not in _REGISTRY:
        raise _unknown(name)
    return _REGISTRY.pop(name)


def _unknown(name) -> UnknownModelError:
    known = ", ".join(sorted({*_REGISTRY, *_DECLARED})) or "none registered"
    return UnknownModelError(f"unknown model {name!r}; known models: {known}")


def info(name: str) -> ModelInfo:
    """The declaration of model ``name`` (its entry, when registered), importing nothing; an
    unknown name raises :class:`UnknownModelError` listing the known ones."""
    if isinstance(name, str):
        found = _REGISTRY.get(name) or _DECLARED.get(name)
        if found is not None:
            return found
    raise _unknown(name)


def infos() -> tuple[ModelInfo, ...]:
    """Every declared or registered model, sorted by name, importing nothing."""
    return tuple(info(name) for name in sorted({*_REGISTRY, *_DECLARED}))


def get(name: str) -> ModelEntry:
    """The entry ``name``, importing its declared module when it is not registered yet; an
    unknown name raises :class:`UnknownModelError` listing the known ones."""
    found = info(name)
    if isinstance(found, ModelEntry):
        return found
    if found.module is not None:
        importlib.import_module(found.module)
    if name not in _REGISTRY:
        raise LookupError(f"model {name!r} is declared, but importing {found.module} did not "
                          "register it")
    return _REGISTRY[name]


def entries() -> tuple[ModelEntry, ...]:
    """Every model's entry, sorted by name: the declared ones are imported first."""
    return tuple(get(name) for name in sorted({*_REGISTRY, *_DECLARED}))


def load_builtin() -> None:
    """Declare the built-in models, listed in :data:`pyromodels.models_index.MODELS`.

    This imports declarations only (no model family, no torch); :func:`get` and
    :func:`entries` import the models themselves. An index that does not exist yet is not an
    error (no built-in models are then declared); an import error raised from inside the
    index propagates.
    """
    try:
        index = importlib.import_module(BUILTIN_INDEX)
    except ModuleNotFoundError as exc:
        if exc.name != BUILTIN_INDEX:
            raise
        return
    for declared in getattr(index, "MODELS", ()):
        declare(declared)
