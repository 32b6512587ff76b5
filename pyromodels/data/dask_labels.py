"""Crowd labels in a Dask DataFrame, coded for a data-parallel fit: reading the table (a Dask
DataFrame, or a parquet or CSV path or glob), the distributed factorisation of worker and
class ids, and the coding of one partition.

The worker and class ids are coded once by a distributed factorisation: each partition's
distinct values (checked for missing values and mixed kinds there), combined into one sorted
index, the order :class:`~pyromodels.data.columns.LabelCodes` gives (declared ``classes`` keep
their own order, and a label outside them raises in whichever partition holds it). The item
ids need no global codes: the rows are shuffled by item once (:func:`group_items`), so every
item's labels lie in one partition, and each partition codes its own items
(:func:`code_partition`). Nothing here gathers the table; dask is imported only by the
functions that use it.

Example:
    >>> import dask.dataframe as dd
    >>> df = pd.DataFrame({"task": [0, 0, 1, 1], "worker": ["u", "v", "v", "w"],
    ...                    "label": ["x", "x", "y", "x"]})
    >>> ddf = dd.from_pandas(df, npartitions=2)
    >>> list(distributed_index(ddf["worker"], "df['worker']"))
    ['u', 'v', 'w']
"""

from __future__ import annotations

import os
import sys

import pandas as pd

from .columns import LabelCodes, factorize_column, require_columns
from .idmaps import as_id_index, check_id_kinds, check_no_missing, encode_ids, factorize_ids

__all__ = ["is_dask_source", "read_labels", "distributed_index", "class_index", "group_items",
           "code_partition"]

#: file name endings read as parquet and as CSV
PARQUET_SUFFIXES = (".parquet", ".pq")
CSV_SUFFIXES = (".csv", ".csv.gz")


def is_dask_source(obj) -> bool:
    """Whether ``obj`` is a Dask DataFrame or a path (``str`` or ``os.PathLike``): what the
    data-parallel fit reads. Never imports dask (a process that has not imported
    ``dask.dataframe`` holds no Dask DataFrame)."""
    if isinstance(obj, (str, os.PathLike)):
        return True
    dd = sys.modules.get("dask.dataframe")
    return dd is not None and isinstance(obj, dd.DataFrame)


def _read_path(path: str):
    """A Dask DataFrame over the parquet or CSV files of ``path`` (a file, a glob or a parquet
    folder)."""
    import dask.dataframe as dd

    lower = path.lower()
    if lower.endswith(CSV_SUFFIXES):
        return dd.read_csv(path)
    if lower.endswith(PARQUET_SUFFIXES) or os.path.isdir(path):
        return dd.read_parquet(path)
    raise ValueError(
        f"df as a path must name parquet files ({', '.join(PARQUET_SUFFIXES)}, or a parquet "
        f"folder) or CSV files ({', '.join(CSV_SUFFIXES)}), got {path!r}"
    )


def read_labels(source, columns: dict[str, str]):
    """The Dask DataFrame of ``source`` reduced to ``columns`` (``{argument: column}``, e.g.
    ``{"task": "task"}``); a missing column raises
    :class:`~pyromodels.data.columns.MissingColumnError` naming the argument."""
    ddf = _read_path(os.fspath(source)) if isinstance(source, (str, os.PathLike)) else source
    require_columns(columns, ddf.columns)
    return ddf[list(dict.fromkeys(columns.values()))]


def _distinct(values: pd.Series, name: str) -> pd.Series:
    """The distinct values of one partition's column, checked as the in-memory coding checks
    the whole column."""
    check_no_missing(values, name)
    check_id_kinds(values, name)
    return pd.Series(pd.unique(values), dtype=values.dtype)


def distributed_index(column, name: str) -> pd.Index:
    """The sorted distinct values of a Dask Series: each partition's distinct values (checked
    for missing values and mixed kinds), combined and sorted on the client (the order
    :func:`~pyromodels.data.idmaps.factorize_ids` gives)."""
    per_part = column.map_partitions(_distinct, name, meta=(column.name, column.dtype))
    uniques = per_part.drop_duplicates(split_out=1).compute()
    return factorize_ids(pd.Series(uniques.to_numpy()), name)[1]


def class_index(column, name: str, classes) -> pd.Index:
    """The class index: ``classes`` as given (checked), or those of a categorical column, or
    the column's sorted distinct values."""
    if classes is not None:
        return as_id_index(classes, "classes")
    if isinstance(column.dtype, pd.CategoricalDtype) and column.cat.known:
        return pd.Index(column.cat.categories)
    return distributed_index(column, name)


def group_items(ddf, item: str):
    """``ddf`` shuffled so that every item's rows lie in one partition (same number of
    partitions)."""
    return ddf.shuffle(on=item, npartitions=ddf.npartitions)


def code_partition(part: pd.DataFrame, item: str, worker: str, label: str, workers: pd.Index,
                   classes: pd.Index) -> LabelCodes:
    """One partition's labels coded: its own items (sorted, codes from 0), the workers and
    classes in the shared indexes (``workers`` from :func:`distributed_index`, ``classes``
    from :func:`class_index`); a label outside ``classes`` raises naming ``classes``."""
    coding = factorize_column if len(part) else factorize_ids  # the fast path needs rows
    item_codes, items = coding(part[item], f"df[{item!r}]", None, "items")
    worker_codes = encode_ids(workers, part[worker], f"df[{worker!r}]", "workers")
    check_no_missing(part[label], f"df[{label!r}]")
    label_codes = encode_ids(classes, part[label], f"df[{label!r}]", "classes")
    return LabelCodes(item_codes, worker_codes, label_codes, items, workers, classes)
