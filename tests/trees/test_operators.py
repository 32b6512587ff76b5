"""The structure-search operators: valid candidates, hand counts, inverse pairs, and the
parameters carried over a move (exact where the move is a re-parameterisation)."""

import itertools

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pyromodels.trees import (
    OPERATORS,
    PHASES,
    LatentTree,
    NodeDeletion,
    NodeIntroduction,
    NodeRelocation,
    Pouching,
    StateDeletion,
    StateIntroduction,
    TreeParams,
    Unpouching,
    brute_force,
    candidate_moves,
    extend_params,
    follow_up_moves,
    latent_conditional,
    latent_marginals,
    node_introductions,
    state_introductions,
    tree_log_likelihood,
)

from .conftest import SHAPES, random_case

ALL = ("SI", "SD", "NI", "ND", "NR", "PO", "UP")


def canonical(tree: LatentTree):
    """The structure up to node names and the order of nodes, pouches and coordinates."""
    def node(j):
        return (tree.cardinalities[j],
                tuple(sorted(tuple(sorted(tree.pouches[b])) for b in tree.leaves[j])),
                tuple(sorted(node(c) for c in tree.children[j])))
    return node(tree.root)


def check_result(tree: LatentTree, move) -> LatentTree:
    new = move.apply(tree)
    assert isinstance(new, LatentTree)
    assert new.num_coordinates == tree.num_coordinates
    assert sorted(c for b in new.pouches for c in b) == list(range(tree.num_coordinates))
    assert min(new.cardinalities) >= 2
    assert isinstance(move.describe(), str) and move.operator in move.describe()
    change = {"NI": 1, "ND": -1}.get(move.operator, 0)
    if move.operator == "NR":
        assert new.num_latents <= tree.num_latents
    else:
        assert new.num_latents == tree.num_latents + change
    if move.operator == "SI":
        j = tree.index(move.node)
        assert new.cardinalities[new.index(move.node)] == tree.cardinalities[j] + 1
        assert sum(new.cardinalities) == sum(tree.cardinalities) + 1
    if move.operator == "NI":
        assert new.cardinalities[new.index(move.name)] == \
            tree.cardinalities[tree.index(move.node)]
    return new


@pytest.mark.parametrize("op", ALL)
def test_every_candidate_gives_a_valid_tree(shape, op):
    tree = SHAPES[shape]()
    moves = OPERATORS[op](tree)
    assert len(set(moves)) == len(moves), "a candidate is listed twice"
    for move in moves:
        assert move.operator == op
        check_result(tree, move)


COUNTS = {  # by hand, see each tree in conftest.SHAPES
    # single: Y[3] over 3 scalar leaves: 3 neighbours, so no NI; 3 pairs to pouch
    "single": {"SI": 1, "SD": 1, "NI": 0, "ND": 0, "NR": 0, "PO": 3, "UP": 0},
    # chain Y0[2](z0, Y1[3](z12, Y2[2](z345))): ND 2 edges x 2 directions; NR 3 pouches x 2
    # other nodes + Y2 under Y0; UP 2 + 3 coordinates
    "chain": {"SI": 3, "SD": 1, "NI": 0, "ND": 4, "NR": 7, "PO": 0, "UP": 5},
    # star Y0[3](z2, Y1[2](z01), Y2[2](z3), Y3[3](z456)): NI C(4, 2) pairs at the root;
    # NR 4 pouches x 3 + 3 leaves x 2 siblings
    "star": {"SI": 4, "SD": 2, "NI": 6, "ND": 6, "NR": 18, "PO": 0, "UP": 5},
    # three_level: SI skips R (neighbours A[3], B[2]: bound 6/3 = 2) and F (bound 2/2 = 1);
    # NI C(4, 2) at A and at B (the parent counts); ND 6 edges x 2; PO z1 with z2 under D;
    # NR 6 pouches x 6 + C, D x 5 + E, F x 5 + A, B x 3
    "three_level": {"SI": 5, "SD": 2, "NI": 12, "ND": 12, "NR": 62, "PO": 1, "UP": 5},
}


