"""Kernels for the Potts model: one sequential Gauss-Seidel sweep, a greedy colouring, and the
grouping of nodes and arcs by colour.

The two loops are plain Python over NumPy arrays (``*_py``) and, when numba is installed
(``HAVE_NUMBA``), the same functions compiled (``sequential_sweep``, ``greedy_coloring``).
Which one runs is picked outside this package, by one dispatcher per computation
(:func:`pyromodels.crowd.mrf.icm.sequential_sweep`,
:func:`pyromodels.crowd.mrf.energy.greedy_coloring`). The vectorised torch path for the same
sweep is the colour-class schedule in :mod:`pyromodels.crowd.mrf.icm`, which the tests check
against these kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

try:  # pragma: no cover - exercised by whichever branch the environment has
    from numba import njit

    HAVE_NUMBA = True
except ImportError:  # pragma: no cover
    HAVE_NUMBA = False

__all__ = ["HAVE_NUMBA", "sequential_sweep", "greedy_coloring", "sequential_sweep_py",
           "greedy_coloring_py", "ColorClass", "split_by_color"]


def sequential_sweep_py(indptr, indices, weights, wdeg, cost, labels, order):
    """Visit the nodes in ``order`` and give each the label of least local cost, in place.

    Node ``n`` scores label ``k`` as ``0.5 * (wdeg[n] - sum_{a in arcs(n), labels[dst_a] = k}
    weights[a]) + cost[n, k]`` using the labels as they are at that moment (Gauss-Seidel). A
    node keeps its label unless another scores strictly lower; among strictly lower labels the
    smallest code wins.

    Args:
        indptr: int64 ``(N + 1,)`` CSR row pointer of the arcs.
        indices: int64 ``(D,)`` arc targets, node after node.
        weights: float64 ``(D,)`` arc weights (the coupling seen from the source node).
        wdeg: float64 ``(N,)`` weighted degree ``sum_a weights[a]`` per source node.
        cost: float64 ``(N, K)`` unary cost (``-log b``, plus noise for a Gibbs draw).
        labels: int64 ``(N,)`` current labels, overwritten.
        order: int64 ``(T,)`` nodes to visit, in order.

    Returns:
        The number of nodes whose label changed.
    """
    num_classes = cost.shape[1]
    agree = np.empty(num_classes)
    changed = 0
    for t in range(order.shape[0]):
        n = order[t]
        for k in range(num_classes):
            agree[k] = 0.0
        for a in range(indptr[n], indptr[n + 1]):
            agree[labels[indices[a]]] += weights[a]
        current = labels[n]
        best = current
        best_score = 0.5 * (wdeg[n] - agree[current]) + cost[n, current]
        for k in range(num_classes):
            score = 0.5 * (wdeg[n] - agree[k]) + cost[n, k]
            if score < best_score:
                best_score = score
                best = k
        if best != current:
            labels[n] = best
            changed += 1
    return changed


def greedy_coloring_py(indptr, indices):
    """Greedy proper colouring: node ``n`` (in code order) takes the smallest colour that none
    of its lower-coded neighbours has. Uses at most ``max degree + 1`` colours.

    Returns:
        int64 ``(N,)`` colours ``0, 1, ...``.
    """
    n_nodes = indptr.shape[0] - 1
    colors = np.full(n_nodes, -1, dtype=np.int64)
    max_deg = 0
    for n in range(n_nodes):
        max_deg = max(max_deg, indptr[n + 1] - indptr[n])
    taken = np.full(max_deg + 1, -1, dtype=np.int64)
    for n in range(n_nodes):
        for a in range(indptr[n], indptr[n + 1]):
            c = colors[indices[a]]
            if c >= 0:
                taken[c] = n
        c = 0
        while taken[c] == n:
            c += 1
        colors[n] = c
    return colors


if HAVE_NUMBA:
    sequential_sweep = njit(cache=True)(sequential_sweep_py)
    greedy_coloring = njit(cache=True)(greedy_coloring_py)


@dataclass(frozen=True)
class ColorClass:
    """The nodes of one colour and the arcs leaving them (for vectorised Gauss-Seidel)."""

    nodes: torch.Tensor  # (n_c,) node codes
    arc_pos: torch.Tensor  # (a_c,) position in ``nodes`` of each arc's source
    arc_dst: torch.Tensor  # (a_c,) each arc's target node
    arc_weight: torch.Tensor  # (a_c,) each arc's weight


def split_by_color(colors: torch.Tensor, src: torch.Tensor, dst: torch.Tensor,
                   weight: torch.Tensor) -> tuple[ColorClass, ...]:
    """Group nodes (``colors`` ``(N,)``) and arcs (``src``, ``dst``, ``weight`` ``(D,)``) by the
    colour of the node (of the arc's source), in colour order."""
    num = int(colors.max()) + 1
    sizes = torch.bincount(colors, minlength=num)
    nodes = torch.argsort(colors, stable=True)
    starts = torch.cumsum(sizes, 0) - sizes
    pos = torch.empty_like(colors)
    pos[nodes] = torch.arange(len(colors), device=colors.device) - starts.repeat_interleave(sizes)
    arc_colors = colors[src]
    arcs = torch.argsort(arc_colors, stable=True)
    arc_sizes = torch.bincount(arc_colors, minlength=num).tolist()
    return tuple(
        ColorClass(n, pos[src[a]], dst[a], weight[a])
        for n, a in zip(torch.split(nodes, sizes.tolist()), torch.split(arcs, arc_sizes))
    )
