"""Checks of the path arrays a :class:`~pyromodels.bnp.Tree` is built from.

A path array is ``(N, L + 1)`` integer node ids, one row per datum from the root (column 0)
to its leaf (column ``L``); a row of -1 is a datum without a path. It describes a tree when
every row starts at the same root, and every node id sits at one level and below one parent.

Example:
    >>> a, root = check_paths([[0, 1, 2], [-1, -1, -1], [0, 1, 3]])
    >>> a.shape, root
    ((3, 3), 0)
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["UNSEATED", "as_node_ids", "check_paths"]

UNSEATED = -1
"""The id that fills the row of a datum without a path (and marks a new node in a path)."""


def as_node_ids(x, name: str) -> np.ndarray:
    """``x`` (array-like or tensor) as an int64 numpy array; ``TypeError`` unless integer."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    a = np.asarray(x)
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"{name} must hold integer node ids, got dtype {a.dtype}")
    return a.astype(np.int64)


def check_paths(paths, root: int | None = None) -> tuple[np.ndarray, int]:
    """Check that ``paths`` describe a tree; return them as an int64 array, and the root.

    Args:
        paths: ``(N, L + 1)`` integer node ids, ``N >= 1``, ``L >= 1``; rows of -1 allowed.
        root: the root's id; must match the paths' column 0 when a row is seated (default:
            read from the paths, or 0 when no row is seated).

    Raises:
        ValueError: a wrong shape, ids below -1, rows mixing ids and -1, several roots, a node
            at two levels or below two parents.
        TypeError: non-integer paths.
    """
    a = as_node_ids(paths, "paths")
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 2:
        raise ValueError(f"paths must be a 2-D array of shape (num_points, depth + 1) with "
                         f"num_points >= 1 and depth >= 1, got shape {tuple(a.shape)}")
    if (a < UNSEATED).any():
        n = int(np.flatnonzero((a < UNSEATED).any(1))[0])
        raise ValueError(f"paths must hold node ids >= 0 (or rows of -1 for unseated data), "
                         f"got {a[n].tolist()} in row {n}")
    seated = (a != UNSEATED).all(1)
    bad = np.flatnonzero(~seated & ~(a == UNSEATED).all(1))
    if bad.size:
        n = int(bad[0])
        raise ValueError(f"paths row {n} mixes node ids and -1: {a[n].tolist()} (a row is "
                         f"either a full path or all -1 for an unseated datum)")
    roots = np.unique(a[seated, 0])
    if roots.size > 1:
        raise ValueError(f"paths must all start at the same root node, got roots "
                         f"{roots.tolist()}")
    if roots.size:
        if root is not None and int(root) != int(roots[0]):
            raise ValueError(f"root is {root} but the paths start at node {int(roots[0])}")
        root = int(roots[0])
    root = 0 if root is None else root
    level: dict[int, int] = {root: 0}
    parent: dict[int, int] = {root: UNSEATED}
    for n in np.flatnonzero(seated).tolist():
        row = a[n].tolist()
        for lv in range(1, len(row)):
            z, p = row[lv], row[lv - 1]
            if level.setdefault(z, lv) != lv:
                raise ValueError(f"paths put node {z} at levels {level[z]} and {lv} (row {n}); "
                                 f"a node lives at one level")
            if parent.setdefault(z, p) != p:
                raise ValueError(f"paths give node {z} the parents {parent[z]} and {p} (row "
                                 f"{n}); inconsistent parents")
    return a, root
