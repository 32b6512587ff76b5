"""Local EM (the structure search's screening): which parameters a move changes, and EM steps
that re-estimate only those."""

import pytest
import torch

from pyromodels.core import run_em
from pyromodels.trees import (
    LatentTreeModel,
    NodeDeletion,
    NodeIntroduction,
    NodeRelocation,
    Pouching,
    StateDeletion,
    StateIntroduction,
    TreeParams,
    Unpouching,
    extend_params,
    sample_tree,
    tree_log_likelihood,
)
from pyromodels.trees.em import ParameterPart, params_to_dict
from pyromodels.trees.local_em import LocalTreeModel, changed_part

from .conftest import SHAPES

# on the three-level tree R -> A(3), B; A -> C, D(3); B -> E, F; pouches C:(0, 3), D:(1,),
# D:(2,), E:(4, 5, 6), A:(7,), B:(8,): each move with (root prior?, CPTs by node name,
# pouches by coordinates) it changes
MOVES = [
    (Pouching((1,), (2,)), False, set(), {(1, 2)}),
    (Unpouching((4, 5, 6), 5), False, set(), {(4, 6), (5,)}),
    (StateIntroduction("A"), False, {"A", "C", "D"}, {(7,)}),
    (StateIntroduction("R"), True, {"A", "B"}, set()),
    (StateDeletion("D"), False, {"D"}, {(1,), (2,)}),
    (NodeRelocation((7,), "B"), False, set(), {(7,)}),
    (NodeRelocation("E", "A"), False, {"E"}, set()),
    (NodeDeletion("B", "R"), False, {"E", "F"}, {(8,)}),
    (NodeDeletion("R", "A"), True, {"B"}, set()),
    (NodeIntroduction("A", ("C", "D"), "Y7"), False, {"Y7", "C", "D"}, set()),
    (NodeIntroduction("A", ("R", (7,)), "Y7"), False, {"Y7", "A"}, {(7,)}),
]


def three_level():
    return SHAPES["three_level"]()


def described(part: ParameterPart, tree) -> tuple:
    return (part.root, {tree.names[j] for j in part.cpts},
            {tree.pouches[b] for b in part.pouches})


@pytest.mark.parametrize("move, root, cpts, pouches", MOVES,
                         ids=[m.describe() for m, *_ in MOVES])
def test_changed_part_names_what_each_move_changes(move, root, cpts, pouches):
    old = three_level()
    new = move.apply(old)
    assert described(changed_part(old, new), new) == (root, cpts, pouches)


def test_the_same_tree_changes_nothing():
    tree = three_level()
    assert described(changed_part(tree, tree), tree) == (False, set(), set())


def data_for(tree, seed: int, n: int = 300) -> torch.Tensor:
    truth = TreeParams.random(tree, torch.Generator().manual_seed(seed), mean_scale=3.0)
    z, _ = sample_tree(truth, n, torch.Generator().manual_seed(seed + 1))
    return z


@pytest.mark.parametrize("covariance", ["full", "fixed"])
def test_with_every_parameter_in_the_part_a_local_step_is_the_full_step(shape, covariance):
    tree = SHAPES[shape]()
    z = data_for(tree, 3)
    start = params_to_dict(TreeParams.random(tree, torch.Generator().manual_seed(4)))
    full = LatentTreeModel(tree, covariance=covariance)
    local = LocalTreeModel(tree, ParameterPart.everything(tree), covariance=covariance)
    a, objective_a = full.em_step_with_objective(z, start)
    b, objective_b = local.em_step_with_objective(z, start)
    assert objective_a == objective_b
    assert a.keys() == b.keys()
    for key in a:
        assert torch.equal(a[key], b[key]), key


