"""Crowd labels coded from a DataFrame, in NumPy: the column checks, the coding of ids into
integer codes, and :class:`LabelCodes`, what an
:class:`~pyromodels.data.annotations.AnnotationTable` holds before its codes become torch
tensors. Nothing here imports torch, so a fit that runs on NumPy arrays (Dawid-Skene EM on
the C passes) reads its DataFrame without it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .idmaps import (
    ItemWorkerSizes,
    c_table_passes,
    check_codes,
    factorize_ids,
    index_values,
    to_numpy,
)

__all__ = ["MissingColumnError", "check_columns", "require_columns", "item_column", "factorize_column",
           "count_labels", "labelled_cells", "LabelCodes", "IdMaps"]


class MissingColumnError(KeyError, ValueError):
    """A table lacks a column it needs: a ``ValueError`` (bad input) that is also a
    ``KeyError``, what pandas and crowd-kit raise for a missing column."""

    __str__ = ValueError.__str__  # the message itself, not KeyError's quoted repr


def require_columns(columns: dict[str, str], available) -> None:
    """Raise :class:`MissingColumnError` unless every column in ``columns`` (``{argument
    name: column name}``) is among ``available`` (a table's columns), naming the missing
    ones, the table's columns and the arguments that choose them."""
    missing = {arg: col for arg, col in columns.items() if col not in available}
    if missing:
        hint = ", ".join(f"{arg}=" for arg in missing)
        raise MissingColumnError(
            f"df is missing column(s) {list(missing.values())}; it has {list(available)}. "
            f"Name the right columns with {hint}"
        )


def check_columns(df, columns: dict[str, str], allow_empty: bool = False) -> None:
    """Raise unless ``df`` is a non-empty DataFrame holding every column in ``columns``
    (a missing one raises :class:`MissingColumnError`).

    Args:
        df: the user's table.
        columns: ``{argument name: column name}``, e.g. ``{"item": "task"}``.
        allow_empty: accept a table without rows.
    """
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    require_columns(columns, df.columns)
    doubled = sorted({col for col in columns.values() if int((df.columns == col).sum()) > 1})
    if doubled:
        raise ValueError(
            f"df has more than one column named {doubled}; rename or drop the extra ones so "
            "that each column the table reads is unique"
        )
    if len(df) == 0 and not allow_empty:
        raise ValueError("df must not be empty: it has no rows")


#: integer ids whose range spans at most this many times the number of rows (plus
#: :data:`DENSE_SLACK`) are coded through a table over the range instead of a hash table
DENSE_SPAN = 4
DENSE_SLACK = 1024


def factorize_column(values: pd.Series, name: str, known, known_name: str):
    """:func:`~pyromodels.data.idmaps.factorize_ids`, with a faster path for a column of
    plain integer ids and no ``known`` list: the same codes and sorted index.

    When the ids lie in a range ``[lo, hi]`` not much wider than the column, a boolean table
    over the range marks the ids present; its running count gives each id's rank among the
    sorted distinct ids, i.e. its code. That is one pass over the rows and one over the
    range (about five times faster than hashing on 500,000 rows). Anything else (other
    dtypes, nullable integers, sparse ranges, a ``known`` list) goes to ``factorize_ids``.
    """
    dtype = values.dtype
    if known is not None or not isinstance(dtype, np.dtype) or dtype.kind not in "iu":
        return factorize_ids(values, name, known, known_name)
    arr = values.to_numpy()
    lo, hi = arr.min(), arr.max()
    span = int(hi) - int(lo) + 1
    if span > DENSE_SPAN * len(arr) + DENSE_SLACK:
        return factorize_ids(values, name, known, known_name)
    passes = c_table_passes()
    if passes is not None and dtype == np.int64:  # the same in one C pass over the rows
        codes, present = np.empty(len(arr), dtype=np.int64), np.empty(span, dtype=np.uint8)
        passes.dense_codes(np.ascontiguousarray(arr), int(lo), codes, present)
        return codes, pd.Index(lo + np.flatnonzero(present).astype(dtype))
    offset = (arr - lo).astype(np.intp)
    present = np.zeros(span, dtype=bool)
    present[offset] = True
    rank = np.cumsum(present, dtype=np.int64) - 1
    uniques = lo + np.flatnonzero(present).astype(dtype)
    return rank[offset], pd.Index(uniques)


def item_column(df, item: str = "task") -> str:
    """The name of the item column of ``df``: ``item``, or ``"item"`` when ``item`` is the
    default ``"task"``, ``df`` has no such column and has an ``"item"`` column (the shared
    crowd data name it so).

    Example:
        >>> item_column(pd.DataFrame({"item": [1], "worker": [2], "label": [0]}))
        'item'
    """
    if (item == "task" and isinstance(df, pd.DataFrame) and "task" not in df.columns
            and "item" in df.columns):
        return "item"
    return item


def count_labels(labels, passes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(per_item, per_worker, pairs)``: labels per item ``(N,)`` and per worker ``(M,)``
    (int64) and the ``(K, M)`` bool mask of the (class, worker) pairs that occur, in one pass
    of the C extension ``passes`` (:func:`~pyromodels.data.idmaps.c_table_passes`) over the
    CPU codes of ``labels`` (a :class:`LabelCodes` or an annotation table)."""
    N, M, K = labels.num_items, labels.num_workers, labels.num_classes
    per_item, per_worker = np.empty(N, dtype=np.int64), np.empty(M, dtype=np.int64)
    pairs = np.empty((K, M), dtype=np.uint8)
    codes = (np.ascontiguousarray(to_numpy(c, "codes"), dtype=np.int64)
             for c in (labels.item_idx, labels.worker_idx, labels.label_idx))
    passes.label_statistics(N, M, K, *codes, per_item, per_worker, pairs)
    return per_item, per_worker, pairs.view(bool)


def _repeats(labels) -> int | None:
    """The number of rows whose (item, worker) pair occurred in an earlier row: one C count
    over the rows; ``None`` where the C extension was not built."""
    passes = c_table_passes()
    if passes is None:
        return None
    item, worker = (np.ascontiguousarray(to_numpy(c, "codes"), dtype=np.int64)
                    for c in (labels.item_idx, labels.worker_idx))
    return int(passes.count_repeats(labels.num_items, labels.num_workers, item, worker))


def labelled_cells(labels) -> int:
    """The number of distinct (item, worker) pairs of ``labels`` (a :class:`LabelCodes` or an
    annotation table): the cells of the item x worker grid that hold a label."""
    repeats = _repeats(labels)
    if repeats is not None:
        return labels.num_labels - repeats
    item, worker = (to_numpy(c, "codes").astype(np.int64)
                    for c in (labels.item_idx, labels.worker_idx))
    return len(np.unique(item * labels.num_workers + worker))


class IdMaps(ItemWorkerSizes):
    """Per-item and per-worker results indexed by the user's ids, for a container with the
    ``items``, ``workers`` and ``classes`` id indexes (:class:`LabelCodes`, an
    :class:`~pyromodels.data.annotations.AnnotationTable`)."""

    @property
    def num_classes(self) -> int:
        """Number of classes ``K``."""
        return len(self.classes)

    def decode_classes(self, codes) -> np.ndarray:
        """Class ids of integer class codes (any shape)."""
        arr = to_numpy(codes, "codes")
        flat = arr.reshape(-1)
        valid = arr.dtype.kind in "iu" and (
            flat.size == 0 or (int(flat.min()) >= 0 and int(flat.max()) < self.num_classes))
        if not valid:  # the checks of every code argument: their errors, or integral floats
            flat = check_codes(flat, "codes", self.num_classes, "num_classes").cpu().numpy()
        return self.classes.to_numpy()[flat].reshape(arr.shape)

    def index_items(self, values, columns=None, decode: bool = False):
        """Per-item results indexed by item id.

        Args:
            values: ``(N,)`` or ``(N, C)`` tensor / array.
            columns: column labels for 2-D input; default: the class ids when ``C == K``,
                else ``0 .. C - 1``.
            decode: treat 1-D ``values`` as class codes and return class ids.

        Returns:
            A Series (1-D) or DataFrame (2-D) indexed by ``items``.
        """
        if decode:
            values = self.decode_classes(values)
        return index_values(values, self.items, "values", self._columns(values, columns))

    def index_workers(self, values, columns=None):
        """Per-worker results indexed by worker id.

        ``(M,)`` gives a Series, ``(M, C)`` a DataFrame, and confusion matrices ``(M, K, K)``
        (rows = true class) a DataFrame with a (worker, true class) row index and the
        response classes as columns.
        """
        arr = to_numpy(values, "values")
        if arr.ndim == 3:
            m, k, k2 = arr.shape
            if m != self.num_workers or k != self.num_classes or k2 != self.num_classes:
                raise ValueError(
                    f"values must have shape ({self.num_workers}, {self.num_classes}, "
                    f"{self.num_classes}), got {tuple(arr.shape)}"
                )
            rows = pd.MultiIndex.from_product([self.workers, self.classes],
                                              names=["worker", "true"])
            return pd.DataFrame(arr.reshape(m * k, k2), index=rows, columns=self.classes)
        return index_values(arr, self.workers, "values", self._columns(arr, columns))

    def _columns(self, values, columns):
        if columns is not None:
            return columns
        shape = getattr(values, "shape", ())
        if len(shape) == 2 and shape[1] == self.num_classes:
            return self.classes
        return None


@dataclass(frozen=True, eq=False)
class LabelCodes(IdMaps):
    """Crowd labels in long format as NumPy codes with their id indexes.

    Attributes:
        item_idx, worker_idx, label_idx: int64 arrays ``(L,)`` of codes.
        items, workers, classes: the id indexes (code ``n`` means ``items[n]``).

    Built by :meth:`from_dataframe`, whose codes and indexes are those of
    :meth:`AnnotationTable.from_dataframe <pyromodels.data.annotations.AnnotationTable.from_dataframe>`
    (which builds its table from them with
    :meth:`~pyromodels.data.annotations.AnnotationTable.from_codes`).
    """

    item_idx: np.ndarray
    worker_idx: np.ndarray
    label_idx: np.ndarray
    items: pd.Index
    workers: pd.Index
    classes: pd.Index

    @classmethod
    def from_dataframe(cls, df: pd.DataFrame, item: str = "task", worker: str = "worker",
                       label: str = "label", classes=None, *, items=None,
                       workers=None) -> LabelCodes:
        """Check the columns and code the ids (see
        :meth:`~pyromodels.data.annotations.AnnotationTable.from_dataframe` for the
        arguments and errors; the checks of the table itself, such as repeated (item,
        worker) rows, are the table's)."""
        item = item_column(df, item)
        check_columns(df, {"item": item, "worker": worker, "label": label})
        item_codes, item_index = factorize_column(df[item], f"df[{item!r}]", items, "items")
        worker_codes, worker_index = factorize_column(df[worker], f"df[{worker!r}]", workers,
                                                      "workers")
        if classes is None and isinstance(df[label].dtype, pd.CategoricalDtype):
            classes = df[label].cat.categories  # the declared classes, used or not
        label_codes, class_index = factorize_column(df[label], f"df[{label!r}]", classes,
                                                    "classes")
        return cls(item_codes, worker_codes, label_codes, item_index, worker_index, class_index)

    @property
    def num_labels(self) -> int:
        """Number of rows ``L``."""
        return len(self.item_idx)

    def has_repeats(self) -> bool | None:
        """Whether a worker labelled an item twice: one C count over the rows; ``None`` where
        the C extension was not built (the table's own check then decides)."""
        repeats = _repeats(self)
        return None if repeats is None else repeats > 0
