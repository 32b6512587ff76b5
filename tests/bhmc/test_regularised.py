"""RBHMC: the (eta, s, lambda) block on the one-level, three-sibling toy against the exact
regularised target by quadrature (and the paper-literal block's bias there), the path step's
ratio with the other data's kernels, RCDL bookkeeping, pinned messages."""

import doctest
import functools
import math

import pytest
import torch
from scipy import stats

from pyromodels.bhmc import BHMC, BHMCPrior, cdl, margin_violations
from pyromodels.bhmc import regularised as regularised_module
from pyromodels.bhmc.regularised import (
    RBHMCState,
    init_rbhmc_state,
    rbhmc_sweep,
    run_rbhmc,
    sample_eta,
    sample_lambdas,
)
from pyromodels.bnp import Tree

F64 = torch.float64


def test_docstring_examples():
    result = doctest.testmod(regularised_module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


@functools.lru_cache(maxsize=1)
def _toy_exact(x=2.0, C=1.0, eps0=1.0):
    """Moments of p(eta) exp{-2C max(0, max_{z=2,3} eps0 - (eta_1 - eta_z) x)}, eta ~ N(0, I_3),
    by a midpoint rule on [-6.4, 6.4]^3 with step 0.08 (the integrand is smooth but for a kink
    on two planes, where the rule's error is O(h^2), a few 1e-3 at most; the Gaussian tail
    beyond 6.4 holds 1e-10 of the mass)."""
    h = 0.08
    g = torch.arange(-6.4 + h / 2, 6.4, h, dtype=F64)
    e1, e2, e3 = g.view(-1, 1, 1), g.view(1, -1, 1), g.view(1, 1, -1)
    zeta = eps0 - x * (e1 - torch.maximum(e2, e3))
    w = torch.exp(-0.5 * (e1 ** 2 + e2 ** 2 + e3 ** 2) - 2 * C * torch.relu(zeta))
    total = w.sum()
    mean = [float((w * e).sum() / total) for e in (e1, e2, e3)]
    second = [float((w * e * e).sum() / total) for e in (e1, e2, e3)]
    return torch.tensor(mean + second, dtype=F64)


def _toy_chain(paper_literal, iterations, seed):
    """The toy as a one-level tree: datum 0 (x = 2) at node 1, data 1 and 2 (x = 0) at its
    siblings 2 and 3. A datum with x = 0 has the constant zeta = eps0, so only datum 0's hinge
    involves eta, and the target is exactly the toy's."""
    prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=1, num_components=2, nu0=1.0)
    tree = Tree.from_paths([[0, 1], [0, 2], [0, 3]])
    w = {z: torch.tensor([0.5, 0.5], dtype=F64) for z in (0, 1, 2, 3)}
    eta = {z: torch.zeros(1, dtype=F64) for z in (1, 2, 3)}
    state = RBHMCState(tree, w, torch.zeros(2, 1, dtype=F64), torch.zeros(3, dtype=torch.int64),
                       eta, torch.ones(3, dtype=F64))
    x = torch.tensor([[2.0], [0.0], [0.0]], dtype=F64)
    g = torch.Generator().manual_seed(seed)
    out = torch.empty(iterations, 6, dtype=F64)
    rates = []
    for t in range(iterations):
        rates.append(sample_eta(x, state, prior, 1.0, 1.0, g, paper_literal=paper_literal))
        sample_lambdas(x, state, 1.0, 1.0, g)
        e = torch.cat([state.eta[z] for z in (1, 2, 3)])
        out[t] = torch.cat([e, e * e])
    return out, sum(rates) / len(rates)


def test_toy_quadrature_matches_the_known_values():
    exact = _toy_exact()
    known = torch.tensor([0.93411, -0.46706, -0.46706, 1.43462, 0.88954, 0.88954], dtype=F64)
    assert torch.allclose(exact, known, atol=5e-3)


def test_eta_lambda_block_is_exact_on_the_toy():
    """Means and second moments of (eta_1, eta_2, eta_3) along the chain against quadrature;
    standard errors by batch means (50 batches), Student t bound at family-wise level 1e-3
    over the 6 moments (Bonferroni). The paper-literal block (no MH correction) must miss the
    exact mean of eta_1 by more than the same bound (spec 8: its E[eta_1] is about 1.32)."""
    exact = _toy_exact()
    batches = 50
    bound = stats.t.ppf(1 - 1e-3 / 12, batches - 1)
    draws, rate = _toy_chain(False, 3000, seed=3)
    b = draws.reshape(batches, -1, 6).mean(1)
    z = (draws.mean(0) - exact) / (b.std(0) / math.sqrt(batches))
    assert float(z.abs().max()) < bound, (draws.mean(0), exact)
    assert 0.5 < rate < 1.0  # the correction rejects some moves (about 13% on the toy)
    literal, rate_literal = _toy_chain(True, 1000, seed=4)
    b = literal.reshape(batches, -1, 6).mean(1)
    z_literal = (literal.mean(0) - exact) / (b.std(0) / math.sqrt(batches))
    assert rate_literal == 1.0 and float(z_literal[0]) > bound, literal.mean(0)


def test_path_step_counts_every_datums_kernel():
    """With the hinge on, rbhmc_sweep keeps the state consistent (eta for exactly the living
    non-root nodes, lam > 0), and RCDL <= CDL by construction."""
    prior = BHMCPrior(alpha=2.0, gamma=1.0, gamma0=1.0, depth=2, num_components=3)
    draw = BHMC(prior).simulate(10, 2, torch.Generator().manual_seed(2))
    g = torch.Generator().manual_seed(0)
    state = init_rbhmc_state(draw.x, prior, g)
    for literal in (False, True):
        for _ in range(3):
            rbhmc_sweep(draw.x, state, prior, 0.5, 1.0, g, paper_literal=literal)
            assert set(state.eta) == set(state.tree.nodes) - {state.tree.root}
            assert set(state.weights) == set(state.tree.nodes) and bool((state.lam > 0).all())
            state.tree.validate()
    chain = run_rbhmc(draw.x, prior, 4, 0.5, 1.0, g, init=state, burn_in=1)
    assert bool((chain.rcdl <= chain.cdl + 1e-12).all())
    zeta, level, _ = margin_violations(draw.x, chain.state.tree, chain.state.eta, 1.0)
    expected = cdl(draw.x, chain.state, prior) - 2 * 0.5 * torch.relu(zeta[level >= 0]).sum()
    assert torch.isclose(chain.rcdl[-1], expected, rtol=1e-12)
    assert chain.best_rcdl == float(chain.rcdl[1:].max())


def test_bad_settings():
    prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=1, num_components=2)
    x = torch.zeros(3, 1, dtype=F64)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="C must be > 0"):
        run_rbhmc(x, prior, 2, 0.0, 1.0, g)
    with pytest.raises(ValueError, match="eps0 must be >= 0"):
        run_rbhmc(x, prior, 2, 1.0, -1.0, g)
    with pytest.raises(TypeError, match="paper_literal must be a bool"):
        run_rbhmc(x, prior, 2, 1.0, 1.0, g, paper_literal="yes")
