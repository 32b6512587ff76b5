"""The move records of the structure-search operators: one frozen dataclass per operator,
with ``apply(tree) -> LatentTree`` and ``describe()``.

The operators' definitions, and the choices made where they leave room, are given in
:mod:`pyromodels.trees.operators`, which also lists the candidate moves of a tree.
Pouches are referred to by their coordinates (a tuple of ints), latent nodes by name.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..checks import check_int
from .structure import LatentTree

__all__ = [
    "Move", "StateIntroduction", "StateDeletion", "NodeIntroduction", "NodeDeletion",
    "NodeRelocation", "Pouching", "Unpouching",
]

Ref = str | tuple[int, ...]  # a latent node's name or a pouch's coordinates


# -- a mutable draft of a tree, used to build the result of a move ------------------------

class TreeDraft:
    """Latent nodes by name (order kept), their cardinalities and parents, and pouches."""

    def __init__(self, tree: LatentTree):
        self.names = list(tree.names)
        self.cards = dict(zip(tree.names, tree.cardinalities))
        self.parent = {n: (None if p is None else tree.names[p])
                       for n, p in zip(tree.names, tree.parents)}
        self.pouches = [(tuple(block), tree.names[p])
                        for block, p in zip(tree.pouches, tree.pouch_parents)]
        self.width = tree.num_coordinates

    def neighbours(self, name: str) -> list[str]:
        """Latent neighbours of ``name`` (parent first, then children in node order)."""
        out = [] if self.parent[name] is None else [self.parent[name]]
        return out + [n for n in self.names if self.parent[n] == name]

    def reorient(self, root: str, edges: list[tuple[str, str]]) -> None:
        """Set every parent from undirected latent ``edges``, directed away from ``root``."""
        adj = {n: set() for n in self.names}
        for a, b in edges:
            adj[a].add(b)
            adj[b].add(a)
        parent = {root: None}
        queue = [root]
        for n in queue:
            for m in sorted(adj[n], key=self.names.index):
                if m not in parent:
                    parent[m] = n
                    queue.append(m)
        self.parent = parent

    def build(self) -> LatentTree:
        index = {n: j for j, n in enumerate(self.names)}
        return LatentTree([self.cards[n] for n in self.names],
                          [None if self.parent[n] is None else index[self.parent[n]]
                           for n in self.names],
                          [list(b) for b, _ in self.pouches],
                          [index[p] for _, p in self.pouches],
                          names=self.names, num_coordinates=self.width)


def _as_name(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a latent node's name (a string), got "
                        f"{type(value).__name__} {value!r}")
    return value


def _as_coords(value, what: str) -> tuple[int, ...]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)):
        raise TypeError(f"{what} must be a pouch's coordinates (a tuple of ints), got "
                        f"{type(value).__name__} {value!r}")
    return tuple(check_int(c, f"{what} entries", minimum=0) for c in value)


def _as_index(value, what: str) -> int:
    return check_int(value, what, minimum=0)


def _as_state(value, what: str) -> int | None:
    return None if value is None else check_int(value, what, minimum=0)


def _as_ref(value, what: str) -> Ref:
    return value if isinstance(value, str) else _as_coords(value, what)


def _as_pair(value, what: str) -> tuple[Ref, Ref]:
    if isinstance(value, (str, bytes)) or not isinstance(value, (tuple, list)) or len(value) != 2:
        raise TypeError(f"{what} must be a pair of neighbours (names or pouch coordinates), "
                        f"got {value!r}")
    return (_as_ref(value[0], what), _as_ref(value[1], what))


def _normalise(record, **fields) -> None:
    """Store each field of a frozen record as returned by its checker."""
    for field, check in fields.items():
        object.__setattr__(record, field, check(getattr(record, field),
                                                f"{type(record).__name__}.{field}"))


def _node(tree: LatentTree, name, what: str) -> str:
    if not isinstance(name, str) or name not in tree.names:
        raise ValueError(f"{what} must name a latent node of the tree, got {name!r}; latent "
                         f"nodes: {list(tree.names)}")
    return name


def _pouch(tree: LatentTree, coords, what: str) -> int:
    """The index of the pouch with exactly these coordinates."""
    key = tuple(coords) if isinstance(coords, (tuple, list)) else None
    if key is None or key not in tree.pouches:
        raise ValueError(f"{what} must be the coordinates of a pouch of the tree, got "
                         f"{coords!r}; pouches: {[list(b) for b in tree.pouches]}")
    return tree.pouches.index(key)


def _ref_parent(tree: LatentTree, ref: Ref, what: str) -> str | None:
    """The parent's name of a latent node or pouch given by reference."""
    if isinstance(ref, str):
        p = tree.parents[tree.index(_node(tree, ref, what))]
        return None if p is None else tree.names[p]
    return tree.names[tree.pouch_parents[_pouch(tree, ref, what)]]


