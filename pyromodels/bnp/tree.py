r"""A mutable tree of fixed depth whose root-to-leaf paths hold the data (the BHMC hierarchy).

The tree has depth :math:`L \ge 1`: the root :math:`z_0` is at level 0 and every datum ``n``
follows a path :math:`v_n = (z_0, v_{n1}, \dots, v_{nL})` to a leaf at level ``L`` (RBHMC paper,
Sec. 2 and Fig. 2). :math:`N_z` counts the data whose path passes through ``z``; a node lives
exactly while :math:`N_z \ge 1` (the root always lives). Node ids are stable integers, handed
out in increasing order and never given to another node, so per-node parameters can be kept in
dictionaries keyed by id across births and deaths.

A path passed to :meth:`Tree.add_path` holds, level by level, existing node ids and then
:data:`NEW` markers: once a new node opens, every deeper node is new (nested CRP).

Example:
    >>> tree = Tree.from_paths([[0, 1, 2], [0, 1, 3], [0, 4, 5], [NEW, NEW, NEW]])
    >>> tree.count(1), tree.children(1), tree.siblings(2)
    (2, (2, 3), (3,))
    >>> tree.level_labels(1).tolist()  # datum 3 is not seated yet
    [0, 0, 1, -1]
    >>> edit = tree.add_path(3, [0, 1, NEW])  # a fourth datum opens a leaf under node 1
    >>> edit.new_path, edit.born
    ((0, 1, 6), (6,))
"""

from __future__ import annotations

import bisect
from typing import NamedTuple

import numpy as np
import torch

from ..checks import check_int
from .tree_collapse import CollapsedTree, collapse
from .tree_paths import UNSEATED, as_node_ids, check_paths

__all__ = ["NEW", "Tree", "PathEdit", "CollapsedTree"]

NEW = UNSEATED
"""Marker for a node that does not exist yet in a path (and the row of an unseated datum)."""


class PathEdit(NamedTuple):
    """What one :meth:`Tree.add_path` / :meth:`Tree.remove_path` / :meth:`Tree.move_path` did.

    Attributes:
        datum: the datum ``n``.
        old_path: its ``L + 1`` node ids before the edit (``None`` if it was unseated).
        new_path: its node ids after the edit (``None`` if it is now unseated).
        born: ids of the nodes opened by the edit, top-down.
        died: ids of the nodes removed by the edit (their count reached 0), top-down.
    """

    datum: int
    old_path: tuple[int, ...] | None
    new_path: tuple[int, ...] | None
    born: tuple[int, ...]
    died: tuple[int, ...]


