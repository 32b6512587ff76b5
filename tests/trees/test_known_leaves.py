"""Exact inference with the leaf terms of some pouches computed beforehand, and local EM
reusing the held pouches' terms across its steps."""

import pytest
import torch

from pyromodels.core import run_em
from pyromodels.trees import LatentTreeModel, TreeParams, extend_params, local_em, sample_tree, tree_posterior
from pyromodels.trees import em as kernels
from pyromodels.trees import message_passing as mp
from pyromodels.trees.em import ParameterPart
from pyromodels.trees.local_em import LocalTreeModel, changed_part

from .conftest import SHAPES, random_case
from .test_local_em import MOVES, three_level

TOL = 1e-12


def assert_same_posterior(a, b, tol=TOL):
    assert torch.allclose(a.log_likelihood, b.log_likelihood, atol=tol, rtol=0)
    for x, y in zip(a.node_marginals, b.node_marginals):
        assert torch.allclose(x, y, atol=tol, rtol=0)
    for x, y in zip(a.edge_marginals, b.edge_marginals):
        assert (x is None) == (y is None)
        assert x is None or torch.allclose(x, y, atol=tol, rtol=0)


def random_changed(params: TreeParams, held, gen) -> TreeParams:
    """``params`` with new means and covariances for every pouch outside ``held``."""
    other = TreeParams.random(params.tree, gen)
    free = [b for b in range(len(params.tree.pouches)) if b not in held]
    return params.replace(means={b: other.means[b] for b in free},
                          scale_trils={b: other.scale_trils[b] for b in free})


@pytest.mark.parametrize("seed", range(4))
def test_given_leaves_equals_the_plain_posterior(shape, seed):
    params, z = random_case(shape, seed, num_points=40)
    gen = torch.Generator().manual_seed(100 + seed)
    count = len(params.tree.pouches)
    for _ in range(3):  # random held sets, the other pouches changed after the terms were saved
        held = [b for b in range(count) if bool(torch.rand(1, generator=gen) < 0.6)]
        known = mp.known_leaves(params, z, held)
        changed = random_changed(params, set(held), gen)
        assert_same_posterior(mp.posterior_given_leaves(changed, z, known),
                              tree_posterior(changed, z))
        # the saved terms are read, never written
        assert_same_posterior(mp.posterior_given_leaves(changed, z, known),
                              tree_posterior(changed, z))


def test_every_pouch_known_or_none_known(shape):
    params, z = random_case(shape, 7, num_points=30)
    every = mp.known_leaves(params, z, range(len(params.tree.pouches)))
    assert_same_posterior(mp.posterior_given_leaves(params, z, every), tree_posterior(params, z))
    none = mp.known_leaves(params, z, [])
    assert all(t is None for t in none.terms)
    assert_same_posterior(mp.posterior_given_leaves(params, z, none), tree_posterior(params, z))


def test_given_leaves_in_the_log_space_fallback(monkeypatch):
    """Zero CPT entries with far points send points to the log-space passes, which must
    use the known terms of their rows too."""
    params, z = random_case("chain", 6, num_points=30)
    z = 40.0 * z
    cpt = params.cpts[1].clone()
    cpt[0] = torch.tensor([0.0, 0.0, 1.0], dtype=torch.float64)
    cpt[1] = torch.tensor([1.0, 0.0, 0.0], dtype=torch.float64)
    zeroed = params.replace(cpts={1: cpt})
    calls = []
    original = mp._log_space
    monkeypatch.setattr(mp, "_log_space", lambda *a, **k: calls.append(1) or original(*a, **k))
    known = mp.known_leaves(zeroed, z, [0, 2])
    given = mp.posterior_given_leaves(zeroed, z, known)
    assert calls, "no point took the log-space passes"
    assert_same_posterior(given, tree_posterior(zeroed, z))


def test_bad_known_terms_are_refused():
    params, z = random_case("three_level", 1, num_points=10)
    known = mp.known_leaves(params, z, [0, 1])
    with pytest.raises(ValueError, match="pouches must be pouch indices below 6"):
        mp.known_leaves(params, z, [0, 6])
    with pytest.raises(TypeError, match="known must be KnownLeaves"):
        mp.posterior_given_leaves(params, z, known.terms)
    with pytest.raises(ValueError, match=r"shape \(5, 2\), expected \(10, 2\)"):
        mp.posterior_given_leaves(params, z, mp.known_leaves(params, z[:5], [0, 1]))
    with pytest.raises(ValueError, match="terms of 2 latent nodes"):
        mp.posterior_given_leaves(params, z, mp.KnownLeaves(frozenset(), (None, None)))