def _show(ref: Ref) -> str:
    return ref if isinstance(ref, str) else f"z{list(ref)}"


def _set_parent(draft: TreeDraft, ref: Ref, parent: str) -> None:
    if isinstance(ref, str):
        draft.parent[ref] = parent
    else:
        draft.pouches = [(b, parent if b == ref else p) for b, p in draft.pouches]


def neighbour_count(tree: LatentTree, j: int) -> int:
    return (len(tree.children[j]) + len(tree.leaves[j])
            + (tree.parents[j] is not None))


# -- the move records ----------------------------------------------------------------------

class Move:
    """A candidate structure change. Subclasses are frozen dataclasses."""

    operator: str = ""

    def apply(self, tree: LatentTree) -> LatentTree:  # pragma: no cover - abstract
        """The tree after the move.

        Raises:
            ValueError: the move does not apply to ``tree`` (named node or pouch missing, a
                cardinality would drop below 2, ...).
        """
        raise NotImplementedError

    def describe(self) -> str:  # pragma: no cover - abstract
        """A one-line description for progress output."""
        raise NotImplementedError


@dataclass(frozen=True)
class StateIntroduction(Move):
    """``SI``: one more state for latent node ``node``.

    Example:
        >>> from pyromodels.trees import LatentTree
        >>> StateIntroduction("Y").apply(LatentTree.single(2, 3)).cardinalities
        (3,)
    """

    node: str
    operator = "SI"

    def __post_init__(self):
        _normalise(self, node=_as_name)

    def apply(self, tree: LatentTree) -> LatentTree:
        draft = TreeDraft(tree)
        draft.cards[_node(tree, self.node, "StateIntroduction.node")] += 1
        return draft.build()

    def describe(self) -> str:
        return f"SI: one more state for {self.node}"


@dataclass(frozen=True)
class StateDeletion(Move):
    """``SD``: one state fewer for latent node ``node`` (which must have more than two).

    ``state`` chooses the state whose parameters are dropped when parameters are carried over
    (``None``: the least probable one); it does not change the structure.
    """

    node: str
    state: int | None = None
    operator = "SD"

    def __post_init__(self):
        _normalise(self, node=_as_name, state=_as_state)

    def apply(self, tree: LatentTree) -> LatentTree:
        draft = TreeDraft(tree)
        name = _node(tree, self.node, "StateDeletion.node")
        k = draft.cards[name]
        if k <= 2:
            raise ValueError(f"StateDeletion: latent node {name!r} has {k} states; a latent "
                             f"node keeps at least 2")
        if self.state is not None and self.state >= k:
            raise ValueError(f"StateDeletion.state must be a state of {name!r} (0..{k - 1}), "
                             f"got {self.state!r}")
        draft.cards[name] = k - 1
        return draft.build()

    def describe(self) -> str:
        which = "" if self.state is None else f" (drop state {self.state})"
        return f"SD: one state fewer for {self.node}{which}"


