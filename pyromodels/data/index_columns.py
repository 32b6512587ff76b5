"""Saved pandas indexes in CSV files: a first column that numbers the rows is not data.

``DataFrame.to_csv`` writes the index as a first column with an empty header (read back by
pandas as ``Unnamed: 0``), or headed ``index`` after ``reset_index()``. Read as data, it becomes
one more feature (a mixture fitted in ``d + 1`` dimensions); :func:`check_no_index_column`
rejects it with a message naming the column.
"""

from __future__ import annotations

import re

import numpy as np

__all__ = ["check_no_index_column", "is_index_header"]

_UNNAMED = re.compile(r"^Unnamed: \d+$")


def is_index_header(name: str) -> bool:
    """Whether a header cell is what pandas writes for an unnamed index (``""`` or
    ``Unnamed: <n>``)."""
    return name.strip() == "" or bool(_UNNAMED.match(name.strip()))


def check_no_index_column(header, first_column, where: str = "the file") -> None:
    """Raise if the first column of a table is a saved pandas index.

    The first column is an index when its header is empty or ``Unnamed: <n>`` (pandas never
    leaves a data column unnamed), or when it is headed ``index`` and counts ``0 .. n-1``.

    Args:
        header: the header cells (a sequence of strings), or ``None`` for a file without one.
        first_column: the values of the first column (numbers).
        where: what holds the table, for the message.

    Raises:
        ValueError: naming the column and saying how to write the file without it.

    Example:
        >>> check_no_index_column(["", "x"], [0, 1])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: the file: its first column ('') is a saved pandas index, not data; ...
    """
    if not header:
        return
    name = str(header[0])
    values = np.asarray(first_column, dtype=np.float64)
    counts = values.size > 0 and np.array_equal(values, np.arange(values.size))
    if is_index_header(name) or (name.strip().lower() == "index" and counts):
        raise ValueError(
            f"{where}: its first column ({name!r}) is a saved pandas index, not data; "
            "remove it, or write the file with DataFrame.to_csv(..., index=False)"
        )