def test_candidate_counts_by_hand(shape):
    tree = SHAPES[shape]()
    assert {op: len(OPERATORS[op](tree)) for op in ALL} == COUNTS[shape]
    assert len(candidate_moves(tree)) == sum(COUNTS[shape].values())
    assert [m.operator for m in candidate_moves(tree, PHASES["adjust"])] == \
        ["NR"] * COUNTS[shape]["NR"]


def test_counts_on_a_mixture_of_four_and_regularity():
    tree = LatentTree.single(3, 4)
    assert {op: len(OPERATORS[op](tree)) for op in ALL} == \
        {"SI": 1, "SD": 1, "NI": 6, "ND": 0, "NR": 0, "PO": 6, "UP": 0}
    three = SHAPES["three_level"]()
    assert {m.node for m in state_introductions(three)} == {"A", "B", "C", "D", "E"}
    assert len(state_introductions(three, regular=False)) == 7
    # a root between latent neighbours of 3 and 4 states may grow to 3, not to 4
    tree = LatentTree([2, 3, 4], [None, 0, 0], [[0], [1]], [1, 2])
    assert [m.node for m in state_introductions(tree)] == ["Y0", "Y1", "Y2"]
    bigger = StateIntroduction("Y0").apply(tree)
    assert "Y0" not in [m.node for m in state_introductions(bigger)]


def test_state_introduction_then_deletion_gives_the_structure_back(shape):
    tree = SHAPES[shape]()
    for move in state_introductions(tree, regular=False):
        new = move.apply(tree)
        k = new.cardinalities[new.index(move.node)]
        back = StateDeletion(move.node, state=k - 1).apply(new)
        assert back.to_dict() == tree.to_dict()


def test_node_introduction_then_deletion_gives_the_structure_back():
    for tree in (SHAPES["star"](), SHAPES["three_level"](), LatentTree.single(3, 5)):
        moves = node_introductions(tree)
        assert moves
        for move in moves:
            new = check_result(tree, move)
            back = NodeDeletion(move.name, dock=move.node).apply(new)
            assert back.to_dict() == tree.to_dict()


def test_node_introduction_of_the_parent_variant():
    tree = SHAPES["three_level"]()
    new = NodeIntroduction("A", ("R", (7,)), "N").apply(tree)
    assert new.names[new.parents[new.index("N")]] == "R"
    assert new.names[new.parents[new.index("A")]] == "N"
    assert new.names[new.pouch_parents[new.pouches.index((7,))]] == "N"
    assert new.cardinalities[new.index("N")] == 3


def test_node_deletion_of_the_root_makes_the_dock_the_root():
    tree = SHAPES["three_level"]()
    new = NodeDeletion("R", dock="B").apply(tree)
    assert new.names[new.root] == "B"
    assert new.names[new.parents[new.index("A")]] == "B"
    assert canonical(new) != canonical(tree)


def test_pouching_then_unpouching_gives_the_structure_back(shape):
    tree = SHAPES[shape]()
    for leaves in [*tree.leaves, *[[b] for b in range(len(tree.pouches))]]:
        for a, b in itertools.permutations(leaves, 2):
            first, second = tree.pouches[a], tree.pouches[b]
            if len(second) > 1:
                continue
            merged = Pouching(first, second).apply(tree)
            back = Unpouching(first + second, second[0]).apply(merged)
            assert canonical(back) == canonical(tree)
    for move in OPERATORS["UP"](tree):
        split = move.apply(tree)
        rest = tuple(c for c in move.pouch if c != move.coordinate)
        assert canonical(Pouching(rest, (move.coordinate,)).apply(split)) == canonical(tree)


def test_relocation_there_and_back(shape):
    tree = SHAPES[shape]()
    checked = 0
    for move in OPERATORS["NR"](tree):
        new = move.apply(tree)
        if new.num_latents < tree.num_latents:  # the old parent was pruned: no way back
            continue
        if isinstance(move.node, str):
            old = tree.names[tree.parents[tree.index(move.node)]]
        else:
            old = tree.names[tree.pouch_parents[tree.pouches.index(move.node)]]
        back = NodeRelocation(move.node, old).apply(new)
        if back.num_latents < tree.num_latents:  # the way back empties a node (F): pruned
            assert move.new_parent == "F" and "F" not in back.names
            continue
        assert canonical(back) == canonical(tree)
        checked += 1
    assert checked > 0 or shape == "single"


