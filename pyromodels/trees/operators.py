r"""The seven structure-search operators of pouch latent tree models, as move records.

Each operator has a function that lists every candidate move on a
:class:`~pyromodels.trees.structure.LatentTree`; a move is a small immutable record with
``apply(tree) -> LatentTree`` and ``describe()``. The definitions follow PLTM-EAST (Poon et
al. 2010, 2013):

============  ===================================================================================
``SI``        state introduction: :math:`K_j \to K_j + 1` for one latent node. Skipped (with
              ``regular=True``) when a node with only latent neighbours is at the regularity
              bound :math:`K_j \ge \prod_i K_i / \max_i K_i` over its neighbours; a node with a
              pouch neighbour has no bound.
``SD``        state deletion: :math:`K_j \to K_j - 1`, only where :math:`K_j > 2`.
``NI``        node introduction, on a latent node :math:`Y` with more than three neighbours:
              a new latent :math:`Y'` with the cardinality of :math:`Y` takes two of
              :math:`Y`'s neighbours. Two children :math:`C_1, C_2`: :math:`Y \to Y' \to
              \{C_1, C_2\}`. The parent :math:`P` and a child :math:`C`: :math:`P \to Y' \to
              \{Y, C\}`.
``ND``        node deletion: remove a latent :math:`Y`; every other neighbour of :math:`Y`
              (latent or pouch) is joined to one latent neighbour, the *dock*. One candidate
              per (node, dock) pair. Deleting the root makes the dock the root.
``NR``        node relocation: a pouch or a latent subtree becomes a child of another latent
              node (not inside the moved subtree). A latent node that the move leaves with no
              children is pruned.
``PO``        pouching: two pouches with the same parent become one (coordinates of the first,
              then of the second, in the first's place).
``UP``        unpouching: one coordinate of a pouch of two or more becomes its own pouch under
              the same parent (appended after the other pouches).
============  ===================================================================================

Choices where the description leaves room: SD has one candidate per node (the states are
exchangeable for the structure; which state goes only matters to the parameters); ND's
neighbours are re-oriented away from the root, so the rest of the tree keeps its root; NR may
move a node to any latent node, not only to a nearby one; NI names the new node ``Y<n>`` with
the smallest free ``n`` not below the number of latent nodes; NR prunes only nodes the move
itself empties (a latent node that had no children before stays). After an accepted NI or PO,
:func:`follow_up_moves` lists PLTM-EAST's restricted relocations and pouchings.

Pouches are referred to by their coordinates (a tuple of ints), latent nodes by name. The
move records live in :mod:`.moves` and are re-exported here.
"""


from __future__ import annotations

import itertools

from .moves import (
    Move,
    NodeDeletion,
    NodeIntroduction,
    NodeRelocation,
    Pouching,
    Ref,
    StateDeletion,
    StateIntroduction,
    TreeDraft,
    Unpouching,
    neighbour_count,
)
from .structure import LatentTree

__all__ = [
    "Move", "StateIntroduction", "StateDeletion", "NodeIntroduction", "NodeDeletion",
    "NodeRelocation", "Pouching", "Unpouching", "state_introductions", "state_deletions",
    "node_introductions", "node_deletions", "node_relocations", "pouchings", "unpouchings",
    "OPERATORS", "PHASES", "candidate_moves", "follow_up_moves",
]

# -- enumeration ---------------------------------------------------------------------------

def _check_tree(tree) -> LatentTree:
    if not isinstance(tree, LatentTree):
        raise TypeError(f"tree must be a LatentTree, got {type(tree).__name__}")
    return tree


def state_introductions(tree: LatentTree, regular: bool = True) -> list[StateIntroduction]:
    """Every ``SI`` move; with ``regular`` none that passes the regularity bound (see the
    module docstring)."""
    tree = _check_tree(tree)
    out = []
    for j, name in enumerate(tree.names):
        if regular and not tree.leaves[j]:
            near = [tree.cardinalities[c] for c in tree.children[j]]
            if tree.parents[j] is not None:
                near.append(tree.cardinalities[tree.parents[j]])
            bound = 1
            for k in near:
                bound *= k
            bound //= max(near, default=1)
            if tree.cardinalities[j] + 1 > bound:
                continue
        out.append(StateIntroduction(name))
    return out


def state_deletions(tree: LatentTree) -> list[StateDeletion]:
    """Every ``SD`` move: one per latent node with more than two states."""
    tree = _check_tree(tree)
    return [StateDeletion(n) for n, k in zip(tree.names, tree.cardinalities) if k > 2]


def _fresh_name(tree: LatentTree) -> str:
    n = tree.num_latents
    while f"Y{n}" in tree.names:
        n += 1
    return f"Y{n}"


def node_introductions(tree: LatentTree) -> list[NodeIntroduction]:
    """Every ``NI`` move: each latent node with more than three neighbours, each pair of them
    (two children, or the parent and a child)."""
    tree = _check_tree(tree)
    name = _fresh_name(tree)
    out = []
    for j, node in enumerate(tree.names):
        if neighbour_count(tree, j) <= 3:
            continue
        refs: list[Ref] = [] if tree.parents[j] is None else [tree.names[tree.parents[j]]]
        refs += [tree.names[c] for c in tree.children[j]]
        refs += [tree.pouches[b] for b in tree.leaves[j]]
        out.extend(NodeIntroduction(node, pair, name) for pair in itertools.combinations(refs, 2))
    return out


