"""The structure type: constructors, views, JSON round trip, equality, repr, drawing, and a
clear error for every malformed tree."""

import json
import pickle

import matplotlib.pyplot as plt
import pytest

from pyromodels.trees import LatentTree

from .conftest import SHAPES


def test_views_of_a_three_level_tree():
    tree = SHAPES["three_level"]()
    assert tree.names == ("R", "A", "B", "C", "D", "E", "F")
    assert tree.root == 0 and tree.order[0] == 0
    assert tree.parents == (None, 0, 0, 1, 1, 2, 2)
    assert tree.children[1] == (3, 4)
    assert tree.leaves[3] == (0,) and tree.pouches[0] == (0, 3)
    assert tree.num_coordinates == 9 and tree.num_latents == 7
    assert tree.leaves[6] == () and tree.children[6] == ()
    assert set(tree.edges) == {(0, 1), (0, 2), (1, 3), (1, 4), (2, 5), (2, 6)}
    assert tree.index("D") == 4 and tree.index(4) == 4
    position = {j: i for i, j in enumerate(tree.order)}
    assert all(position[p] < position[c] for p, c in tree.edges)


@pytest.mark.parametrize("pouch", [False, True])
def test_single_node_constructor(pouch):
    tree = LatentTree.single(5, 4, pouch=pouch)
    assert tree.cardinalities == (5,) and tree.parents == (None,)
    assert tree.pouches == (((0, 1, 2, 3),) if pouch else ((0,), (1,), (2,), (3,)))


def test_json_round_trip_and_equality(shape):
    tree = SHAPES[shape]()
    text = json.dumps(tree.to_dict())
    back = LatentTree.from_dict(json.loads(text))
    assert back == tree and hash(back) == hash(tree)
    assert pickle.loads(pickle.dumps(tree)) == tree
    other = LatentTree.from_dict({**tree.to_dict(), "latents": [
        {**n, "cardinality": n["cardinality"] + 1} for n in tree.to_dict()["latents"]]})
    assert other != tree


def test_repr_shows_the_nesting():
    tree = LatentTree.from_edges({"A": 2, "B": 3}, [("A", "B")], [("A", [0]), ("B", [1, 2])])
    assert repr(tree) == "LatentTree(A[K=2](z[0], B[K=3](z[1, 2])))"


def test_tree_is_immutable():
    tree = LatentTree.single(2, 2)
    with pytest.raises(AttributeError, match="immutable"):
        tree._cards = (3,)


def test_draw_labels_nodes_and_leaves(shape):
    tree = SHAPES[shape]()
    ax = tree.draw()
    labels = {t.get_text() for t in ax.texts}
    for name, k in zip(tree.names, tree.cardinalities):
        assert f"{name}\nK={k}" in labels
    for block in tree.pouches:
        assert "z" + ",".join(map(str, block)) in labels
    plt.close(ax.figure)


BAD_TREES = [
    # (constructor arguments, error type, message fragment)
    (([2, 1], [None, 0], [[0], [1]], [0, 1]), ValueError, r"cardinalities\[1\] must be >= 2"),
    (([2, 2], [None, None], [[0], [1]], [0, 1]), ValueError, "disconnected"),
    (([2, 2], [1, 0], [[0], [1]], [0, 1]), ValueError, "cycle"),
    (([2, 2, 2], [None, 2, 1], [[0], [1]], [0, 1]), ValueError, "form a cycle"),
    (([2, 2], [None, 1], [[0], [1]], [0, 1]), ValueError, "its own parent"),
    (([2, 2], [None, 5], [[0], [1]], [0, 1]), ValueError, r"parents\[1\] must be an integer <= 1"),
    (([2], [None], [[0, 1], [1]], [0, 0]), ValueError, "coordinate 1 is in two pouches"),
    (([2], [None], [[0], [2]], [0, 0]), ValueError, r"coordinates \[1\] are in no pouch"),
    (([2], [None], [[0], []], [0, 0]), ValueError, "empty block"),
    (([2], [None], [[0, 0]], [0]), ValueError, "twice"),
    (([2], [None], [[0]], [0, 0]), ValueError, "pouch_parents must have one entry per pouch"),
    (([2], [None], [], []), ValueError, "at least one pouch"),
    (([], [], [[0]], [0]), ValueError, "at least one latent node"),
    (([2.0], [None], [[0]], [0]), TypeError, "cardinalities"),
    (([2], [None], [[0.5]], [0]), TypeError, "pouches"),
    (([2], [None], ["ab"], [0]), TypeError, "pouches"),
    (([2], [None], [[0]], [1]), ValueError, r"pouch_parents\[0\]"),
    ((2, [None], [[0]], [0]), TypeError, "cardinalities must be a sequence"),
]


@pytest.mark.parametrize("args,error,message", BAD_TREES)
def test_malformed_trees_raise_clear_errors(args, error, message):
    with pytest.raises(error, match=message):
        LatentTree(*args)


def test_bad_names_and_widths():
    with pytest.raises(ValueError, match="names must be unique"):
        LatentTree([2, 2], [None, 0], [[0]], [0], names=["A", "A"])
    with pytest.raises(ValueError, match=r"names\[0\] must be a non-empty name"):
        LatentTree([2], [None], [[0]], [0], names=["a b"])
    with pytest.raises(ValueError, match=r"coordinates \[2\] are in no pouch"):
        LatentTree([2], [None], [[0, 1]], [0], num_coordinates=3)
    with pytest.raises(ValueError, match="beyond num_coordinates"):
        LatentTree([2], [None], [[0, 1]], [0], num_coordinates=1)
    with pytest.raises(ValueError, match="z must have 2 columns"):
        LatentTree.single(2, 2).check_width(3)
    with pytest.raises(ValueError, match="not a latent node"):
        LatentTree.single(2, 2).index("B")


def test_bad_edge_lists_and_dicts():
    with pytest.raises(ValueError, match="has two parents"):
        LatentTree.from_edges({"A": 2, "B": 2, "C": 2}, [("A", "C"), ("B", "C")], [("A", [0])])
    with pytest.raises(ValueError, match="unknown latent node 'X'"):
        LatentTree.from_edges({"A": 2}, [], [("X", [0])])
    with pytest.raises(TypeError, match=r"edges\[0\] must be a \(parent, child\) pair"):
        LatentTree.from_edges({"A": 2, "B": 2}, ["AB"], [("A", [0])])
    with pytest.raises(TypeError, match="mapping"):
        LatentTree.from_edges([("A", 2)], [], [("A", [0])])
    with pytest.raises(ValueError, match="lacks the key 'pouches'"):
        LatentTree.from_dict({"latents": []})
    with pytest.raises(ValueError, match="data\\['latents'\\] must be a list"):
        LatentTree.from_dict({"latents": [{"name": "A"}], "pouches": []})
    with pytest.raises(ValueError, match="names 'A' twice"):
        LatentTree.from_dict({"latents": [{"name": "A", "cardinality": 2, "parent": None}] * 2,
                              "pouches": [{"parent": "A", "coordinates": [0]}]})