def test_relocation_prunes_a_parent_left_without_children():
    tree = SHAPES["three_level"]()
    new = NodeRelocation((0, 3), "R").apply(tree)
    assert "C" not in new.names and new.num_latents == tree.num_latents - 1


def test_follow_up_moves_after_node_introduction_and_pouching():
    tree = LatentTree.single(3, 5)
    ni = NodeIntroduction("Y", ((0,), (1,)), "N")
    grown = ni.apply(tree)
    assert follow_up_moves(grown, ni) == [NodeRelocation((c,), "N") for c in (2, 3, 4)]
    three = SHAPES["three_level"]()
    parent_variant = NodeIntroduction("A", ("R", (7,)), "N")
    assert follow_up_moves(parent_variant.apply(three), parent_variant) == \
        [NodeRelocation("C", "N"), NodeRelocation("D", "N")]
    po = Pouching((0,), (1,))
    merged = po.apply(LatentTree.single(2, 4))
    assert follow_up_moves(merged, po) == [Pouching((0, 1), (2,)), Pouching((0, 1), (3,))]
    for move in follow_up_moves(merged, po) + follow_up_moves(grown, ni):
        check_result(merged if move.operator == "PO" else grown, move)
    assert follow_up_moves(grown, StateIntroduction("Y")) == []
    with pytest.raises(ValueError, match="tree lacks latent node 'N'"):
        follow_up_moves(tree, ni)
    with pytest.raises(ValueError, match=r"tree lacks the pouch z\[0, 1\]"):
        follow_up_moves(LatentTree.single(2, 4), po)
    with pytest.raises(TypeError, match="accepted must be a move"):
        follow_up_moves(tree, "NI")


@st.composite
def random_trees(draw):
    num = draw(st.integers(1, 5))
    cards = draw(st.lists(st.integers(2, 4), min_size=num, max_size=num))
    parents = [None] + [draw(st.integers(0, j - 1)) for j in range(1, num)]
    width = draw(st.integers(1, 7))
    labels = draw(st.lists(st.integers(0, width - 1), min_size=width, max_size=width))
    groups = sorted({lab: [c for c in range(width) if labels[c] == lab] for lab in labels}.items())
    blocks = [g for _, g in groups]
    owners = [draw(st.integers(0, num - 1)) for _ in blocks]
    return LatentTree(cards, parents, blocks, owners)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(random_trees(), st.integers(0, 2**31 - 1))
def test_random_trees_every_candidate_and_its_parameters_are_valid(tree, seed):
    gen = torch.Generator().manual_seed(seed)
    params = TreeParams.random(tree, gen)
    z = 2.0 * torch.randn(4, tree.num_coordinates, generator=gen, dtype=torch.float64)
    before = tree_log_likelihood(params, z)
    for move in candidate_moves(tree):
        new = check_result(tree, move)
        carried = extend_params(move, params, torch.Generator().manual_seed(seed))
        assert carried.tree == new
        if move.operator in ("SI", "NI", "PO"):  # exact re-parameterisations without noise
            exact = extend_params(move, params, noise=0.0)
            assert (tree_log_likelihood(exact, z) - before).abs().max() < 1e-10, move.describe()


# -- parameters carried over -----------------------------------------------------------------

def loglik_change(params, z, move, noise=0.0):
    carried = extend_params(move, params, torch.Generator().manual_seed(3), noise=noise)
    assert carried.tree == move.apply(params.tree)
    assert carried.dtype == torch.float64
    return (tree_log_likelihood(carried, z) - tree_log_likelihood(params, z)).abs().max()


