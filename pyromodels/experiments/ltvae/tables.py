"""Reading the numeric table of ``pyromodels fit latent-tree`` and ``fit ltvae``."""

from __future__ import annotations

import numpy as np

__all__ = ["read_points"]


def read_points(path) -> np.ndarray:
    """The ``(N, D)`` float64 points of the numeric CSV ``path`` (with or without a header
    line), checked as a table of continuous features.

    Raises:
        ValueError: a cell that is not a finite number (named by line and column), a ragged
            line, fewer than two rows, or a constant column (named): a constant column has no
            scale to standardise by and carries nothing to cluster on.
    """
    from ...data.tables import check_numeric_table
    from ..reference_mixture.reproduction import read_numeric_csv

    values, _ = check_numeric_table(read_numeric_csv(path), str(path))
    return values
