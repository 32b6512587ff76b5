r"""Distances inside and between the nodes of a hierarchy over data points: AID and AOD.

The RBHMC paper (Huang, Ng, Laitonjam and Hurley, Sec. 5) scores a tree whose root-to-leaf
paths hold the data by two averages of **squared** Euclidean distances (the text says "L2
distance"; its formulas square the norm):

* **AID**, the average inner distance (lower is better): over the non-root nodes ``z`` with
  :math:`N_z \ge 2` data, the mean over unordered pairs of data in ``z``,

  .. math::
     \mathrm{AID} = \frac{1}{M}\sum_{z} \frac{2}{N_z(N_z-1)} \sum_{n > n',\; n, n' \in z}
     \lVert x_n - x_{n'}\rVert_2^2 .

* **AOD**, the average outer distance (higher is better): with the centroid
  :math:`\bar x_z = N_z^{-1}\sum_{n \in z} x_n`, the mean over the unordered pairs of sibling
  nodes (two children of the same parent, at any level) of
  :math:`\lVert \bar x_z - \bar x_{z'}\rVert_2^2`.

A tree is given either as its per-datum paths, an ``(N, L + 1)`` integer tensor whose column 0
is the root and whose row ``n`` lists datum ``n``'s node at each level, or as any object with
such a ``paths`` attribute (a :class:`pyromodels.bnp.Tree`). Node ids are arbitrary integers:
only the tree they describe matters.

**Conventions** where the paper is silent or wrong:

* **Singletons.** A node holding one datum has no pair, so its inner distance is undefined
  (0/0 in the formula). Such nodes are **skipped**: ``M`` counts the non-root nodes with
  :math:`N_z \ge 2`. Counting them as 0 instead would reward trees of singletons.
* **Sibling pairs are counted once.** The paper's double sum
  :math:`\sum_{z \ne z_0}\sum_{z' \in S(z)}` visits every unordered pair twice while its
  normaliser counts pairs, so the printed formula is twice the average; ``paper_literal=True``
  reproduces it (exactly ``2 x`` the default value).
* **Collapsing.** By default both metrics are computed on the tree with every node that has no
  sibling merged into its parent (the display form of the paper's Sec. 4.5, as
  :meth:`pyromodels.bnp.Tree.collapsed`); a node is kept exactly when its parent has at least
  two children. ``collapse=False`` uses every node of the fixed-depth tree, so a chain of only
  children counts the same data several times in AID. AOD is the same either way: merging a
  chain changes no sibling group and no node's data.
* **Undefined values.** AOD of a tree with a single path (no node has a sibling) and AID of a
  tree whose every non-root node is a singleton are ``nan``, with a
  :class:`HierarchyMetricWarning`. The paper drops such runs; ``nan`` lets a protocol drop
  them with ``numpy.nanmean`` and count them.

Both metrics use the data as given; the paper presumably scores the PCA features the model
was fitted to.

Example:
    >>> x = torch.tensor([[0.0], [2.0], [6.0], [10.0], [12.0]], dtype=torch.float64)
    >>> paths = torch.tensor([[0, 1, 3], [0, 1, 3], [0, 1, 4], [0, 2, 5], [0, 2, 5]])
    >>> round(aid(x, paths), 6), round(aid(x, paths, collapse=False), 6)   # 80/9, 23/3
    (8.888889, 7.666667)
    >>> round(aod(x, paths), 6), round(aod(x, paths, paper_literal=True), 6)  # 425/9, 850/9
    (47.222222, 94.444444)
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import numpy as np
import torch

from ..checks import as_float_tensor, check_bool
from .clustering import f_measure_per_level

__all__ = ["HierarchyMetricWarning", "NodeStatistics", "node_statistics", "aid", "aod",
           "f_measure_by_level"]


class HierarchyMetricWarning(RuntimeWarning):
    """AID or AOD is undefined for the given tree (the value returned is ``nan``)."""


class NodeStatistics(NamedTuple):
    """Per-node summaries of the data, one entry per non-root node (see :func:`node_statistics`).

    Attributes:
        node: ``(Z,)`` int64 node ids, level by level, ascending within a level.
        parent: ``(Z,)`` int64 ids of their parents in the original tree.
        level: ``(Z,)`` int64 levels ``1..L``.
        count: ``(Z,)`` int64 :math:`N_z`.
        centroid: ``(Z, D)`` means of the data through each node.
        inner: ``(Z,)`` mean squared distance over unordered pairs of the node's data
            (``nan`` for a singleton).
        kept: ``(Z,)`` bool, whether the node survives collapsing (its parent has at least two
            children).
    """

    node: torch.Tensor
    parent: torch.Tensor
    level: torch.Tensor
    count: torch.Tensor
    centroid: torch.Tensor
    inner: torch.Tensor
    kept: torch.Tensor


def _as_paths(tree) -> np.ndarray:
    """The ``(N, L + 1)`` int64 paths of a tree-like object or an array, checked."""
    if hasattr(tree, "paths") and not isinstance(tree, np.ndarray | torch.Tensor):
        tree = tree.paths
    if isinstance(tree, torch.Tensor):
        tree = tree.detach().cpu().numpy()
    try:
        a = np.asarray(tree)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"tree must be a Tree or an (N, L + 1) integer array of paths, got "
                        f"{type(tree).__name__}") from exc
    if a.dtype == bool or not np.issubdtype(a.dtype, np.integer):
        raise TypeError(f"tree must hold integer node ids (a Tree or an (N, L + 1) integer "
                        f"array of paths), got dtype {a.dtype}")
    if a.ndim != 2 or a.shape[0] < 1 or a.shape[1] < 2:
        raise ValueError(f"tree paths must have shape (N, L + 1) with N >= 1 and L >= 1, got "
                         f"shape {tuple(a.shape)}")
    a = a.astype(np.int64)
    if (a < 0).any():
        n = int(np.flatnonzero((a < 0).any(1))[0])
        raise ValueError(f"tree paths must hold node ids >= 0 for every datum (every datum "
                         f"seated), got {a[n].tolist()} in row {n}")
    if (a[:, 0] != a[0, 0]).any():
        raise ValueError(f"tree paths must all start at the same root, got roots "
                         f"{np.unique(a[:, 0]).tolist()}")
    level: dict[int, int] = {}
    parent: dict[int, int] = {}
    for lv in range(1, a.shape[1]):
        for z, p in np.unique(a[:, lv - 1:lv + 1][:, ::-1], axis=0).tolist():
            if level.setdefault(z, lv) != lv:
                raise ValueError(f"tree paths put node {z} at levels {level[z]} and {lv}; a "
                                 f"node lives at one level")
            if parent.setdefault(z, p) != p:
                raise ValueError(f"tree paths give node {z} the parents {parent[z]} and {p}")
    if a[0, 0] in level:
        raise ValueError(f"tree paths use the root {a[0, 0]} below the root")
    return a


def _as_data(x, num_points: int) -> torch.Tensor:
    x = as_float_tensor(x, "x", ndim=2)
    if x.shape[0] != num_points:
        raise ValueError(f"x must have one row per datum of the tree: got {x.shape[0]} rows for "
                         f"{num_points} paths")
    return x


def node_statistics(x, tree) -> NodeStatistics:
    r"""Centroid, size and mean inner pair distance of every non-root node.

    The mean squared distance over the unordered pairs of a node's data uses
    :math:`\sum_{n<n'}\lVert x_n-x_{n'}\rVert^2 = N_z \sum_n \lVert x_n-\bar x_z\rVert^2`,
    so ``inner = 2 S_z / (N_z - 1)`` with :math:`S_z = \sum_{n\in z}\lVert x_n - \bar
    x_z\rVert^2` (twice the unbiased total variance), at a cost linear in ``N``.

    Args:
        x: ``(N, D)`` data (float; the dtype is kept).
        tree: a :class:`pyromodels.bnp.Tree` with every datum seated, or ``(N, L + 1)`` paths.

    Returns:
        :class:`NodeStatistics`.

    Raises:
        ValueError: bad paths (wrong shape, unseated rows, several roots, a node at two levels
            or below two parents) or ``x`` without one row per datum.
        TypeError: non-integer paths or non-numeric ``x``.

    Example:
        >>> s = node_statistics(torch.tensor([[0.0], [2.0], [6.0]]), [[0, 1], [0, 1], [0, 2]])
        >>> s.node.tolist(), s.count.tolist(), s.inner.tolist(), s.kept.tolist()
        ([1, 2], [2, 1], [4.0, nan], [True, True])
    """
    paths = _as_paths(tree)
    x = _as_data(x, paths.shape[0])
    cols = torch.from_numpy(paths)
    parts = {key: [] for key in NodeStatistics._fields}
    for lv in range(1, paths.shape[1]):
        node, inv, count = torch.unique(cols[:, lv], return_inverse=True, return_counts=True)
        parent = torch.zeros_like(node).scatter_(0, inv, cols[:, lv - 1])
        centroid = torch.zeros(len(node), x.shape[1], dtype=x.dtype).index_add_(0, inv, x)
        centroid = centroid / count.unsqueeze(1).to(x.dtype)
        spread = torch.zeros(len(node), dtype=x.dtype).index_add_(
            0, inv, (x - centroid[inv]).square().sum(1))
        inner = torch.where(count > 1, 2.0 * spread / (count - 1).clamp(min=1).to(x.dtype),
                            torch.full_like(spread, math.nan))
        _, parent_inv, siblings = torch.unique(parent, return_inverse=True, return_counts=True)
        for key, value in zip(NodeStatistics._fields,
                              (node, parent, torch.full_like(node, lv), count, centroid, inner,
                               siblings[parent_inv] > 1)):
            parts[key].append(value)
    return NodeStatistics(**{key: torch.cat(value) for key, value in parts.items()})


def _undefined(what: str) -> float:
    warnings.warn(f"{what}; returning nan", HierarchyMetricWarning, stacklevel=3)
    return math.nan


def aid(x, tree, *, collapse: bool = True) -> float:
    r"""Average inner distance: the mean over non-root nodes of their mean pair distance.

    .. math::
       \mathrm{AID} = \frac{1}{M}\sum_{z:\,N_z\ge 2} \frac{2}{N_z(N_z-1)}
       \sum_{n>n'\in z}\lVert x_n - x_{n'}\rVert_2^2

    (RBHMC paper, Sec. 5, "AID"; lower is better). Singleton nodes are skipped and ``M``
    counts the nodes kept; see the module docstring for the conventions.

    Args:
        x: ``(N, D)`` data.
        tree: a :class:`pyromodels.bnp.Tree` with every datum seated, or ``(N, L + 1)``
            integer paths (column 0 the root).
        collapse: score the tree with sibling-less nodes merged into their parents (default,
            the paper's display form) or every node of the fixed-depth tree.

    Returns:
        AID as a float; ``nan`` with a :class:`HierarchyMetricWarning` when no scored node
        holds two data.

    Example:
        >>> x = torch.tensor([[0.0, 0.0], [0.0, 2.0], [5.0, 0.0], [5.0, 4.0]])
        >>> aid(x, [[0, 1], [0, 1], [0, 2], [0, 2]])   # (4 + 16) / 2
        10.0
    """
    collapse = check_bool(collapse, "collapse")
    stats = node_statistics(x, tree)
    use = (stats.count > 1) & (stats.kept if collapse else torch.ones_like(stats.kept))
    if not bool(use.any()):
        return _undefined("AID is undefined: no scored non-root node holds two or more data")
    return float(stats.inner[use].mean())


def aod(x, tree, *, collapse: bool = True, paper_literal: bool = False) -> float:
    r"""Average outer distance: the mean squared distance between centroids of sibling nodes.

    .. math::
       \mathrm{AOD} = \frac{1}{P}\sum_{\{z, z'\}:\ z' \in S(z)}
       \lVert \bar x_z - \bar x_{z'} \rVert_2^2,

    over the ``P`` unordered pairs of distinct children of a common parent, at every level
    (RBHMC paper, Sec. 5, "AOD"; higher is better). The paper's formula sums over ordered pairs
    and divides by the number of pairs, which doubles the value; ``paper_literal=True`` returns
    that, exactly ``2 * aod(x, tree)``.

    Args:
        x: ``(N, D)`` data.
        tree: a :class:`pyromodels.bnp.Tree` with every datum seated, or ``(N, L + 1)``
            integer paths.
        collapse: accepted for symmetry with :func:`aid`; merging only children never changes
            a sibling group, so the value is the same.
        paper_literal: count every sibling pair twice, as the printed formula does.

    Returns:
        AOD as a float; ``nan`` with a :class:`HierarchyMetricWarning` for a tree with a single
        path (no node has a sibling).

    Example:
        >>> x = torch.tensor([[0.0, 0.0], [0.0, 2.0], [6.0, 1.0]])
        >>> aod(x, [[0, 1], [0, 1], [0, 2]])   # centroids (0, 1) and (6, 1)
        36.0
    """
    check_bool(collapse, "collapse")
    paper_literal = check_bool(paper_literal, "paper_literal")
    stats = node_statistics(x, tree)
    total = stats.centroid.new_zeros(())
    pairs = 0
    for lv in torch.unique(stats.level).tolist():
        at = stats.level == lv
        parent, centroid = stats.parent[at], stats.centroid[at]
        for p in torch.unique(parent).tolist():
            c = centroid[parent == p]
            k = c.shape[0]
            if k > 1:
                diff = c.unsqueeze(0) - c.unsqueeze(1)
                total = total + diff.square().sum() / 2  # each unordered pair once
                pairs += k * (k - 1) // 2
    if pairs == 0:
        return _undefined("AOD is undefined: the tree has a single path, so no node has a "
                          "sibling")
    value = float(total / pairs)
    return 2.0 * value if paper_literal else value


def f_measure_by_level(y_true, tree) -> np.ndarray:
    """Steinbach F-measure of the partition at each level ``1..L`` of a tree.

    The nodes at level ``l`` cut the data into a flat clustering;
    :func:`pyromodels.metrics.f_measure_per_level` scores each against ``y_true`` (the RBHMC
    paper's Figs. 6 and 10). Collapsing does not change these partitions, so the fixed-depth
    tree is used.

    Args:
        y_true: ``(N,)`` reference classes.
        tree: a :class:`pyromodels.bnp.Tree` with every datum seated, or ``(N, L + 1)`` paths.

    Returns:
        ``float64`` array of shape ``(L,)``, level 1 first.

    Example:
        >>> f_measure_by_level([0, 0, 1, 1], [[0, 1, 3], [0, 1, 4], [0, 2, 5], [0, 2, 5]]).tolist()
        [1.0, 0.8333333333333333]
    """
    paths = _as_paths(tree)
    return f_measure_per_level(y_true, paths[:, 1:].T)
