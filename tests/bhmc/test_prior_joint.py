"""BHMC's prior, Pyro program and closed-form joints: the closed forms against the program's
traced log density (condition-and-score), the label marginal against brute-force summation,
margin violations against a direct loop, and pinned bad-input messages."""

import itertools
import math

import pytest
import torch

from pyromodels.bhmc import (
    BHMC,
    BHMCPrior,
    BHMCState,
    cdl,
    complete_log_joint,
    hinge_log_factor,
    margin_violations,
    marginal_log_joint,
    program_values,
    rcdl,
    stick_fractions,
    stick_weights,
)
from pyromodels.bhmc import model as model_module
from pyromodels.bnp import Tree

F64 = torch.float64


def test_presets_and_defaults():
    animals = BHMCPrior.paper_preset("animals")
    assert (animals.alpha, animals.gamma, animals.gamma0, animals.depth) == (0.4, 1.0, 0.85, 3)
    fashion = BHMCPrior.paper_preset("fashion", num_components=7)
    assert (fashion.alpha, fashion.gamma, fashion.gamma0, fashion.depth) == (0.2, 1.5, 0.85, 4)
    assert fashion.num_components == 7 and fashion.nu0 == 1.0
    # the documented truncation: the leftover stick's mean (gamma0 / (1 + gamma0))^(K - 1)
    assert (0.85 / 1.85) ** (animals.num_components - 1) < 1e-6


@pytest.mark.parametrize("kwargs, error, match", [
    ({"alpha": 0.0}, ValueError, "alpha must be > 0"),
    ({"gamma": -1.0}, ValueError, "gamma must be > 0"),
    ({"gamma0": "a"}, TypeError, "gamma0 must be a real number"),
    ({"depth": 0}, ValueError, "depth must be an integer >= 1"),
    ({"depth": 2.0}, TypeError, "depth must be an integer"),
    ({"num_components": 1}, ValueError, "num_components must be an integer >= 2"),
    ({"nu0": math.inf}, ValueError, "nu0 must be finite"),
])
def test_prior_bad_input(kwargs, error, match):
    args = {"alpha": 1.0, "gamma": 1.0, "gamma0": 1.0, "depth": 2} | kwargs
    with pytest.raises(error, match=match):
        BHMCPrior(**args)
    with pytest.raises(ValueError, match="dataset must be one of"):
        BHMCPrior.paper_preset("mnist")


def test_sticks_round_trip():
    o = torch.tensor([0.3, 0.9, 0.01, 0.5], dtype=F64)
    beta = stick_weights(o)
    assert math.isclose(float(beta.sum()), 1.0, rel_tol=1e-15)
    assert torch.allclose(stick_fractions(beta), o, rtol=1e-13)


