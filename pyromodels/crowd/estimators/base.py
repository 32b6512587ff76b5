"""What every crowd facade shares: column names, fitted-state checks, seeds, result frames."""

from __future__ import annotations

import functools
import inspect
import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ...checks import check_bool, check_in, check_int, check_memory, check_positive, seed_from_random_state
from ...data.columns import LabelCodes, check_columns, item_column
from ...data.idmaps import to_numpy
from ..ds.array_em import working_dtype
from .params import EstimatorParams, is_default

if TYPE_CHECKING:
    import torch

    from ...data.annotations import AnnotationTable

__all__ = ["CrowdAggregator", "resolve_random_state", "errors_frame", "errors_row_order",
           "confusions_frame", "draw_frequencies", "mcmc_history", "check_edges"]


def resolve_random_state(seed, random_state):
    """The seed of a fit from the facade's ``seed`` and scikit-learn's ``random_state``.

    ``random_state`` wins when it is not ``None``: an int is the seed; a
    ``numpy.random.RandomState`` or ``numpy.random.Generator`` gives one draw as the seed
    (:func:`pyromodels.checks.seed_from_random_state`).
    With ``random_state=None``, ``seed`` is used as it is.
    """
    return seed if random_state is None else seed_from_random_state(random_state)


def errors_frame(table: AnnotationTable, confusion: torch.Tensor, worker: str,
                 label: str) -> pd.DataFrame:
    """Confusion matrices ``(M, K, K)`` (rows = true class) in crowd-kit's ``errors_`` layout:
    rows ``(worker, label given)``, columns the true labels, each worker's block
    column-stochastic (rows sorted by worker and label; :func:`errors_row_order` gives
    crowd-kit's order)."""
    conf = to_numpy(confusion, "confusion").astype(np.float64)
    conf = np.swapaxes(conf, -1, -2)  # [m, given, true]
    M, K = table.num_workers, table.num_classes
    rows = pd.MultiIndex.from_product([table.workers, table.classes], names=[worker, label])
    return pd.DataFrame(conf.reshape(M * K, K), index=rows, columns=list(table.classes))


def errors_row_order(table: AnnotationTable, first: pd.Index | None = None) -> np.ndarray:
    """crowd-kit's row order of ``errors_``: positions in :func:`errors_frame`'s sorted rows.

    crowd-kit forms ``errors_`` by grouping the labels by (worker, label given) in the order
    in which each pair first occurs in the table, so its rows are those pairs in that order.
    The facades' ``errors_`` also has the rows of labels a worker never gave (crowd-kit has
    none); they follow, sorted by worker and label. ``first`` (``(worker, label)`` tuples,
    e.g. the rows of an ``initial_error`` that crowd-kit returns as it is) comes before all
    of them, in its own order; tuples that are not rows are skipped.
    """
    M, K = table.num_workers, table.num_classes
    pairs = to_numpy(table.worker_idx, "worker_idx") * K + to_numpy(table.label_idx, "label_idx")
    given = pd.unique(pairs)
    if first is not None:
        rows = pd.MultiIndex.from_product([table.workers, table.classes])
        wanted = rows.get_indexer(first)
        given = pd.unique(np.concatenate([wanted[wanted >= 0], given]))
    rest = np.ones(M * K, dtype=bool)
    rest[given] = False
    return np.concatenate([given, np.flatnonzero(rest)]).astype(np.int64)


def confusions_frame(table: AnnotationTable, confusion: torch.Tensor, label: str) -> pd.DataFrame:
    """Confusion matrices ``(M, K, K)`` with rows ``(worker, true label)`` and the labels given
    as columns, each row summing to one."""
    frame = table.index_workers(to_numpy(confusion, "confusion").astype(np.float64))
    frame.columns.name = label
    return frame


def draw_frequencies(draws: torch.Tensor, num_classes: int) -> torch.Tensor:
    """``(N, K)`` share of the draws ``(chain, draw, N)`` in which each item has each class."""
    import torch

    one_hot = torch.nn.functional.one_hot(draws.long(), num_classes).double()
    return one_hot.mean(dim=(0, 1))


def mcmc_history(post) -> tuple[list, int]:
    """``(mean log joint per kept draw, sweeps or steps per chain)`` of a sampling fit."""
    lp = post.sample_stats.get("lp")
    history = lp.double().mean(0).tolist() if lp is not None else []
    return history, int(post.attrs.get("num_warmup", 0)) + post.num_draws


def check_edges(edges, source: str, target: str) -> pd.DataFrame:
    """Raise unless ``edges`` is a DataFrame with the ``source`` and ``target`` columns and no
    missing ids."""
    if not isinstance(edges, pd.DataFrame):
        raise TypeError(
            f"edges must be a pandas DataFrame with columns {source!r} and {target!r} (one row "
            f"per edge, holding task ids), got {type(edges).__name__}"
        )
    missing = [col for col in (source, target) if col not in edges.columns]
    if missing:
        raise ValueError(
            f"edges is missing column(s) {missing}; it has {list(edges.columns)}. Name the "
            "right columns with source= and target="
        )
    for col in (source, target):
        if edges[col].isna().any():
            raise ValueError(f"edges[{col!r}] holds missing ids (NaN or None)")
    return edges


