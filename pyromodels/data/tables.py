"""Tables of continuous features checked once, where they enter a model with a Gaussian per
column (a latent tree's leaves, a pouch's joint Gaussian).

:func:`check_numeric_table` takes a pandas DataFrame or a 2-D array and returns a float64 array
with the column names, or raises naming every offending column: non-numeric columns, missing
or infinite values, constant columns (a Gaussian over one value has no density, so its
likelihood grows without bound), a saved pandas index read as data, fewer than two rows.
Nothing is dropped or coerced. NumPy and pandas only: no torch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .index_columns import check_no_index_column

__all__ = ["check_numeric_table"]

_SHOWN = 10  # names listed in a message before "and N more"


def _listed(names: list[str]) -> str:
    shown = ", ".join(repr(n) for n in names[:_SHOWN])
    rest = len(names) - _SHOWN
    return shown + (f" and {rest} more" if rest > 0 else "")


def _is_real_dtype(dtype) -> bool:
    """Integer or floating (NumPy or pandas' nullable types); not bool, complex, text, dates."""
    return (
        pd.api.types.is_numeric_dtype(dtype)
        and not pd.api.types.is_bool_dtype(dtype)
        and not pd.api.types.is_complex_dtype(dtype)
    )


def _frame_values(table: pd.DataFrame, name: str) -> tuple[np.ndarray, list[str]]:
    names = [str(c) for c in table.columns]
    doubled = sorted({n for n in names if names.count(n) > 1})
    if doubled:
        raise ValueError(
            f"{name} has more than one column named {_listed(doubled)}; each column must have "
            "its own name"
        )
    bad = [f"{n!r} ({dtype})" for n, dtype in zip(names, table.dtypes, strict=True)
           if not _is_real_dtype(dtype)]
    if bad:
        shown = ", ".join(bad[:_SHOWN]) + (f" and {len(bad) - _SHOWN} more" if len(bad) > _SHOWN
                                           else "")
        raise TypeError(
            f"{name} must hold only integer or floating columns; not numeric: {shown}. "
            "Drop or encode these columns before fitting (a class label is not a feature)"
        )
    values = np.empty(table.shape, dtype=np.float64)
    for j, (_, column) in enumerate(table.items()):
        values[:, j] = column.to_numpy(dtype=np.float64, na_value=np.nan)
    return values, names


def _array_values(table, name: str) -> tuple[np.ndarray, list[str]]:
    try:
        arr = np.asarray(table)
    except Exception as exc:  # noqa: BLE001 - re-raised with the argument's name
        raise TypeError(
            f"{name} must be a pandas DataFrame or a 2-D array of numbers, got "
            f"{type(table).__name__}"
        ) from exc
    if arr.ndim != 2:
        raise ValueError(
            f"{name} must be 2-dimensional (rows x columns), got shape {arr.shape}"
            + ("; a single column is x.reshape(-1, 1)" if arr.ndim == 1 else "")
        )
    if not _is_real_dtype(arr.dtype):
        raise TypeError(
            f"{name} must hold integer or floating numbers, got an array of dtype {arr.dtype}"
        )
    names = [str(j) for j in range(arr.shape[1])]
    return np.array(arr, dtype=np.float64, order="C", copy=True), names


def check_numeric_table(table, name: str = "table") -> tuple[np.ndarray, list[str]]:
    """Check a table of continuous features and return it as a float64 array.

    Args:
        table: a pandas DataFrame whose columns are all integer or floating (pandas' nullable
            ``Int64``/``Float64`` too), or a 2-D array-like of integers or floats; one row per
            item, one column per feature.
        name: what the table is called in error messages (the argument's name or the file).

    Returns:
        ``(values, names)``: a new C-contiguous float64 array of shape ``(N, D)`` (never a view
        of ``table``), and the ``D`` column names as strings (a DataFrame's column labels
        through ``str``; ``"0"``, ``"1"``, ... for an array).

    Raises:
        TypeError: ``table`` is neither a DataFrame nor array-like; a column (or the array)
            is not integer or floating, e.g. text, categories, booleans, dates, complex.
        ValueError: not 2-D; no rows or no columns; fewer than 2 rows; two columns with the
            same name; NaN or infinite values (each such column named with its number of bad
            rows); constant columns (named); a first column that is a saved pandas index.

    Example:
        >>> import pandas as pd
        >>> values, names = check_numeric_table(pd.DataFrame({"a": [1, 2], "b": [0.5, 0.0]}))
        >>> values.dtype, values.shape, names
        (dtype('float64'), (2, 2), ['a', 'b'])
    """
    if isinstance(table, pd.DataFrame):
        values, names = _frame_values(table, name)
    else:
        values, names = _array_values(table, name)
    n_rows, n_cols = values.shape
    if n_rows == 0 or n_cols == 0:
        raise ValueError(
            f"{name} is empty: it has {n_rows} row(s) and {n_cols} column(s); expected at "
            "least 2 rows and 1 column"
        )
    if n_rows < 2:
        raise ValueError(
            f"{name} has {n_rows} row; at least 2 rows are needed to estimate a variance"
        )
    bad_rows = (~np.isfinite(values)).sum(axis=0)
    if bad_rows.any():
        parts = [f"{names[j]!r} ({int(bad_rows[j])} of {n_rows} rows)"
                 for j in np.flatnonzero(bad_rows)]
        shown = ", ".join(parts[:_SHOWN]) + (f" and {len(parts) - _SHOWN} more columns"
                                             if len(parts) > _SHOWN else "")
        raise ValueError(
            f"{name} must be finite: NaN or infinite values in column(s) {shown}. Remove or "
            "impute those rows yourself; nothing is dropped here"
        )
    constant = [names[j] for j in np.flatnonzero(np.all(values == values[0], axis=0))]
    if constant:
        raise ValueError(
            f"{name} has constant column(s) {_listed(constant)}: a Gaussian over a single "
            "value has no density; drop them"
        )
    if isinstance(table, pd.DataFrame):
        check_no_index_column(names, values[:, 0], name)
    return values, names
