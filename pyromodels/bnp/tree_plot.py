"""A dendrogram-like drawing of a :class:`~pyromodels.bnp.Tree` with the data named at its
leaves (as in the RBHMC paper's hierarchy figures).

Each seated datum gets one slot along the breadth axis and one text label; a leaf sits over
the middle of its data, an internal node over the middle of its children, and each node at
its level along the depth axis (leaves at level ``L``). Edges are elbows, as in a dendrogram.
With ``collapse=True`` sibling-less nodes are merged into their parents first
(:meth:`Tree.collapsed`). The figure is a ``matplotlib.figure.Figure`` (no pyplot state;
matplotlib is imported on the first call).

Example:
    >>> from pyromodels.bnp import Tree
    >>> tree = Tree.from_paths([[0, 1, 2], [0, 1, 3], [0, 4, 5]])
    >>> fig = plot_tree(tree, names=["cat", "lion", "trout"])
    >>> sorted(t.get_text() for t in fig.axes[0].texts)
    ['cat', 'lion', 'trout']
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..checks import check_bool, check_in
from .tree import Tree

if TYPE_CHECKING:
    from matplotlib.figure import Figure

__all__ = ["plot_tree"]


def _layout(tree: Tree, collapse: bool):
    """``(children, level, members, root)`` of the tree to draw."""
    if collapse:
        c = tree.collapsed()
        return c.children, c.level, c.members, c.root
    children = {z: tree.children(z) for z in tree.nodes}
    level = {z: tree.level(z) for z in tree.nodes}
    members = {z: tuple(tree.members(z).tolist()) for z in tree.nodes}
    return children, level, members, tree.root


def plot_tree(tree: Tree, names=None, collapse: bool = True, orientation: str = "horizontal",
              show_ids: bool = False, figsize: tuple[float, float] | None = None) -> Figure:
    """Draw ``tree`` with each datum's name beside the leaf that holds it.

    Args:
        tree: the tree (unseated data are not drawn).
        names: ``N`` labels, one per datum (default: the datum indices).
        collapse: merge sibling-less nodes into their parents first.
        orientation: ``"horizontal"`` (root on the left, names on the right; suits long
            names) or ``"vertical"`` (root on top, names below, rotated).
        show_ids: write each node's id beside it.
        figsize: figure size in inches (default: grows with the number of data).

    Returns:
        ``matplotlib.figure.Figure`` with one axes; ``fig.axes[0].texts`` holds one label per
        seated datum (plus the node ids with ``show_ids``).
    """
    if not isinstance(tree, Tree):
        raise TypeError(f"tree must be a pyromodels.bnp.Tree, got {type(tree).__name__}")
    n = tree.num_points
    if names is None:
        names = [str(i) for i in range(n)]
    elif isinstance(names, str) or not hasattr(names, "__len__"):
        raise TypeError(f"names must be a sequence of {n} labels (one per datum), got "
                        f"{type(names).__name__}")
    elif len(names) != n:
        raise ValueError(f"names must hold {n} labels (one per datum), got {len(names)}")
    collapse = check_bool(collapse, "collapse")
    show_ids = check_bool(show_ids, "show_ids")
    check_in(orientation, "orientation", ("horizontal", "vertical"))
    children, level, members, root = _layout(tree, collapse)
    depth = tree.depth

    slot: dict[int, float] = {}  # datum -> breadth coordinate
    where: dict[int, tuple[float, float]] = {}  # node -> (depth coordinate, breadth coordinate)

    def place(z: int) -> float:
        if children[z]:
            b = sum(place(c) for c in children[z]) / len(children[z])
            where[z] = (level[z], b)
            return b
        for m in members[z]:
            slot[m] = float(len(slot))
        b = sum(slot[m] for m in members[z]) / max(len(members[z]), 1)
        where[z] = (depth if members[z] else level[z], b)
        return b

    place(root)
    horizontal = orientation == "horizontal"

    def xy(d: float, b: float) -> tuple[float, float]:
        return (d, -b) if horizontal else (b, -d)

    size = max(len(slot), 1)
    if figsize is None:
        long_side = max(3.0, 0.28 * size)
        figsize = (2.0 + 1.2 * depth, long_side) if horizontal else (long_side, 2.0 + 1.2 * depth)
    from matplotlib.figure import Figure  # imported here: importing bnp stays light

    fig = Figure(figsize=figsize)
    ax = fig.add_subplot()
    line = {"color": "0.25", "linewidth": 1.0}
    for z, kids in children.items():
        d0, b0 = where[z]
        for c in kids:
            d1, b1 = where[c]
            ax.plot(*zip(xy(d0, b0), xy(d0, b1), xy(d1, b1)), **line)
        if not kids:
            for m in members[z]:  # a short fan from the leaf to each of its data
                ax.plot(*zip(xy(d0, b0), xy(depth + 0.25, slot[m])), **line)
    for z, (d, b) in where.items():
        ax.plot(*xy(d, b), marker="o", markersize=4, color="C0" if children[z] else "C1")
        if show_ids:
            ax.annotate(str(z), xy(d, b), textcoords="offset points", xytext=(3, 3), fontsize=7)
    for m, b in slot.items():
        x, y = xy(depth + 0.3, b)
        ax.text(x, y, str(names[m]), fontsize=8, va="center" if horizontal else "top",
                ha="left" if horizontal else "center", rotation=0 if horizontal else 90)
    ax.set_axis_off()
    if horizontal:
        ax.set_xlim(-0.2, depth + 1.6)
        ax.set_ylim(-size, 1)
    else:
        ax.set_ylim(-depth - 1.6, 0.2)
        ax.set_xlim(-1, size)
    fig.tight_layout()
    return fig