def _short(value) -> str:
    """``value``'s repr, or its type name when that would be long (an array)."""
    text = repr(value)
    return text if len(text) <= 40 else f"<{type(value).__name__}>"


def _unfitted_on_failure(fit):
    """``fit`` that leaves the estimator unfitted when it fails or is interrupted: the results
    of an earlier fit would not belong to the parameters it was re-fitted with."""

    @functools.wraps(fit)
    def fit_or_forget(self, *args, **kwargs):
        try:
            return fit(self, *args, **kwargs)
        except BaseException:
            self._forget_fit()
            raise

    return fit_or_forget


class CrowdAggregator(EstimatorParams):
    """Shared plumbing: column names, the annotation table, fitted-state checks."""

    _fitted = ("labels_", "probas_", "table_")
    #: ``{parameter: the methods that read it}`` for the parameters only some methods read;
    #: setting one away from its default for another method is an error at fit time
    _method_params: dict[str, tuple[str, ...]] = {}
    #: whether the fit holds one ``K x K`` confusion matrix per worker
    _per_worker_confusions = True

    def __getattr__(self, name):
        if name in type(self)._fitted:
            # loaded here: it subclasses scikit-learn's, whose import costs about a second
            from ...core.not_fitted import NotFittedError

            raise NotFittedError(
                f"this {type(self).__name__} is not fitted yet: call fit(df) before using {name}"
            )
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "fit" in vars(cls):
            cls.fit = _unfitted_on_failure(vars(cls)["fit"])

    def _forget_fit(self) -> None:
        """Drop every fitted attribute (a public name ending in ``_``)."""
        for name in [n for n in vars(self) if n.endswith("_") and not n.startswith("_")]:
            delattr(self, name)

    def _empty_input(self, df) -> bool:
        """Whether ``df`` is a DataFrame without rows (its columns checked all the same); if
        so, warn that there is nothing to aggregate. crowd-kit's aggregators return empty
        results for such a table, and the facades that take crowd-kit's names do too."""
        if not isinstance(df, pd.DataFrame) or len(df):
            return False
        self._check_columns()
        check_columns(df, {"task": item_column(df, self.task), "worker": self.worker,
                           "label": self.label}, allow_empty=True)
        # the warning names the line that called fit (through fit's failure wrapper)
        warnings.warn(f"df has no rows: there are no labels to aggregate, so the results of "
                      f"{type(self).__name__}.fit are empty", UserWarning, stacklevel=4)
        return True

    def _store_empty(self, label_dtype) -> None:
        """crowd-kit's results for a table without rows: empty ``probas_`` and ``labels_``
        (``label_dtype``), and no table."""
        self.table_ = None
        self.probas_ = pd.DataFrame()
        self.labels_ = pd.Series(dtype=label_dtype, name="agg_label")

    def _fitted_table(self) -> AnnotationTable:
        """``table_``, which a fit to a table without rows, or on a Dask cluster, does not
        have."""
        table = self.table_
        if table is None and not isinstance(self.probas_, pd.DataFrame):  # Dask objects
            raise ValueError(f"this {type(self).__name__} was fitted on a Dask cluster, which "
                             "keeps no table_ to predict with; fit a pandas DataFrame to predict")
        if table is None:
            raise ValueError(f"this {type(self).__name__} was fitted to a table without rows: "
                             "it knows no workers or classes to predict with; fit it to labels")
        return table

    def _columns(self) -> dict[str, str]:
        return {"task": self.task, "worker": self.worker, "label": self.label}

    def _item_name(self) -> str | None:
        """The name of the item index of ``labels_`` and ``probas_``."""
        return self.task

    def _check_columns(self) -> None:
        for arg, col in self._columns().items():
            if not isinstance(col, str):
                raise TypeError(f"{arg} must be a column name (str), got {col!r}")
        if not isinstance(self.allow_repeats, bool):
            raise TypeError(f"allow_repeats must be a bool, got {self.allow_repeats!r}")

    def _codes(self, df, items=None) -> LabelCodes:
        """The columns of ``df`` checked and coded (no torch), and the fit's memory checked."""
        self._check_columns()
        task = item_column(df, self.task)
        # name the facade's own arguments (task=, worker=, label=) when a column is missing
        check_columns(df, {"task": task, "worker": self.worker, "label": self.label})
        codes = LabelCodes.from_dataframe(df, item=task, worker=self.worker, label=self.label,
                                          classes=self.classes, items=items)
        self._check_memory(codes)
        return codes

    def _table(self, df, items=None) -> AnnotationTable:
        from ...data.annotations import AnnotationTable

        return AnnotationTable.from_codes(self._codes(df, items),
                                          allow_repeats=self.allow_repeats)

    def _check_method_params(self) -> None:
        """Refuse a parameter set away from its default that ``self.method`` does not read:
        it would be ignored silently (``num_chains=4`` with ``method="em"``)."""
        signature = inspect.signature(type(self).__init__).parameters
        for name, methods in self._method_params.items():
            value, default = getattr(self, name), signature[name].default
            if self.method not in methods and not is_default(value, default):
                used = ", ".join(repr(m) for m in methods[:-1])
                used = f"{used} or {methods[-1]!r}" if used else repr(methods[-1])
                raise ValueError(
                    f"{name}={_short(value)} is not used by method={self.method!r}, only by "
                    f"method={used}: leave {name} at its default ({default!r}) or choose a "
                    "method that uses it"
                )

    def _kept_draws(self) -> int:
        """How many draws of the confusion matrices the fit keeps (0 for EM)."""
        method = getattr(self, "method", None)
        if method in ("gibbs", "nuts"):
            return (check_int(self.num_chains, "num_chains", minimum=1)
                    * check_int(self.num_samples, "num_samples", minimum=1))
        if method == "svi":
            return check_int(self.num_samples, "num_samples", minimum=1)
        return 0

    def _check_memory(self, table: AnnotationTable) -> None:
        """Refuse, before anything is allocated, a fit whose main arrays cannot fit in memory
        (``classes=range(10**6)`` asks for ``M x 10**12`` confusion entries)."""
        N, M, K = table.num_items, table.num_workers, table.num_classes
        size = working_dtype().itemsize
        parts = [(f"{N} tasks x {K} classes of probabilities", N * K * size)]
        confusion = M * K * K * size if self._per_worker_confusions else 0
        draws = self._kept_draws() if confusion else 0
        if confusion:
            parts.append((f"{M} workers x {K} x {K} confusion entries", confusion))
        if draws:
            parts.append((f"{draws} kept draws of those confusions (num_chains x num_samples)",
                          draws * confusion))
        source = "classes=" if self.classes is not None else f"the distinct df[{self.label!r}]"
        hint = (f"the {K} classes come from {source}, the {M} workers from "
                f"df[{self.worker!r}]; the confusions grow with workers x classes squared")
        check_memory(parts, self.__dict__.get("device"), hint)

    def _seed(self):
        return resolve_random_state(self.seed, self.random_state)

    def _engine_options(self, methods: tuple[str, ...]) -> dict:
        """The keyword arguments of ``model.fit`` for ``self.method`` (EM or a sampler)."""
        check_in(self.method, "method", methods)
        self._check_method_params()
        common = {"seed": self._seed(), "progress": self.progress, "device": self.device}
        if self.method == "em":
            # n_iter=0 returns the start, tol=0 never stops early (crowd-kit's meanings)
            return {**common, "max_iter": check_int(self.n_iter, "n_iter", minimum=0),
                    "tol": check_positive(self.tol, "tol", strict=False)}
        return {**common, "num_samples": self.num_samples, "num_warmup": self.num_warmup,
                "num_chains": self.num_chains,
                "diagnostic_warnings": check_bool(self.diagnostic_warnings, "diagnostic_warnings")}

    def _record_run(self, post) -> None:
        """``loss_history_``, ``n_iter_`` and ``converged_`` of an EM or sampling fit."""
        if post.method == "em":
            self.loss_history_ = post.losses.tolist()
            self.n_iter_ = int(post.diagnostics["n_iter"])
            self.converged_ = bool(post.diagnostics["converged"])
        else:
            self.loss_history_, self.n_iter_ = mcmc_history(post)
            self.converged_ = None

    def _store(self, table: AnnotationTable, probas: torch.Tensor, labels: torch.Tensor) -> None:
        self.table_ = table
        self.probas_ = self._frame(table, probas)
        self.labels_ = self._series(table, labels)

    def _frame(self, table: AnnotationTable, probas: torch.Tensor) -> pd.DataFrame:
        """``probas`` as a float64 DataFrame tasks x classes, each row normalised again in
        float64 (a fit in float32 leaves rows a few 1e-8 off one)."""
        probas = to_numpy(probas, "probas").astype(np.float64)
        frame = table.index_items(probas / probas.sum(-1, keepdims=True))
        frame.index.name, frame.columns.name = self._item_name(), self.label
        return frame

    def _series(self, table: AnnotationTable, labels: torch.Tensor) -> pd.Series:
        series = table.index_items(to_numpy(labels, "labels"), decode=True).rename("agg_label")
        series.index.name = self._item_name()
        return series

    def _store_confusions(self, table: AnnotationTable, confusion: torch.Tensor) -> None:
        self.errors_ = errors_frame(table, confusion, self.worker, self.label)
        self.confusions_ = confusions_frame(table, confusion, self.label)

    def fit(self, df):  # pragma: no cover - abstract
        raise NotImplementedError

    def fit_predict(self, df, *args, **kwargs) -> pd.Series:
        """Fit (``fit(df, *args, **kwargs)``), then return ``labels_`` (Series indexed by task,
        the user's class values)."""
        return self.fit(df, *args, **kwargs).labels_

    def fit_predict_proba(self, df, *args, **kwargs) -> pd.DataFrame:
        """Fit (``fit(df, *args, **kwargs)``), then return ``probas_`` (DataFrame tasks x
        classes)."""
        return self.fit(df, *args, **kwargs).probas_