@dataclass(frozen=True)
class NodeIntroduction(Move):
    """``NI``: a new latent node ``name`` with the cardinality of ``node`` takes two of its
    neighbours ``pair`` (two children, or its parent's name and one child)."""

    node: str
    pair: tuple[Ref, Ref]
    name: str
    operator = "NI"

    def __post_init__(self):
        _normalise(self, node=_as_name, name=_as_name, pair=_as_pair)

    def apply(self, tree: LatentTree) -> LatentTree:
        node = _node(tree, self.node, "NodeIntroduction.node")
        j = tree.index(node)
        if neighbour_count(tree, j) <= 3:
            raise ValueError(f"NodeIntroduction: latent node {node!r} has "
                             f"{neighbour_count(tree, j)} neighbours; node introduction needs "
                             f"more than 3")
        if self.name in tree.names:
            raise ValueError(f"NodeIntroduction.name {self.name!r} is already a latent node")
        if self.pair[0] == self.pair[1]:
            raise ValueError(f"NodeIntroduction.pair must be two different neighbours of "
                             f"{node!r}, got {self.pair!r}")
        parent = tree.parents[j]
        up = None if parent is None else tree.names[parent]
        moved = []
        for ref in self.pair:
            if ref != up and _ref_parent(tree, ref, "NodeIntroduction.pair") != node:
                raise ValueError(f"NodeIntroduction.pair: {_show(ref)} is not a neighbour of "
                                 f"{node!r}")
            moved.append(ref)
        draft = TreeDraft(tree)
        draft.names.append(self.name)
        draft.cards[self.name] = tree.cardinalities[j]
        if up in moved:  # P -> Y' -> {Y, C}
            draft.parent[self.name] = up
            draft.parent[node] = self.name
            moved.remove(up)
        else:  # Y -> Y' -> {C1, C2}
            draft.parent[self.name] = node
        for ref in moved:
            _set_parent(draft, ref, self.name)
        return draft.build()

    def describe(self) -> str:
        a, b = (_show(r) for r in self.pair)
        return f"NI: new node {self.name} from {self.node} over {{{a}, {b}}}"


@dataclass(frozen=True)
class NodeDeletion(Move):
    """``ND``: delete latent node ``node``; its other neighbours join the latent neighbour
    ``dock``."""

    node: str
    dock: str
    operator = "ND"

    def __post_init__(self):
        _normalise(self, node=_as_name, dock=_as_name)

    def apply(self, tree: LatentTree) -> LatentTree:
        node = _node(tree, self.node, "NodeDeletion.node")
        draft = TreeDraft(tree)
        if self.dock not in draft.neighbours(node):
            raise ValueError(f"NodeDeletion.dock must be a latent neighbour of {node!r} "
                             f"({draft.neighbours(node) or 'it has none'}), got {self.dock!r}")
        root = self.dock if draft.parent[node] is None else tree.names[tree.root]
        edges = [(n, p) for n, p in draft.parent.items()
                 if p is not None and node not in (n, p)]
        edges += [(other, self.dock) for other in draft.neighbours(node) if other != self.dock]
        draft.pouches = [(b, self.dock if p == node else p) for b, p in draft.pouches]
        draft.names.remove(node)
        del draft.cards[node]
        draft.reorient(root, edges)
        return draft.build()

    def describe(self) -> str:
        return f"ND: delete {self.node}, its neighbours join {self.dock}"


