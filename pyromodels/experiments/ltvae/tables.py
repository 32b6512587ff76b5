"""Reading the numeric table of ``pyromodels fit latent-tree`` and ``fit ltvae``."""

from __future__ import annotations

import csv

import numpy as np

__all__ = ["read_points", "column_names"]


def column_names(path, width: int) -> list[str]:
    """The names of the ``width`` columns of the CSV ``path``: its header line's cells when
    its first non-blank line holds a cell that is not a number (as
    :func:`~pyromodels.experiments.reference_mixture.reproduction.read_numeric_csv` decides),
    else ``"1"``, ``"2"``, ... (the numbers that reader's messages use)."""
    with open(path, newline="", encoding="utf-8") as fh:
        first = next(row for row in csv.reader(fh) if row)
    try:
        [float(cell) for cell in first]
    except ValueError:
        return [cell.strip() for cell in first]
    return [str(j + 1) for j in range(width)]


def read_points(path) -> np.ndarray:
    """The ``(N, D)`` float64 points of the numeric CSV ``path`` (with or without a header
    line), checked as a table of continuous features
    (:func:`~pyromodels.data.tables.check_numeric_table`).

    Raises:
        ValueError: a cell that is not a finite number (named by line and column), a ragged
            line, fewer than two rows, two columns of one name, or a constant column (named):
            a constant column has no scale to standardise by and nothing to cluster on.
    """
    import pandas as pd

    from ...data.tables import check_numeric_table
    from ..reference_mixture.reproduction import read_numeric_csv

    values = read_numeric_csv(path)
    frame = pd.DataFrame(values, columns=column_names(path, values.shape[1]))
    checked, _ = check_numeric_table(frame, str(path))
    return checked
