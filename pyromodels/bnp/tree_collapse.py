"""A tree with its sibling-less nodes merged into their parents (RBHMC paper, Sec. 4.5).

The nested CRP often opens chains of single children; for display, and for the AID/AOD
metrics, the paper merges "any node with no siblings" into its parent. The merged tree keeps
the id of the upper node of each chain, and each kept node remembers the original ids merged
into it. Its levels are the kept nodes' original levels, so it no longer has a fixed depth.

Example:
    >>> from pyromodels.bnp import Tree
    >>> c = Tree.from_paths([[0, 1, 2], [0, 1, 3], [0, 4, 5]]).collapsed()
    >>> c.children[0], c.leaves, c.merged[4]
    ((1, 4), (2, 3, 4), (4, 5))
    >>> c.members[4]
    (2,)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["CollapsedTree", "collapse"]


@dataclass(frozen=True)
class CollapsedTree:
    """The merged tree (plain Python containers keyed by the kept original ids).

    Attributes:
        root: the root's id.
        parent: ``{node: parent}`` for every kept non-root node.
        children: ``{node: tuple of children ids, ascending}`` for every kept node.
        level: ``{node: its level in the original tree}``.
        members: ``{node: ascending tuple of the data through it}``.
        merged: ``{node: the original ids merged into it, top-down, itself first}``.
    """

    root: int
    parent: dict
    children: dict
    level: dict
    members: dict
    merged: dict

    @property
    def nodes(self) -> tuple[int, ...]:
        return tuple(sorted(self.children))

    @property
    def leaves(self) -> tuple[int, ...]:
        """Kept nodes without children (each holds the data in ``members``)."""
        return tuple(z for z in self.nodes if not self.children[z])

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        return tuple(sorted((p, z) for z, p in self.parent.items()))

    def siblings(self, z: int) -> tuple[int, ...]:
        """The other children of ``z``'s parent (none for the root)."""
        if z not in self.children:
            raise ValueError(f"node {z} is not in the collapsed tree")
        if z == self.root:
            return ()
        return tuple(c for c in self.children[self.parent[z]] if c != z)


def collapse(root: int, parent: dict, children: dict, level: dict,
             paths: np.ndarray) -> CollapsedTree:
    """Merge every non-root node that is its parent's only child into that parent.

    Args:
        root, parent, children, level: the tree (``children`` lists ascending).
        paths: ``(N, L + 1)`` node ids (rows of -1 for unseated data).

    Returns:
        :class:`CollapsedTree`.
    """
    rep = {root: root}
    merged: dict[int, list[int]] = {root: [root]}
    kept_parent: dict[int, int] = {}
    order = [root]
    for z in order:  # breadth-first: a parent is resolved before its children
        kids = children[z]
        for c in kids:
            order.append(c)
            if len(kids) == 1:
                rep[c] = rep[z]
                merged[rep[z]].append(c)
            else:
                rep[c] = c
                merged[c] = [c]
                kept_parent[c] = rep[z]
    kept_children: dict[int, list[int]] = {z: [] for z in merged}
    for c, p in kept_parent.items():
        kept_children[p].append(c)
    members = {}
    for z in merged:
        lv = level[z]
        members[z] = tuple(np.flatnonzero(paths[:, lv] == z).tolist())
    return CollapsedTree(
        root=root,
        parent=kept_parent,
        children={z: tuple(sorted(c)) for z, c in kept_children.items()},
        level={z: level[z] for z in merged},
        members=members,
        merged={z: tuple(m) for z, m in merged.items()},
    )
