"""AID, AOD and the per-level F-measure of a tree: hand-computed values, a brute-force oracle
built on :meth:`pyromodels.bnp.Tree.collapsed`, invariances and pinned errors."""

import contextlib
import itertools
import math
import warnings
from fractions import Fraction

import numpy as np
import pytest
import torch

from pyromodels.bnp import Tree, sample_ncrp_paths
from pyromodels.metrics import (
    HierarchyMetricWarning,
    aid,
    aod,
    f_measure_by_level,
    f_measure_per_level,
    node_statistics,
)

# Five points on a line; node 2's only child 5 is merged into it when collapsing, node 4 is a
# singleton.
X5 = torch.tensor([[0.0], [2.0], [6.0], [10.0], [12.0]], dtype=torch.float64)
P5 = torch.tensor([[0, 1, 3], [0, 1, 3], [0, 1, 4], [0, 2, 5], [0, 2, 5]])


def _close(value, fraction):
    return value == pytest.approx(float(fraction), rel=1e-14, abs=0)


def test_hand_computed_tree():
    # Pair means: node 1 {0, 2, 6}: (4 + 36 + 16) / 3 = 56/3; nodes 2, 3, 5: 4; node 4 skipped.
    assert _close(aid(X5, P5, collapse=False), (Fraction(56, 3) + 12) / 4)  # 23/3
    assert _close(aid(X5, P5), (Fraction(56, 3) + 8) / 3)  # 80/9 (node 5 merged into 2)
    # Sibling pairs (1, 2): centroids 8/3 and 11; (3, 4): 1 and 6.
    expected = (Fraction(25, 3) ** 2 + 25) / 2
    assert _close(aod(X5, P5), expected)
    assert _close(aod(X5, P5, paper_literal=True), 2 * expected)
    assert _close(aod(X5, P5, collapse=False), expected)


def test_tree_object_gives_the_same_values_as_its_paths():
    tree = Tree.from_paths(P5)
    assert aid(X5, tree) == aid(X5, P5)
    assert aod(X5, tree) == aod(X5, P5)
    # Level 2 cuts {0, 1}, {2}, {3, 4}: class 0 scores 2 * 2 / (3 + 2) = 0.8, so 0.6 * 0.8 + 0.4.
    assert f_measure_by_level([0, 0, 0, 1, 1], tree).tolist() == [1.0, pytest.approx(0.88)]


def _pair_mean(x, members):
    pairs = list(itertools.combinations(members, 2))
    return sum(float(((x[a] - x[b]) ** 2).sum()) for a, b in pairs) / len(pairs)


def _centroid(x, members):
    return x[list(members)].mean(0)


