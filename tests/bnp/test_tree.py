"""Tree bookkeeping: construction, queries, edits with stable ids, undo, collapsed display tree,
and pinned messages for bad input."""

from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.bnp import NEW, PathEdit, Tree

PATHS = [[0, 1, 2], [0, 1, 3], [0, 4, 5], [0, 1, 2]]


def _recount(paths: torch.Tensor) -> dict[int, int]:
    """Counts read straight off the path rows (independent of the tree's bookkeeping)."""
    counts: dict[int, int] = {}
    for row in paths.tolist():
        if row[0] == NEW:
            continue
        for z in row:
            counts[z] = counts.get(z, 0) + 1
    return counts


def test_queries_on_a_hand_built_tree():
    tree = Tree.from_paths(PATHS)
    assert tree.depth == 2 and tree.num_points == 4 and tree.root == 0 and tree.next_id == 6
    assert tree.nodes == (0, 1, 2, 3, 4, 5)
    assert [tree.count(z) for z in tree.nodes] == [4, 3, 2, 1, 1, 1]
    assert tree.children(0) == (1, 4) and tree.children(2) == ()
    assert tree.parent(3) == 1 and tree.parent(0) == NEW
    assert [tree.level(z) for z in tree.nodes] == [0, 1, 2, 2, 1, 2]
    assert tree.siblings(1) == (4,) and tree.siblings(5) == () and tree.siblings(0) == ()
    assert tree.internal_nodes == (0, 1, 4)
    assert tree.edges == ((0, 1), (0, 4), (1, 2), (1, 3), (4, 5))
    assert tree.nodes_at_level(1) == (1, 4) and tree.leaves == (2, 3, 5)
    assert tree.level_labels(0).tolist() == [0, 0, 0, 0]
    assert tree.level_labels(1).tolist() == [0, 0, 1, 0]
    assert tree.level_labels(2).tolist() == [0, 1, 2, 0]
    assert tree.members(1).tolist() == [0, 1, 3]
    assert tree.path(2) == (0, 4, 5)
    assert torch.equal(tree.paths, torch.tensor(PATHS))
    assert tree.paths.dtype == torch.int64 and bool(tree.seated.all())
    tree.validate()


def test_round_trips_and_copy_are_independent():
    tree = Tree.from_paths(PATHS, next_id=10)
    assert Tree.from_dict(tree.to_dict()) == tree
    twin = tree.copy()
    twin.remove_path(2)
    assert 4 in tree and 4 not in twin and tree.count(0) == 4
    assert twin.add_path(2, [0, NEW, NEW]).new_path == (0, 10, 11)  # ids not reused


def test_add_and_remove_open_and_close_nodes():
    tree = Tree(depth=3, num_points=3)
    e0 = tree.add_path(0, [0, NEW, NEW, NEW])
    assert e0 == PathEdit(0, None, (0, 1, 2, 3), (1, 2, 3), ())
    e1 = tree.add_path(1, [0, 1, NEW, NEW])
    assert e1.new_path == (0, 1, 4, 5) and e1.born == (4, 5)
    tree.add_path(2, [0, 1, 2, 3])
    assert tree.count(3) == 2
    e = tree.remove_path(1)
    assert e.old_path == (0, 1, 4, 5) and e.died == (4, 5) and 4 not in tree
    assert tree.children(1) == (2,)
    tree.remove_path(0)
    tree.remove_path(2)
    assert tree.nodes == (0,) and tree.count(0) == 0 and tree.internal_nodes == ()
    assert tree.add_path(0, torch.tensor([0, -1, -1, -1])).new_path == (0, 6, 7, 8)


def test_move_and_undo_restore_the_original_ids():
    tree = Tree.from_paths(PATHS)
    before = tree.to_dict()
    edit = tree.move_path(2, [0, 1, NEW])
    assert edit.old_path == (0, 4, 5) and edit.died == (4, 5) and edit.born == (6,)
    assert 4 not in tree and tree.children(1) == (2, 3, 6)
    tree.undo(edit)
    assert tree.to_dict()["paths"] == before["paths"] and tree.nodes == (0, 1, 2, 3, 4, 5)
    assert tree.children(0) == (1, 4) and 6 not in tree and tree.next_id == 7
    tree.validate()
    with pytest.raises(ValueError, match="edit is not the latest edit of datum 2"):
        tree.undo(edit)


def _random_path(tree: Tree, picks: list[int]) -> list[int]:
    """A path chosen level by level among the living children and a new one."""
    z, path = tree.root, [tree.root]
    for pick in picks:
        options = list(tree.children(z)) + [NEW] if z != NEW else [NEW]
        z = options[pick % len(options)]
        path.append(z)
    return path