@pytest.mark.parametrize("op", ["SI", "NI", "PO"])
def test_exact_reparameterisations_keep_the_likelihood(shape, op):
    params, z = random_case(shape, 5)
    for move in OPERATORS[op](params.tree):
        assert loglik_change(params, z, move) < 1e-10, move.describe()


def test_noise_moves_state_introduction_away_from_the_copy():
    params, z = random_case("star", 6)
    assert loglik_change(params, z, StateIntroduction("Y0"), noise=0.2) > 1e-4


def diagonal(params: TreeParams) -> TreeParams:
    return TreeParams(params.tree, params.root_probs, params.cpts, params.means,
                      [torch.diag_embed(t.diagonal(dim1=-2, dim2=-1)) for t in params.scale_trils])


def test_unpouching_a_block_diagonal_pouch_is_exact(shape):
    params, z = random_case(shape, 7)
    params = diagonal(params)
    moves = OPERATORS["UP"](params.tree)
    for move in moves:
        assert loglik_change(params, z, move) < 1e-10, move.describe()
    # and after pouching, unpouching the second pouch's coordinate undoes it exactly
    for move in OPERATORS["PO"](params.tree):
        merged = extend_params(move, params)
        if len(move.second) == 1:
            undo = Unpouching(move.first + move.second, move.second[0])
            assert loglik_change(merged, z, undo) < 1e-10


def test_node_introduction_then_deletion_keeps_the_likelihood():
    for shape in ("star", "three_level"):
        params, z = random_case(shape, 8)
        for move in node_introductions(params.tree):
            grown = extend_params(move, params, noise=0.0)
            undo = NodeDeletion(move.name, dock=move.node)
            assert loglik_change(grown, z, undo) < 1e-10, move.describe()
            # moving a child of the copy back to the node is exact too
            child = move.pair[1]
            assert loglik_change(grown, z, NodeRelocation(child, move.node)) < 1e-10


def test_state_deletion_drops_the_chosen_state():
    params, _ = random_case("star", 9)
    new = extend_params(StateDeletion("Y3", state=1), params)
    b = params.tree.leaves[3][0]
    assert torch.equal(new.means[b], params.means[b][[0, 2]])
    # default: the least probable state
    least = int(torch.argmin(latent_marginals(params)[3]))
    new = extend_params(StateDeletion("Y3"), params)
    keep = [k for k in range(3) if k != least]
    assert torch.equal(new.scale_trils[b], params.scale_trils[b][keep])


def test_latent_conditional_matches_enumeration():
    params, z = random_case("three_level", 10)
    tree = params.tree
    joint = brute_force(params, z[:1]).states  # every joint state
    log_prior = params.root_probs.log()[joint[:, tree.root]]
    for j, p in enumerate(tree.parents):
        if p is not None:
            log_prior = log_prior + params.cpts[j].log()[joint[:, p], joint[:, j]]
    prior = log_prior.exp()
    m = latent_marginals(params)
    for a, b in itertools.product(range(tree.num_latents), repeat=2):
        table = torch.zeros(tree.cardinalities[a], tree.cardinalities[b], dtype=torch.float64)
        table.index_put_((joint[:, a], joint[:, b]), prior, accumulate=True)
        assert torch.allclose(table.sum(1), m[a], atol=1e-12)
        expected = table / table.sum(1, keepdim=True)
        assert torch.allclose(latent_conditional(params, a, b), expected, atol=1e-12)


def test_relocated_pouch_keeps_its_first_two_moments():
    params, _ = random_case("three_level", 11)
    tree = params.tree
    move = NodeRelocation((1,), "B")
    new = extend_params(move, params)

    def moments(p, block):
        b = p.tree.pouches.index(block)
        w = latent_marginals(p)[p.tree.pouch_parents[b]]
        mean = w @ p.means[b]
        second = torch.einsum("k,kij->ij", w, p.covariances[b]
                              + p.means[b].unsqueeze(-1) * p.means[b].unsqueeze(-2))
        return mean, second - torch.outer(mean, mean)

    for old, now in zip(moments(params, (1,)), moments(new, (1,))):
        assert torch.allclose(old, now, atol=1e-12)
    assert new.tree.names[new.tree.pouch_parents[new.tree.pouches.index((1,))]] == "B"
    assert tree.names[tree.pouch_parents[tree.pouches.index((1,))]] == "D"