def node_deletions(tree: LatentTree) -> list[NodeDeletion]:
    """Every ``ND`` move: each latent node with each latent neighbour as dock."""
    draft = TreeDraft(_check_tree(tree))
    return [NodeDeletion(n, d) for n in tree.names for d in draft.neighbours(n)]


def node_relocations(tree: LatentTree) -> list[NodeRelocation]:
    """Every ``NR`` move: each pouch and each non-root latent node to each latent node other
    than its parent and outside its own subtree."""
    tree = _check_tree(tree)
    out = []
    for b, block in enumerate(tree.pouches):
        out.extend(NodeRelocation(block, n) for j, n in enumerate(tree.names)
                   if j != tree.pouch_parents[b])
    for j, name in enumerate(tree.names):
        if tree.parents[j] is None:
            continue
        inside = {j}
        for i in tree.order:
            if tree.parents[i] in inside:
                inside.add(i)
        out.extend(NodeRelocation(name, n) for i, n in enumerate(tree.names)
                   if i not in inside and i != tree.parents[j])
    return out


def pouchings(tree: LatentTree) -> list[Pouching]:
    """Every ``PO`` move: each pair of pouches with the same parent."""
    tree = _check_tree(tree)
    return [Pouching(tree.pouches[a], tree.pouches[b])
            for leaves in tree.leaves for a, b in itertools.combinations(leaves, 2)]


def unpouchings(tree: LatentTree) -> list[Unpouching]:
    """Every ``UP`` move: each coordinate of each pouch of two or more coordinates."""
    tree = _check_tree(tree)
    return [Unpouching(block, c) for block in tree.pouches if len(block) > 1 for c in block]


OPERATORS = {
    "SI": state_introductions, "SD": state_deletions, "NI": node_introductions,
    "ND": node_deletions, "NR": node_relocations, "PO": pouchings, "UP": unpouchings,
}
"""Each operator's code and its enumeration function."""

PHASES = {"expand": ("SI", "NI", "PO"), "adjust": ("NR",), "simplify": ("UP", "ND", "SD")}
"""The operators of each search phase, in PLTM-EAST's order."""


def candidate_moves(tree: LatentTree, operators=("SI", "SD", "NI", "ND", "NR", "PO", "UP")
                    ) -> list[Move]:
    """Every candidate move of the given operators (codes of :data:`OPERATORS`), in order.

    Raises:
        ValueError: an unknown operator code.

    Example:
        >>> from pyromodels.trees import LatentTree
        >>> tree = LatentTree.single(3, 4)
        >>> node_introductions(tree)[0].describe()
        'NI: new node Y1 from Y over {z[0], z[1]}'
        >>> len(candidate_moves(tree, PHASES["expand"]))  # SI 1 + NI 6 + PO 6
        13
    """
    if isinstance(operators, str):
        operators = (operators,)
    unknown = [op for op in operators if op not in OPERATORS]
    if unknown:
        raise ValueError(f"operators must be codes among {sorted(OPERATORS)}, got {unknown}")
    return [move for op in operators for move in OPERATORS[op](tree)]


def follow_up_moves(tree: LatentTree, accepted: Move) -> list[Move]:
    """The restricted moves PLTM-EAST tries after accepting ``accepted``, on the tree it made.

    After a node introduction ``NI(node, pair, name)``: relocating each remaining child of
    ``node`` (latent or pouch) under the new node ``name``. After a pouching: pouching the
    merged pouch with each of its sibling pouches. After any other move: none.

    Args:
        tree: the tree after the move (``accepted.apply(previous tree)``).
        accepted: the move that was accepted.

    Raises:
        TypeError: ``accepted`` is not a move.
        ValueError: ``tree`` does not hold the node or pouch ``accepted`` made.

    Example:
        >>> from pyromodels.trees import LatentTree, Pouching
        >>> move = Pouching((0,), (1,))
        >>> [m.describe() for m in follow_up_moves(move.apply(LatentTree.single(2, 3)), move)]
        ['PO: pouch z[0, 1] with z[2]']
    """
    tree = _check_tree(tree)
    if not isinstance(accepted, Move):
        raise TypeError(f"accepted must be a move, got {type(accepted).__name__}")
    if isinstance(accepted, NodeIntroduction):
        for name in (accepted.node, accepted.name):
            if name not in tree.names:
                raise ValueError(f"tree lacks latent node {name!r}: pass the tree the node "
                                 f"introduction made")
        j, new = tree.index(accepted.node), accepted.name
        refs: list[Ref] = [tree.names[c] for c in tree.children[j] if tree.names[c] != new]
        refs += [tree.pouches[b] for b in tree.leaves[j]]
        return [NodeRelocation(ref, new) for ref in refs]
    if isinstance(accepted, Pouching):
        merged = accepted.first + accepted.second
        if merged not in tree.pouches:
            raise ValueError(f"tree lacks the pouch z{list(merged)}: pass the tree the pouching "
                             f"made")
        b = tree.pouches.index(merged)
        return [Pouching(merged, tree.pouches[s]) for s in tree.leaves[tree.pouch_parents[b]]
                if s != b]
    return []