def plain_local_em(start: TreeParams, part: ParameterPart, z, steps: int) -> TreeParams:
    """Local EM as it was: every step one plain posterior, M-step of the part."""
    current = start
    for _ in range(steps):
        stats, _ = kernels.batch_stats(current, z, part)
        current = kernels.m_step(start.tree, stats, current, part=part)
    return current


@pytest.mark.parametrize("index", range(len(MOVES)), ids=[m.describe() for m, *_ in MOVES])
def test_local_em_with_saved_terms_gives_the_plain_result(index, monkeypatch):
    move = MOVES[index][0]
    old = three_level()
    truth = TreeParams.random(old, torch.Generator().manual_seed(11), mean_scale=3.0)
    z, _ = sample_tree(truth, 300, torch.Generator().manual_seed(12))
    current = TreeParams.random(old, torch.Generator().manual_seed(12))
    start = extend_params(move, current, torch.Generator().manual_seed(13))
    part = changed_part(old, start.tree)
    computed = []
    original = local_em.known_leaves
    monkeypatch.setattr(local_em, "known_leaves",
                        lambda *a: computed.append(1) or original(*a))
    model = LocalTreeModel(start.tree, part)
    fit = run_em(model, z, init=model.em_start(start), max_iter=8, tol=0.0, progress=False,
                 warn_not_converged=False)
    held = len(start.tree.pouches) - len(part.pouches)
    assert len(computed) == (1 if held else 0)  # once for the steps and the outputs
    end = model.tree_params(fit)
    expected = plain_local_em(start, part, z, 8)
    for a, b in zip(end.tensors(), expected.tensors()):
        assert torch.allclose(a, b, atol=1e-10, rtol=1e-10)
    plain = tree_posterior(end, z)
    for name, m in zip(end.tree.names, plain.node_marginals):
        assert torch.allclose(fit.params[f"responsibilities.{name}"], m, atol=TOL, rtol=0)


def test_saved_terms_are_computed_again_for_other_held_tensors(monkeypatch):
    tree = SHAPES["three_level"]()
    params, z = random_case("three_level", 3, num_points=50)
    part = ParameterPart(False, frozenset(), frozenset({0}))
    model = LocalTreeModel(tree, part)
    computed = []
    original = local_em.known_leaves
    monkeypatch.setattr(local_em, "known_leaves",
                        lambda *a: computed.append(1) or original(*a))
    step = model.em_step_with_objective(z, model.em_start(params))[0]
    model.em_step_with_objective(z, step)
    assert len(computed) == 1
    moved = random_changed(params, {0}, torch.Generator().manual_seed(5))  # held ones changed
    values, objective = model.em_step_with_objective(z, model.em_start(moved))
    assert len(computed) == 2
    assert objective == pytest.approx(float(tree_posterior(moved, z).log_likelihood.sum()),
                                      abs=1e-9)
    model.em_step_with_objective(z.clone(), values)  # other data
    assert len(computed) == 3


def test_a_fit_hands_back_its_checked_parameters_without_building_them_again(monkeypatch):
    """The engine returns the parameters of the step before the last: the model keeps the
    last two it made, so neither its outputs nor ``tree_params`` rebuild and recheck them."""
    tree = three_level()
    truth = TreeParams.random(tree, torch.Generator().manual_seed(31), mean_scale=3.0)
    z, _ = sample_tree(truth, 200, torch.Generator().manual_seed(32))
    start = TreeParams.random(tree, torch.Generator().manual_seed(33))
    built = []
    original = kernels.params_from_dict
    monkeypatch.setattr(kernels, "params_from_dict",
                        lambda *a: built.append(1) or original(*a))
    for model in (LocalTreeModel(tree, ParameterPart(False, frozenset(), frozenset({0}))),
                  LatentTreeModel(tree)):
        fit = run_em(model, z, init=model.em_start(start), max_iter=5, tol=0.0,
                     progress=False, warn_not_converged=False)
        params = model.tree_params(fit)
        assert not built
        rebuilt = original(tree, fit.params)
        for a, b in zip(params.tensors(), rebuilt.tensors()):
            assert a is b
    with pytest.raises(TypeError, match="values must be a dict"):
        model.tree_params([1, 2])