@dataclass(frozen=True)
class NodeRelocation(Move):
    """``NR``: make ``node`` (a latent node's name or a pouch's coordinates) a child of the
    latent node ``new_parent``."""

    node: Ref
    new_parent: str
    operator = "NR"

    def __post_init__(self):
        _normalise(self, node=_as_ref, new_parent=_as_name)

    def apply(self, tree: LatentTree) -> LatentTree:
        target = _node(tree, self.new_parent, "NodeRelocation.new_parent")
        old = _ref_parent(tree, self.node, "NodeRelocation.node")
        if old is None:
            raise ValueError(f"NodeRelocation.node {self.node!r} is the root; the root cannot "
                             f"be relocated")
        if old == target:
            raise ValueError(f"NodeRelocation: {_show(self.node)} is already a child of "
                             f"{target!r}")
        draft = TreeDraft(tree)
        if isinstance(self.node, str):
            up = target
            while up is not None:
                if up == self.node:
                    raise ValueError(f"NodeRelocation.new_parent {target!r} lies in the "
                                     f"subtree of {self.node!r}: the move would make a cycle")
                up = draft.parent[up]
        _set_parent(draft, self.node, target)
        # prune the old parent (and upwards) if the move left it with no children
        while draft.parent[old] is not None and not any(
                p == old for p in draft.parent.values()) and not any(
                p == old for _, p in draft.pouches):
            up = draft.parent[old]
            del draft.parent[old], draft.cards[old]
            draft.names.remove(old)
            old = up
        return draft.build()

    def describe(self) -> str:
        return f"NR: move {_show(self.node)} under {self.new_parent}"


@dataclass(frozen=True)
class Pouching(Move):
    """``PO``: merge pouches ``first`` and ``second`` (same parent) into one."""

    first: tuple[int, ...]
    second: tuple[int, ...]
    operator = "PO"

    def __post_init__(self):
        _normalise(self, first=_as_coords, second=_as_coords)

    def apply(self, tree: LatentTree) -> LatentTree:
        a = _pouch(tree, self.first, "Pouching.first")
        b = _pouch(tree, self.second, "Pouching.second")
        if a == b:
            raise ValueError("Pouching.first and Pouching.second must be two different pouches")
        if tree.pouch_parents[a] != tree.pouch_parents[b]:
            raise ValueError(f"Pouching: pouches {list(self.first)} and {list(self.second)} "
                             f"have different parents "
                             f"({tree.names[tree.pouch_parents[a]]!r} and "
                             f"{tree.names[tree.pouch_parents[b]]!r})")
        draft = TreeDraft(tree)
        parent = draft.pouches[a][1]
        draft.pouches[a] = (tree.pouches[a] + tree.pouches[b], parent)
        del draft.pouches[b]
        return draft.build()

    def describe(self) -> str:
        return f"PO: pouch z{list(self.first)} with z{list(self.second)}"


@dataclass(frozen=True)
class Unpouching(Move):
    """``UP``: split ``coordinate`` out of ``pouch`` into its own pouch, same parent.

    Example:
        >>> from pyromodels.trees import LatentTree
        >>> move = Unpouching((0, 1, 2), 1)
        >>> move.describe(), move.apply(LatentTree.single(2, 3, pouch=True)).pouches
        ('UP: split z[1] out of z[0, 1, 2]', ((0, 2), (1,)))
    """

    pouch: tuple[int, ...]
    coordinate: int
    operator = "UP"

    def __post_init__(self):
        _normalise(self, pouch=_as_coords, coordinate=_as_index)

    def apply(self, tree: LatentTree) -> LatentTree:
        b = _pouch(tree, self.pouch, "Unpouching.pouch")
        block = tree.pouches[b]
        if len(block) < 2:
            raise ValueError(f"Unpouching: pouch {list(block)} has one coordinate; there is "
                             f"nothing to split")
        if self.coordinate not in block:
            raise ValueError(f"Unpouching.coordinate must be one of the pouch's coordinates "
                             f"{list(block)}, got {self.coordinate!r}")
        draft = TreeDraft(tree)
        parent = draft.pouches[b][1]
        draft.pouches[b] = (tuple(c for c in block if c != self.coordinate), parent)
        draft.pouches.append(((self.coordinate,), parent))
        return draft.build()

    def describe(self) -> str:
        return f"UP: split z[{self.coordinate}] out of z{list(self.pouch)}"