def _draw(seed, N=6, D=2, K=3, L=2, alpha=1.5):
    prior = BHMCPrior(alpha=alpha, gamma=0.7, gamma0=1.3, depth=L, num_components=K,
                      loc=0.0, scale=1.0)
    model = BHMC(prior)
    return model, model.simulate(N, D, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("seed, L, K", [(0, 1, 2), (1, 2, 3), (2, 3, 4), (3, 2, 5)])
def test_complete_log_joint_is_the_programs(seed, L, K):
    model, draw = _draw(seed, N=7, K=K, L=L)
    program = model.log_joint(draw.x, program_values(draw.state))
    closed = complete_log_joint(draw.x, draw.state, model.prior)
    assert torch.isclose(program, closed, rtol=1e-12, atol=1e-10)
    assert model.complete_log_joint(draw.x, draw.state) == closed


def test_joint_does_not_depend_on_node_ids():
    model, draw = _draw(5, N=8, L=3)
    s = draw.state
    shift = {z: (z * 7 + 3 if z else 0) for z in s.tree.nodes}  # other ids, same tree
    paths = [[shift[z] for z in row] for row in s.tree.paths.tolist()]
    other = BHMCState(Tree.from_paths(paths), {shift[z]: w for z, w in s.weights.items()},
                      s.theta, s.c)
    assert torch.isclose(complete_log_joint(draw.x, other, model.prior),
                         complete_log_joint(draw.x, s, model.prior), rtol=1e-14)


def test_marginal_log_joint_sums_the_program_over_labels():
    model, draw = _draw(7, N=4, K=3, L=2)
    terms = []
    for labels in itertools.product(range(3), repeat=4):
        state = BHMCState(draw.state.tree, draw.state.weights, draw.state.theta,
                          torch.tensor(labels))
        terms.append(model.log_joint(draw.x, program_values(state)))
    brute = torch.logsumexp(torch.stack(terms), 0)
    assert torch.isclose(marginal_log_joint(draw.x, draw.state, model.prior), brute, rtol=1e-12)


def _violations_by_loop(x, tree, eta, eps0):
    out = []
    for n in range(x.shape[0]):
        best = (-math.inf, -1, -1)
        for lv, v in enumerate(tree.path(n)):
            for z in tree.siblings(v) if lv else ():
                zeta = eps0 - float((eta[v] - eta[z]) @ x[n])
                if zeta > best[0]:
                    best = (zeta, lv, z)
        out.append(best)
    return out


def test_margin_violations_against_a_loop():
    g = torch.Generator().manual_seed(3)
    paths = [[0, 1, 2], [0, 1, 3], [0, 1, 3], [0, 4, 5], [0, 6, 7], [0, 6, 8], [0, 6, 9]]
    tree = Tree.from_paths(paths)
    x = torch.randn(len(paths), 3, dtype=F64, generator=g)
    eta = {z: torch.randn(3, dtype=F64, generator=g) for z in tree.nodes if z}
    zeta, level, node = margin_violations(x, tree, eta, 0.7)
    for n, (z, lv, s) in enumerate(_violations_by_loop(x, tree, eta, 0.7)):
        assert math.isclose(float(zeta[n]), z, rel_tol=1e-12)
        assert (int(level[n]), int(node[n])) == (lv, s)


def test_no_siblings_means_no_constraint():
    tree = Tree.from_paths([[0, 1, 2], [0, 1, 2]])
    eta = {1: torch.ones(2, dtype=F64), 2: -torch.ones(2, dtype=F64)}
    zeta, level, node = margin_violations(torch.ones(2, 2, dtype=F64), tree, eta, 1.0)
    assert zeta.tolist() == [-math.inf, -math.inf] and level.tolist() == node.tolist() == [-1, -1]


def test_cdl_is_the_program_given_weights_and_components():
    """The paper's CDL is log p(X, c, V | B, Theta): the program's joint less the sites o,
    beta_* and theta (their log densities read off the same trace)."""
    from pyro import poutine

    model, draw = _draw(13, N=8, L=2, alpha=2.0)
    cond = poutine.condition(model.model, data=program_values(draw.state))
    tr = poutine.trace(cond).get_trace(draw.x)
    tr.compute_log_prob()
    parts = [site["log_prob_sum"] for name, site in tr.nodes.items() if site["type"] == "sample"
             and not (name in ("o", "theta") or name.startswith("beta_"))]
    assert torch.isclose(cdl(draw.x, draw.state, model.prior), sum(parts), rtol=1e-12)


def test_rcdl_adds_the_hinges():
    model, draw = _draw(11, N=9, L=2, alpha=3.0)
    g = torch.Generator().manual_seed(0)
    eta = {z: torch.randn(2, dtype=F64, generator=g) for z in draw.state.tree.nodes if z}
    zeta, level, _ = margin_violations(draw.x, draw.state.tree, eta, 1.0)
    assert bool((level >= 0).any()) and bool((zeta[level >= 0] > 0).any())
    expected = cdl(draw.x, draw.state, model.prior) + sum(
        -2 * 0.3 * max(0.0, float(z)) for z, lv in zip(zeta, level) if lv >= 0)
    got = rcdl(draw.x, draw.state, model.prior, eta, 0.3, 1.0)
    assert math.isclose(float(got), float(expected), rel_tol=1e-12)
    assert hinge_log_factor(torch.tensor(1.0), 0.3) == -0.6


def test_bad_state_and_inputs():
    model, draw = _draw(1)
    s = draw.state
    with pytest.raises(TypeError, match="state must be a BHMCState"):
        complete_log_joint(draw.x, {"tree": s.tree}, model.prior)
    with pytest.raises(TypeError, match="prior must be a BHMCPrior"):
        complete_log_joint(draw.x, s, {"alpha": 1})
    with pytest.raises(ValueError, match=r"x must have shape \(6, 2\)"):
        complete_log_joint(draw.x[:, :1], s, model.prior)
    missing = BHMCState(s.tree, {z: w for z, w in s.weights.items() if z}, s.theta, s.c)
    with pytest.raises(ValueError, match="state.weights must map exactly the living nodes"):
        complete_log_joint(draw.x, missing, model.prior)
    bad_c = BHMCState(s.tree, s.weights, s.theta, torch.full((6,), 3))
    with pytest.raises(ValueError, match=r"state.c must lie in \[0, 2\]"):
        complete_log_joint(draw.x, bad_c, model.prior)
    other = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=3, num_components=3)
    with pytest.raises(ValueError, match="state must have depth 3"):
        complete_log_joint(draw.x, s, other)
    with pytest.raises(ValueError, match="eta must be a dict holding"):
        margin_violations(draw.x, s.tree, {}, 1.0)
    with pytest.raises(TypeError, match="eps0 must be a finite real number"):
        margin_violations(draw.x, s.tree, {}, math.nan)
    with pytest.raises(ValueError, match=r"x must have shape \(6, 3\)"):
        model_module.bhmc_program(6, 3, model.prior, draw.x)