def _check_level_labels(tree: Tree) -> None:
    """Two seated data share a level-l label exactly when their paths share the level-l node;
    labels number the blocks in order of first appearance."""
    paths = tree.paths.tolist()
    for lv in range(tree.depth + 1):
        labels = tree.level_labels(lv).tolist()
        seated = [i for i, row in enumerate(paths) if row[0] != NEW]
        assert all(labels[i] == NEW for i in range(len(paths)) if i not in seated)
        for i in seated:
            for j in seated:
                assert (labels[i] == labels[j]) == (paths[i][lv] == paths[j][lv])
        firsts = [labels[i] for i in seated if labels[i] not in labels[:i]]
        assert firsts == list(range(len(firsts)))


def _check_collapsed(tree: Tree) -> None:
    """The merged tree: its chains partition the living nodes, every kept non-root node has a
    sibling, each chain is a run of only children, and members add up."""
    c = tree.collapsed()
    chains = [z for m in c.merged.values() for z in m]
    assert sorted(chains) == list(tree.nodes)
    for z in c.nodes:
        chain = c.merged[z]
        assert chain[0] == z and all(tree.children(a) == (b,) for a, b in zip(chain, chain[1:]))
        assert c.children[z] == tree.children(chain[-1]) and c.level[z] == tree.level(z)
        assert c.members[z] == tuple(tree.members(z).tolist())
        if z != c.root:
            assert len(c.siblings(z)) >= 1 and c.parent[z] in c.nodes
        if c.children[z]:
            assert sorted(m for k in c.children[z] for m in c.members[k]) == list(c.members[z])


OPS = st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2),
                         st.lists(st.integers(0, 4), min_size=3, max_size=3)),
               min_size=1, max_size=40)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(OPS)
def test_bookkeeping_invariants_under_random_edits(ops):
    tree = Tree(depth=3, num_points=6)
    ever_born: set[int] = {tree.root}
    for n, kind, picks in ops:
        before = tree.to_dict()
        if tree.path(n) is None:
            edit = tree.add_path(n, _random_path(tree, picks))
        elif kind == 0:
            edit = tree.remove_path(n)
        else:
            own = tree.path(n)
            probe = tree.copy()
            probe.remove_path(n)
            edit = tree.move_path(n, _random_path(probe, picks))
            assert edit.old_path == own
        assert not set(edit.born) & ever_born, "an id was handed out twice"
        ever_born |= set(edit.born)
        assert all(z < tree.next_id for z in ever_born)
        # counts agree with the paths; every living node but the root holds data
        counts = _recount(tree.paths)
        assert {z: tree.count(z) for z in tree.nodes} == {tree.root: 0, **counts}
        assert all(tree.count(z) >= 1 for z in tree.nodes if z != tree.root)
        assert set(edit.died).isdisjoint(tree.nodes)
        assert set(edit.born) <= set(tree.nodes)
        for z in tree.nodes:
            if z != tree.root:
                assert z in tree.children(tree.parent(z))
                assert tree.level(z) == tree.level(tree.parent(z)) + 1
        tree.validate()
        assert Tree.from_dict(tree.to_dict()) == tree
        _check_level_labels(tree)
        _check_collapsed(tree)
        if kind == 2:  # undo restores the previous state exactly (next_id moves on)
            tree.undo(edit)
            after = tree.to_dict()
            assert after["paths"] == before["paths"] and after["next_id"] >= before["next_id"]
            assert tree.nodes == tuple(sorted(_recount(tree.paths).keys() | {tree.root}))
            tree.validate()


# ------------------------------------------------------------------------- collapsed
def test_collapsed_merges_a_single_child_leaf_into_its_parent():
    c = Tree.from_paths([[0, 1, 2], [0, 1, 3], [0, 4, 5]]).collapsed()
    assert c.nodes == (0, 1, 2, 3, 4) and c.leaves == (2, 3, 4)
    assert c.children == {0: (1, 4), 1: (2, 3), 2: (), 3: (), 4: ()}
    assert c.parent == {1: 0, 2: 1, 3: 1, 4: 0}
    assert c.merged[4] == (4, 5) and c.merged[1] == (1,) and c.level[4] == 1
    assert c.members == {0: (0, 1, 2), 1: (0, 1), 2: (0,), 3: (1,), 4: (2,)}
    assert c.siblings(4) == (1,) and c.siblings(0) == ()
    assert c.edges == ((0, 1), (0, 4), (1, 2), (1, 3))


def test_collapsed_single_path_is_the_root_alone():
    c = Tree.from_paths([[0, 1, 2, 3]] * 3).collapsed()
    assert c.nodes == (0,) and c.leaves == (0,) and c.merged[0] == (0, 1, 2, 3)
    assert c.members[0] == (0, 1, 2) and c.parent == {}