# -- moves that do not apply ------------------------------------------------------------------

BAD = [
    (StateIntroduction("Q"), "must name a latent node"),
    (StateDeletion("B"), "keeps at least 2"),
    (StateDeletion("A", state=3), "must be a state of 'A'"),
    (NodeIntroduction("D", ((1,), (2,)), "N"), "needs more than 3"),
    (NodeIntroduction("A", ("C", "E"), "N"), "not a neighbour of 'A'"),
    (NodeIntroduction("A", ("C", "D"), "B"), "already a latent node"),
    (NodeDeletion("A", dock="E"), "must be a latent neighbour of 'A'"),
    (NodeRelocation("R", "A"), "root cannot be relocated"),
    (NodeRelocation("A", "D"), "would make a cycle"),
    (NodeRelocation((7,), "A"), "already a child of 'A'"),
    (NodeRelocation((7, 8), "A"), "coordinates of a pouch"),
    (Pouching((7,), (8,)), "different parents"),
    (Pouching((1,), (1,)), "two different pouches"),
    (Unpouching((1,), 1), "nothing to split"),
    (Unpouching((0, 3), 1), "one of the pouch's coordinates"),
]


@pytest.mark.parametrize("move, message", BAD, ids=[m.describe() for m, _ in BAD])
def test_moves_that_do_not_apply_are_refused_by_name(move, message):
    params, _ = random_case("three_level", 12)
    with pytest.raises(ValueError, match=message):
        move.apply(params.tree)
    with pytest.raises(ValueError, match=message):
        extend_params(move, params)


def test_records_normalise_their_fields_and_refuse_wrong_types():
    tree = SHAPES["three_level"]()
    move = NodeRelocation([0, 3], "R")
    assert move == NodeRelocation((0, 3), "R") and hash(move) == hash(NodeRelocation((0, 3), "R"))
    assert move.apply(tree) == NodeRelocation((0, 3), "R").apply(tree) != tree
    ni = NodeIntroduction("A", [[7], "C"], "N")
    assert ni.pair == ((7,), "C") and ni.apply(tree) == NodeIntroduction("A", ((7,), "C"), "N").apply(tree)
    assert Pouching([1], [2]).apply(tree).pouches == Pouching((1,), (2,)).apply(tree).pouches
    for make, message in [
            (lambda: StateIntroduction(0), "StateIntroduction.node must be a latent node's name"),
            (lambda: StateDeletion("A", state=1.0), "StateDeletion.state must be an integer"),
            (lambda: NodeIntroduction("A", ("C",), "N"), "NodeIntroduction.pair must be a pair"),
            (lambda: NodeDeletion("A", dock=None), "NodeDeletion.dock must be a latent"),
            (lambda: NodeRelocation(3, "A"), "NodeRelocation.node must be a pouch's coordinates"),
            (lambda: Pouching("12", (3,)), "Pouching.first must be a pouch's coordinates"),
            (lambda: Unpouching((1, 2), True), "Unpouching.coordinate must be an integer")]:
        with pytest.raises(TypeError, match=message):
            make()


def test_bad_arguments():
    tree = SHAPES["chain"]()
    params = TreeParams.random(tree)
    with pytest.raises(TypeError, match="tree must be a LatentTree"):
        state_introductions(tree.to_dict())
    with pytest.raises(ValueError, match="operators must be codes"):
        candidate_moves(tree, ["SI", "XX"])
    with pytest.raises(TypeError, match="params must be TreeParams"):
        extend_params(StateIntroduction("Y0"), tree)
    with pytest.raises(TypeError, match="move must be one of"):
        extend_params("SI", params)
    with pytest.raises(ValueError, match=r"noise must be a number in \[0, 1\)"):
        extend_params(StateIntroduction("Y0"), params, noise=1.5)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        extend_params(StateIntroduction("Y0"), params, generator=3)