@pytest.mark.parametrize("index", range(len(MOVES)), ids=[m.describe() for m, *_ in MOVES])
def test_local_em_never_lowers_the_likelihood_and_changes_only_the_part(index):
    move = MOVES[index][0]
    old = three_level()
    z = data_for(old, 11)
    current = TreeParams.random(old, torch.Generator().manual_seed(12))
    start = extend_params(move, current, torch.Generator().manual_seed(13))
    part = changed_part(old, start.tree)
    model = LocalTreeModel(start.tree, part)
    seen = []
    fit = run_em(model, z, init=params_to_dict(start), max_iter=15, tol=0.0, progress=False,
                 callbacks=[lambda step, info: seen.append(info["objective"])],
                 warn_not_converged=False)
    end = model.tree_params(fit)
    values = [float(tree_log_likelihood(start, z).sum()), *seen,
              float(tree_log_likelihood(end, z).sum())]
    assert all(b >= a - 1e-9 * abs(a) for a, b in zip(values, values[1:])), values
    assert values[-1] > values[0]
    names = start.tree.names
    assert torch.equal(end.root_probs, start.root_probs) != part.root
    for j, (a, b) in enumerate(zip(start.cpts, end.cpts)):
        if a is not None:
            assert torch.equal(a, b) != (j in part.cpts), names[j]
    for b_, pair in enumerate(zip(start.means, end.means, start.scale_trils, end.scale_trils)):
        kept = torch.equal(pair[0], pair[1]) and torch.equal(pair[2], pair[3])
        assert kept != (b_ in part.pouches), start.tree.pouches[b_]


def test_a_part_outside_the_tree_is_refused():
    tree = three_level()
    with pytest.raises(ValueError, match="part.cpts"):
        LocalTreeModel(tree, ParameterPart(False, frozenset({tree.root}), frozenset()))
    with pytest.raises(ValueError, match="part.pouches"):
        LocalTreeModel(tree, ParameterPart(False, frozenset(), frozenset({99})))
    with pytest.raises(TypeError, match="part must be a ParameterPart"):
        LocalTreeModel(tree, {"root": True})
    with pytest.raises(TypeError, match="new must be a LatentTree"):
        changed_part(tree, "tree")


def test_replace_checks_only_the_new_tensors_and_shares_the_rest():
    params = TreeParams.random(three_level(), torch.Generator().manual_seed(0))
    c = params.tree.index("C")
    cpt = torch.full((3, 2), 0.5, dtype=torch.float64)
    new = params.replace(cpts={c: cpt}, means={2: torch.zeros(3, 1, dtype=torch.float64)})
    assert torch.equal(new.cpts[c], cpt) and torch.equal(new.means[2], torch.zeros(3, 1))
    assert new.root_probs is params.root_probs and new.scale_trils == params.scale_trils
    assert all(a is b for i, (a, b) in enumerate(zip(new.cpts, params.cpts)) if i != c)
    with pytest.raises(ValueError, match=r"cpts\['C'\]"):
        params.replace(cpts={c: torch.full((3, 2), 0.6, dtype=torch.float64)})
    with pytest.raises(ValueError, match=r"scale_trils\[0\] must be lower triangular"):
        params.replace(scale_trils={0: torch.ones(2, 2, 2, dtype=torch.float64)})
    with pytest.raises(ValueError, match="means must be keyed by indices"):
        params.replace(means={6: torch.zeros(2, 1, dtype=torch.float64)})
    with pytest.raises(ValueError, match="cpts must be keyed by indices"):
        params.replace(cpts={params.tree.root: cpt})
    with pytest.raises(TypeError, match="cpts must be a dict"):
        params.replace(cpts=[cpt])


def test_a_start_handed_over_as_params_gives_the_same_fit_as_its_dict():
    tree = three_level()
    z = data_for(tree, 21)
    start = TreeParams.random(tree, torch.Generator().manual_seed(22))
    fits = []
    for handover in ("dict", "params"):
        model = LatentTreeModel(tree)
        init = params_to_dict(start) if handover == "dict" else model.em_start(start)
        fits.append(run_em(model, z, init=init, max_iter=4, tol=0.0, progress=False,
                           warn_not_converged=False))
    for key, value in fits[0].params.items():
        assert torch.equal(value, fits[1].params[key]), key
    with pytest.raises(ValueError, match="model's tree"):
        LatentTreeModel(SHAPES["chain"]()).em_start(start)
    with pytest.raises(TypeError, match="params must be TreeParams"):
        LatentTreeModel(tree).em_start(params_to_dict(start))