def test_collapsed_chain_in_the_middle_keeps_the_upper_id():
    tree = Tree.from_paths([[0, 1, 2, 3], [0, 1, 2, 4], [0, 1, 5, 6], [0, 1, 5, 6]])
    c = tree.collapsed()
    assert c.merged[0] == (0, 1) and c.children[0] == (2, 5)  # root's only child merged
    assert c.children[2] == (3, 4) and c.merged[5] == (5, 6) and c.leaves == (3, 4, 5)
    assert c.parent == {2: 0, 5: 0, 3: 2, 4: 2} and c.level == {0: 0, 2: 2, 3: 3, 4: 3, 5: 2}
    assert c.members[5] == (2, 3) and c.siblings(2) == (5,)
    with pytest.raises(ValueError, match="node 6 is not in the collapsed tree"):
        c.siblings(6)


# ------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs, error, match", [
    ({"depth": 0, "num_points": 3}, ValueError, "depth must be an integer >= 1, got 0"),
    ({"depth": 2.0, "num_points": 3}, TypeError, "depth must be an integer"),
    ({"depth": 2, "num_points": 0}, ValueError, "num_points must be an integer >= 1"),
])
def test_constructor_rejects_bad_sizes(kwargs, error, match):
    with pytest.raises(error, match=match):
        Tree(**kwargs)


@pytest.mark.parametrize("paths, match", [
    ([0, 1, 2], r"paths must be a 2-D array of shape \(num_points, depth \+ 1\).*\(3,\)"),
    ([[0], [0]], r"depth >= 1, got shape \(2, 1\)"),
    ([[0, 1, 2], [0, 3, 2]], "node 2 the parents 1 and 3.*inconsistent parents"),
    ([[0, 1, 2], [0, 2, 3]], "node 2 at levels 2 and 1"),
    ([[0, 1, 2], [5, 1, 2]], r"same root node, got roots \[0, 5\]"),
    ([[0, 1, -1]], "row 0 mixes node ids and -1"),
    ([[0, 1, -4]], r"node ids >= 0 \(or rows of -1"),
])
def test_from_paths_rejects_inconsistent_paths(paths, match):
    with pytest.raises(ValueError, match=match):
        Tree.from_paths(paths)


def test_from_paths_rejects_other_bad_arguments():
    with pytest.raises(TypeError, match="paths must hold integer node ids, got dtype float64"):
        Tree.from_paths([[0.0, 1.0]])
    with pytest.raises(ValueError, match=r"next_id must be > every node id in paths \(max 2\)"):
        Tree.from_paths([[0, 1, 2]], next_id=2)
    with pytest.raises(ValueError, match="root is 3 but the paths start at node 0"):
        Tree.from_paths([[0, 1, 2]], root=3)
    with pytest.raises(ValueError, match="data must be a dict with keys 'paths', 'root'"):
        Tree.from_dict({"paths": [[0, 1]]})


@pytest.mark.parametrize("n, path, match", [
    (0, [0, 1, 2], r"datum 0 is already seated; remove_path\(0\) first"),
    (3, [0, 1], r"path must have shape \(3,\) \(root first\), got \(2,\)"),
    (3, [1, 1, 2], "path must start at the root 0, got 1"),
    (3, [0, 7, NEW], "path holds node 7, which is not in the tree"),
    (3, [0, 4, 2], "path holds node 2 at level 2 below node 4, but its parent is 1"),
    (3, [0, NEW, 2], "existing node 2 at level 2 below a new node"),
    (4, [0, 1, 2], "n must be an integer <= 3, got 4"),
])
def test_add_path_rejects_bad_paths(n, path, match):
    tree = Tree.from_paths(PATHS[:3] + [[NEW] * 3])
    before = tree.to_dict()
    with pytest.raises(ValueError, match=match):
        tree.add_path(n, path)
    assert tree.to_dict() == before


def test_edits_and_queries_reject_bad_arguments():
    tree = Tree.from_paths(PATHS[:3] + [[NEW] * 3])
    with pytest.raises(ValueError, match="datum 3 is not seated"):
        tree.remove_path(3)
    before = tree.to_dict()
    with pytest.raises(ValueError, match="path holds node 4, which is not in the tree"):
        tree.move_path(2, [0, 4, 5])  # nodes 4 and 5 die when datum 2 leaves
    assert tree.to_dict() == before
    with pytest.raises(ValueError, match="node 9 is not in the tree"):
        tree.count(9)
    with pytest.raises(ValueError, match="level must be an integer <= 2, got 3"):
        tree.level_labels(3)
    with pytest.raises(TypeError, match="edit must be a PathEdit"):
        tree.undo((0, None, None, (), ()))
    with pytest.raises(TypeError, match="path must hold integer node ids"):
        tree.add_path(3, [0.0, 1.0, 2.0])