def _oracle(x, tree: Tree, collapse: bool):
    """AID and the paper's literal AOD by explicit loops over nodes, pairs and ordered sibling
    pairs, on the merged tree that :meth:`Tree.collapsed` builds (or on every node)."""
    if collapse:
        c = tree.collapsed()
        nodes = [z for z in c.nodes if z != c.root]
        members = {z: c.members[z] for z in nodes}
        siblings = {z: c.siblings(z) for z in nodes}
    else:
        nodes = [z for z in tree.nodes if z != tree.root]
        members = {z: tuple(tree.members(z).tolist()) for z in nodes}
        siblings = {z: tree.siblings(z) for z in nodes}
    inner = [_pair_mean(x, members[z]) for z in nodes if len(members[z]) > 1]
    ordered = sum(float(((_centroid(x, members[z]) - _centroid(x, members[s])) ** 2).sum())
                  for z in nodes for s in siblings[z])
    n_ordered = sum(len(siblings[z]) for z in nodes)
    aid_value = sum(inner) / len(inner) if inner else math.nan
    literal = ordered / (n_ordered // 2) if n_ordered else math.nan
    return aid_value, literal


@contextlib.contextmanager
def _no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error", HierarchyMetricWarning)
        yield


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("collapse", [True, False])
def test_against_brute_force_on_random_trees(seed, collapse):
    g = torch.Generator().manual_seed(seed)
    n, depth = 6 + seed, 1 + seed % 3
    paths = sample_ncrp_paths(n, depth, 0.5 + 0.3 * (seed % 4), g)
    x = torch.randn(n, 3, dtype=torch.float64, generator=g)
    tree = Tree.from_paths(paths)
    want_aid, want_literal = _oracle(x, tree, collapse)
    with pytest.warns(HierarchyMetricWarning) if math.isnan(want_literal) else _no_warning():
        got_literal = aod(x, paths, collapse=collapse, paper_literal=True)
        got = aod(x, paths, collapse=collapse)
    if math.isnan(want_literal):
        assert math.isnan(got_literal) and math.isnan(got)
    else:
        assert got_literal == pytest.approx(want_literal, rel=1e-12)
        assert got_literal == pytest.approx(2 * got, rel=1e-15)
    if math.isnan(want_aid):
        with pytest.warns(HierarchyMetricWarning, match="AID is undefined"):
            assert math.isnan(aid(x, paths, collapse=collapse))
    else:
        assert aid(x, paths, collapse=collapse) == pytest.approx(want_aid, rel=1e-12)


def test_oracle_covers_defined_and_undefined_cases():
    """The random trees above must include trees with siblings and a single-path tree, so both
    branches of the comparison run."""
    kinds = set()
    for seed in range(12):
        g = torch.Generator().manual_seed(seed)
        paths = sample_ncrp_paths(6 + seed, 1 + seed % 3, 0.5 + 0.3 * (seed % 4), g)
        kinds.add(Tree.from_paths(paths).collapsed().nodes == (0,))
    assert kinds == {True, False}


@pytest.mark.parametrize("seed", range(5))
def test_invariant_to_relabelling_nodes_and_permuting_data(seed):
    g = torch.Generator().manual_seed(100 + seed)
    n = 15
    paths = sample_ncrp_paths(n, 3, 1.5, g)
    x = torch.randn(n, 4, dtype=torch.float64, generator=g)
    ids = torch.unique(paths)
    new_ids = torch.randperm(1000, generator=g)[: len(ids)] + 7
    relabelled = new_ids[torch.searchsorted(ids, paths)]
    perm = torch.randperm(n, generator=g)
    for fn in (aid, aod):
        assert fn(x[perm], relabelled[perm]) == pytest.approx(fn(x, paths), rel=1e-12)
    labels = torch.randint(0, 3, (n,), generator=g)
    np.testing.assert_allclose(f_measure_by_level(labels[perm], relabelled[perm]),
                               f_measure_by_level(labels, paths), rtol=1e-14)


def test_node_statistics_against_direct_computation():
    g = torch.Generator().manual_seed(7)
    paths = sample_ncrp_paths(12, 2, 1.0, g)
    x = torch.randn(12, 2, dtype=torch.float64, generator=g)
    tree = Tree.from_paths(paths)
    stats = node_statistics(x, paths)
    assert sorted(stats.node.tolist()) == [z for z in tree.nodes if z != 0]
    for i, z in enumerate(stats.node.tolist()):
        members = tree.members(z).tolist()
        assert stats.parent[i] == tree.parent(z) and stats.level[i] == tree.level(z)
        assert stats.count[i] == len(members)
        torch.testing.assert_close(stats.centroid[i], x[members].mean(0), rtol=1e-13, atol=0)
        if len(members) > 1:
            assert float(stats.inner[i]) == pytest.approx(_pair_mean(x, members), rel=1e-12)
        else:
            assert math.isnan(stats.inner[i])
        assert bool(stats.kept[i]) == (len(tree.siblings(z)) > 0)


def test_undefined_values_warn_and_return_nan():
    x = torch.tensor([[0.0], [1.0], [3.0]], dtype=torch.float64)
    single = [[0, 1, 2]] * 3
    with pytest.warns(HierarchyMetricWarning, match="AOD is undefined: the tree has a single path"):
        assert math.isnan(aod(x, single))
    with pytest.warns(HierarchyMetricWarning, match="AID is undefined"):
        assert math.isnan(aid(x, single))  # collapsed: only the root is left
    assert aid(x, single, collapse=False) == pytest.approx(14 / 3)  # (1 + 9 + 4) / 3, twice
    singletons = [[0, 1], [0, 2], [0, 3]]
    with pytest.warns(HierarchyMetricWarning, match="no scored non-root node holds two"):
        assert math.isnan(aid(x, singletons))
    assert aod(x, singletons) == pytest.approx((1 + 9 + 4) / 3)


def test_f_measure_by_level_reuses_the_flat_score():
    labels = [0, 0, 1, 1, 1]
    np.testing.assert_array_equal(f_measure_by_level(labels, P5),
                                  f_measure_per_level(labels, P5[:, 1:].T.numpy()))
    # Level 1: {0,1,2} vs {3,4}: class 0 -> F = 2*2/(2+3) = 0.8, class 1 -> 2*2/(3+2) = 0.8.
    assert f_measure_by_level(labels, P5)[0] == pytest.approx(0.8)


def test_float32_data_agree_with_float64():
    assert aid(X5.float(), P5) == pytest.approx(aid(X5, P5), rel=1e-6)
    assert aod(X5.float(), P5) == pytest.approx(aod(X5, P5), rel=1e-6)


@pytest.mark.parametrize(
    ("x", "paths", "error", "match"),
    [
        (X5, P5.double(), TypeError, "tree must hold integer node ids"),
        (X5, P5[:, :1], ValueError, r"tree paths must have shape \(N, L \+ 1\)"),
        (X5, P5[0], ValueError, r"tree paths must have shape \(N, L \+ 1\)"),
        (X5, torch.cat([P5[:4], torch.full((1, 3), -1)]), ValueError, "every datum seated"),
        (X5, torch.cat([P5[:4], torch.tensor([[9, 2, 5]])]), ValueError, "same root"),
        (X5, torch.cat([P5[:4], torch.tensor([[0, 2, 1]])]), ValueError, "at levels 1 and 2"),
        (X5, torch.cat([P5[:4], torch.tensor([[0, 1, 5]])]), ValueError, "node 5 the parents 1 and 2"),
        (X5, torch.cat([P5[:4], torch.tensor([[0, 2, 0]])]), ValueError, "the root 0 below"),
        (X5[:4], P5, ValueError, "x must have one row per datum of the tree: got 4 rows for 5"),
        (X5[:, 0], P5, ValueError, "x must be 2-dimensional"),
        (torch.full((5, 1), math.nan), P5, ValueError, "x must be finite"),
        (X5, "tree", TypeError, "tree must hold integer node ids"),
    ],
)
def test_bad_input(x, paths, error, match):
    for fn in (aid, aod):
        with pytest.raises(error, match=match):
            fn(x, paths)


def test_bad_switches():
    with pytest.raises(TypeError, match="collapse must be a bool"):
        aid(X5, P5, collapse=1)
    with pytest.raises(TypeError, match="paper_literal must be a bool"):
        aod(X5, P5, paper_literal="yes")
    with pytest.raises(TypeError, match="collapse must be a bool"):
        aod(X5, P5, collapse=None)