class Tree:
    """Fixed-depth tree with stable node ids, per-node counts and per-datum paths.

    Args:
        depth: ``L >= 1``, the level of the leaves.
        num_points: ``N >= 1``, the number of data (all start unseated; seat them with
            :meth:`add_path`).
        root: the root's id (``>= 0``); new nodes get ids from ``root + 1`` on.

    Raises:
        ValueError: ``'depth must be an integer >= 1'``, ``'num_points must be ...'``.

    Example:
        >>> tree = Tree(depth=2, num_points=2)
        >>> tree.add_path(0, [0, NEW, NEW]).new_path
        (0, 1, 2)
        >>> tree.add_path(1, [0, 1, NEW]).new_path, tree.count(1)
        ((0, 1, 3), 2)
    """

    def __init__(self, depth: int, num_points: int, root: int = 0):
        self._depth = check_int(depth, "depth", minimum=1)
        self._num_points = check_int(num_points, "num_points", minimum=1)
        self._root = check_int(root, "root", minimum=0)
        self._paths = np.full((self._num_points, self._depth + 1), NEW, dtype=np.int64)
        self._parent = {self._root: NEW}
        self._children: dict[int, list[int]] = {self._root: []}
        self._level = {self._root: 0}
        self._count = {self._root: 0}
        self._next_id = self._root + 1

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_paths(cls, paths, root: int | None = None, next_id: int | None = None) -> Tree:
        """Build the tree whose data follow ``paths``, keeping their node ids.

        Args:
            paths: ``(N, L + 1)`` integer node ids; column 0 is the root (the same in every
                row), each node id appears at one level only and always below the same
                parent. A row of :data:`NEW` (-1) is an unseated datum.
            root: the root's id (needed only when no datum is seated; default 0 then).
            next_id: the next id to hand out (default: one more than the largest id).

        Raises:
            ValueError: a wrong shape, negative ids, rows mixing ids and -1, several roots,
                a node at two levels or below two parents, ``next_id`` not above every id.
            TypeError: non-integer paths.

        Example:
            >>> Tree.from_paths([[0, 1, 2], [0, 1, 2]]).nodes
            (0, 1, 2)
        """
        a, root = check_paths(paths, root)
        tree = cls(a.shape[1] - 1, a.shape[0], root)
        top = int(a.max(initial=root))
        if next_id is None:
            next_id = top + 1
        next_id = check_int(next_id, "next_id")
        if next_id <= top:
            raise ValueError(f"next_id must be > every node id in paths (max {top}), got {next_id}")
        tree._next_id = next_id
        for n in np.flatnonzero(a[:, 0] != NEW).tolist():
            tree._seat(n, a[n].tolist())
        return tree

    @classmethod
    def from_dict(cls, data: dict) -> Tree:
        """Inverse of :meth:`to_dict`."""
        if not isinstance(data, dict) or {"paths", "root", "next_id"} - set(data):
            raise ValueError("data must be a dict with keys 'paths', 'root' and 'next_id' "
                             "(as written by Tree.to_dict)")
        return cls.from_paths(data["paths"], root=data["root"], next_id=data["next_id"])

    def to_dict(self) -> dict:
        """``{'depth', 'root', 'next_id', 'paths'}`` (plain Python; JSON-serialisable)."""
        return {"depth": self._depth, "root": self._root, "next_id": self._next_id,
                "paths": self._paths.tolist()}

    def copy(self) -> Tree:
        """An independent copy (same ids, same next id)."""
        new = object.__new__(Tree)
        new._depth, new._num_points, new._root = self._depth, self._num_points, self._root
        new._paths = self._paths.copy()
        new._parent, new._level = dict(self._parent), dict(self._level)
        new._count = dict(self._count)
        new._children = {z: list(c) for z, c in self._children.items()}
        new._next_id = self._next_id
        return new

    def __eq__(self, other) -> bool:
        return isinstance(other, Tree) and self.to_dict() == other.to_dict()

    def __repr__(self) -> str:
        seated = int((self._paths[:, 0] != NEW).sum())
        return (f"Tree(depth={self._depth}, num_points={self._num_points}, seated={seated}, "
                f"nodes={len(self._count)})")

    # ----------------------------------------------------------------- queries
    @property
    def depth(self) -> int:
        """``L``, the level of the leaves."""
        return self._depth

    @property
    def num_points(self) -> int:
        """``N``, the number of data (seated or not)."""
        return self._num_points

    @property
    def root(self) -> int:
        """The root's id."""
        return self._root

    @property
    def next_id(self) -> int:
        """The id the next new node will get (all ids below it have been used)."""
        return self._next_id

    @property
    def nodes(self) -> tuple[int, ...]:
        """Ids of the living nodes, ascending."""
        return tuple(sorted(self._count))

    @property
    def num_nodes(self) -> int:
        return len(self._count)

    @property
    def paths(self) -> torch.Tensor:
        """``(N, L + 1)`` int64 copy of the paths (a row of -1 for an unseated datum)."""
        return torch.from_numpy(self._paths.copy())

    @property
    def seated(self) -> torch.Tensor:
        """``(N,)`` bool: which data have a path."""
        return torch.from_numpy(self._paths[:, 0] != NEW)

    @property
    def edges(self) -> tuple[tuple[int, int], ...]:
        """``(parent, child)`` pairs, sorted."""
        return tuple(sorted((p, z) for z, p in self._parent.items() if p != NEW))

    @property
    def internal_nodes(self) -> tuple[int, ...]:
        r""":math:`I_H`: the nodes with at least one child, ascending."""
        return tuple(sorted(z for z, c in self._children.items() if c))

    @property
    def leaves(self) -> tuple[int, ...]:
        """The nodes at level ``L``, ascending."""
        return self.nodes_at_level(self._depth)

    def __contains__(self, z) -> bool:
        return z in self._count

    def _check_node(self, z) -> int:
        z = check_int(z, "z")
        if z not in self._count:
            raise ValueError(f"node {z} is not in the tree")
        return z

    def _check_datum(self, n) -> int:
        return check_int(n, "n", minimum=0, maximum=self._num_points - 1)

    def parent(self, z: int) -> int:
        """The parent's id (:data:`NEW` for the root)."""
        return self._parent[self._check_node(z)]

    def children(self, z: int) -> tuple[int, ...]:
        """The children's ids, ascending (the order in which they opened)."""
        return tuple(self._children[self._check_node(z)])

    def level(self, z: int) -> int:
        return self._level[self._check_node(z)]

    def count(self, z: int) -> int:
        """:math:`N_z`, the number of seated data whose path passes through ``z``."""
        return self._count[self._check_node(z)]

    def siblings(self, z: int) -> tuple[int, ...]:
        """:math:`S(z)`: the other children of ``z``'s parent (none for the root)."""
        p = self._parent[self._check_node(z)]
        return () if p == NEW else tuple(c for c in self._children[p] if c != z)

    def nodes_at_level(self, level: int) -> tuple[int, ...]:
        level = check_int(level, "level", minimum=0, maximum=self._depth)
        return tuple(sorted(z for z, lv in self._level.items() if lv == level))

    def path(self, n: int) -> tuple[int, ...] | None:
        """Datum ``n``'s ``L + 1`` node ids, or ``None`` if it is unseated."""
        row = self._paths[self._check_datum(n)]
        return None if row[0] == NEW else tuple(row.tolist())

    def members(self, z: int) -> torch.Tensor:
        """Ascending int64 indices of the data whose path passes through ``z``."""
        z = self._check_node(z)
        return torch.from_numpy(np.flatnonzero(self._paths[:, self._level[z]] == z))

    def level_labels(self, level: int) -> torch.Tensor:
        """The partition of the data by their node at ``level``, as canonical labels.

        Returns:
            ``(N,)`` int64: blocks numbered ``0, 1, ...`` in order of first appearance; -1 for
            unseated data.
        """
        level = check_int(level, "level", minimum=0, maximum=self._depth)
        seen: dict[int, int] = {}
        out = [NEW if z == NEW else seen.setdefault(z, len(seen))
               for z in self._paths[:, level].tolist()]
        return torch.tensor(out, dtype=torch.int64)

    def collapsed(self) -> CollapsedTree:
        """The tree with every node that has no sibling merged into its parent (for display
        and the AID/AOD metrics, as in the paper's Sec. 4.5); original ids are kept."""
        return collapse(self._root, self._parent, self._children, self._level, self._paths)

    # ----------------------------------------------------------------- edits
    def _resolve(self, path) -> list[int]:
        """Check ``path`` for datum ``n`` and return it as a list (NEW markers kept)."""
        a = as_node_ids(path, "path")
        if a.shape != (self._depth + 1,):
            raise ValueError(f"path must have shape ({self._depth + 1},) (root first), got "
                             f"{tuple(a.shape)}")
        row = a.tolist()
        if row[0] != self._root:
            raise ValueError(f"path must start at the root {self._root}, got {row[0]}")
        opened = False
        for lv in range(1, len(row)):
            z = row[lv]
            if z == NEW:
                opened = True
                continue
            if opened:
                raise ValueError(f"path has the existing node {z} at level {lv} below a new "
                                 f"node (once a node is new, every deeper node is new)")
            if z not in self._count:
                raise ValueError(f"path holds node {z}, which is not in the tree (use {NEW} "
                                 f"for a new node)")
            if self._parent[z] != row[lv - 1]:
                raise ValueError(f"path holds node {z} at level {lv} below node {row[lv - 1]}, "
                                 f"but its parent is {self._parent[z]}")
        return row

    def _seat(self, n: int, row: list[int]) -> tuple[int, ...]:
        """Seat datum ``n`` on the checked ``row`` and return the born ids: NEW markers get
        fresh ids, other missing ids are created as given (construction and undo only)."""
        born = []
        for lv in range(1, len(row)):
            z, p = row[lv], row[lv - 1]
            if z == NEW or z not in self._count:
                if z == NEW:
                    z = self._next_id
                    self._next_id += 1
                row[lv] = z
                self._parent[z], self._level[z], self._count[z] = p, lv, 0
                self._children[z] = []
                bisect.insort(self._children[p], z)
                born.append(z)
        for z in row:
            self._count[z] += 1
        self._paths[n] = row
        return tuple(born)

    def _unseat(self, n: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
        row = tuple(self._paths[n].tolist())
        died = []
        for z in row:
            self._count[z] -= 1
            if self._count[z] == 0 and z != self._root:
                died.append(z)
        for z in reversed(died):  # bottom-up: a child leaves before its parent
            self._children[self._parent[z]].remove(z)
            del self._parent[z], self._level[z], self._count[z], self._children[z]
        self._paths[n] = NEW
        return row, tuple(died)

    def add_path(self, n: int, path) -> PathEdit:
        """Seat the unseated datum ``n`` on ``path``, opening the nodes marked :data:`NEW`.

        Args:
            n: datum index in ``[0, N)``.
            path: ``L + 1`` ids (sequence or int64 tensor): the root, existing nodes each a
                child of the one before, then :data:`NEW` markers.

        Returns:
            :class:`PathEdit` with the realised path and the born ids.
        """
        n = self._check_datum(n)
        if self._paths[n, 0] != NEW:
            raise ValueError(f"datum {n} is already seated; remove_path({n}) first")
        row = self._resolve(path)
        born = self._seat(n, row)
        return PathEdit(n, None, tuple(row), born, ())

    def remove_path(self, n: int) -> PathEdit:
        """Unseat datum ``n``; nodes whose count reaches 0 die (with their descendants,
        which then have count 0 too)."""
        n = self._check_datum(n)
        if self._paths[n, 0] == NEW:
            raise ValueError(f"datum {n} is not seated")
        row, died = self._unseat(n)
        return PathEdit(n, row, None, (), died)

    def move_path(self, n: int, path) -> PathEdit:
        """Move the seated datum ``n`` to ``path`` (its ids refer to the tree *without* ``n``:
        nodes that die when ``n`` leaves cannot be named, use :data:`NEW`)."""
        removed = self.remove_path(n)
        try:
            added = self.add_path(n, path)
        except (ValueError, TypeError):
            self.undo(removed)
            raise
        return PathEdit(n, removed.old_path, added.new_path, added.born, removed.died)

    def undo(self, edit: PathEdit) -> None:
        """Revert ``edit`` (the latest edit of its datum), restoring the old path with its
        original ids: nodes born by the edit die, nodes that died come back with their ids."""
        if not isinstance(edit, PathEdit):
            raise TypeError(f"edit must be a PathEdit, got {type(edit).__name__}")
        n = self._check_datum(edit.datum)
        if self.path(n) != edit.new_path:
            raise ValueError(f"edit is not the latest edit of datum {n}: its path is "
                             f"{self.path(n)}, the edit left {edit.new_path}")
        if edit.old_path is not None:
            missing = {z for z in edit.old_path if z not in self._count}
            if not missing <= set(edit.died) or set(edit.died) & set(self._count):
                raise ValueError(f"edit does not match the tree: its old path holds nodes "
                                 f"{sorted(missing)}, it removed {list(edit.died)}")
        if edit.new_path is not None:
            self._unseat(n)
        if edit.old_path is not None:
            self._seat(n, list(edit.old_path))

    # ----------------------------------------------------------------- checks
    def validate(self) -> None:
        """Raise ``ValueError`` unless counts, parents, levels and paths agree."""
        recount: dict[int, int] = {self._root: 0}
        for row in self._paths[self._paths[:, 0] != NEW].tolist():
            if row[0] != self._root:
                raise ValueError(f"a path starts at {row[0]}, not at the root {self._root}")
            for lv, z in enumerate(row):
                recount[z] = recount.get(z, 0) + 1
                if self._level.get(z) != lv or (lv and self._parent.get(z) != row[lv - 1]):
                    raise ValueError(f"node {z} on a path disagrees with its level or parent")
        if recount != self._count:
            raise ValueError(f"counts {self._count} disagree with the paths' {recount}")
        for z, p in self._parent.items():
            if z >= self._next_id or (p != NEW and z not in self._children[p]):
                raise ValueError(f"node {z}: id at or above next_id, or missing from its parent")
            if sorted(self._children[z]) != self._children[z]:
                raise ValueError(f"node {z}: children out of order")
