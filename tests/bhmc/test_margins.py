"""The sweeps' fast paths against their oracles: the incremental margin violations
(pyromodels.bhmc.margins) against the full recomputation of joint.margin_violations after
random path, eta and whole-sweep moves; the path step's likelihood ratio against log-sum-exp."""


import numpy as np
import pytest
import torch

from pyromodels.bhmc import BHMC, BHMCPrior, margin_violations
from pyromodels.bhmc.augmentation import polson_scott_log_kernel
from pyromodels.bhmc.joint import component_log_likelihoods
from pyromodels.bhmc.margins import (
    MarginCache,
    kernel_log_ratio,
    log_kernel,
    node_rows,
    path_move_rows,
)
from pyromodels.bhmc.regularised import (
    init_rbhmc_state,
    log_kernels,
    rbhmc_path_step,
    rbhmc_sweep,
    sample_eta,
)
from pyromodels.bhmc.sampler import leaf_log_ratio, shifted_likelihoods
from pyromodels.bnp import path_proposal

F64 = torch.float64


def _problem(seed, N=24, D=3, depth=3, alpha=1.5):
    # alpha 1.5 on 24 data: many births and deaths at every level, so the moves change
    # sibling sets often (the cases the incremental rows must cover)
    prior = BHMCPrior(alpha=alpha, gamma=1.0, gamma0=1.0, depth=depth, num_components=4)
    x = BHMC(prior).simulate(N, D, torch.Generator().manual_seed(seed)).x
    g = torch.Generator().manual_seed(seed + 1)
    state = init_rbhmc_state(x, prior, g)
    state.lam = 0.2 + torch.rand(N, dtype=F64, generator=g) * 3
    return x, prior, state, g


def _assert_equal_to_full(cache, x, state, eps0):
    zeta, level, node = margin_violations(x, state.tree, state.eta, eps0)
    assert np.array_equal(cache.level, level.numpy())
    assert np.array_equal(cache.node, node.numpy())
    # same dot products in another order: equal to rounding (|eta^T x| is O(10) here)
    np.testing.assert_allclose(cache.zeta, zeta.numpy(), rtol=0, atol=1e-12)


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("paper_literal", [False, True])
def test_cache_equals_full_recomputation_after_random_path_moves(seed, paper_literal):
    x, prior, state, g = _problem(seed)
    cache = MarginCache(x, state.tree, state.eta, 1.0)
    _assert_equal_to_full(cache, x, state, 1.0)
    loglik = component_log_likelihoods(x, state.theta)
    accepted = births = 0
    for _ in range(3):
        for n in torch.randperm(x.shape[0], generator=g).tolist():
            before = state.tree.num_nodes
            accepted += rbhmc_path_step(loglik[n], x, state, n, prior, 0.05, 1.0, g,
                                        paper_literal, cache)
            births += state.tree.num_nodes != before
            _assert_equal_to_full(cache, x, state, 1.0)
    assert accepted > 10 and births > 5  # the check saw real tree changes


@pytest.mark.parametrize("seed", [3, 4])
@pytest.mark.parametrize("paper_literal", [False, True])
def test_cache_equals_full_recomputation_after_eta_moves(seed, paper_literal):
    x, prior, state, g = _problem(seed)
    cache = MarginCache(x, state.tree, state.eta, 0.5)
    old = {z: e.clone() for z, e in state.eta.items()}
    rate = sample_eta(x, state, prior, 0.3, 0.5, g, paper_literal, cache)
    assert rate > 0 and any(not torch.equal(old[z], state.eta[z]) for z in old)
    _assert_equal_to_full(cache, x, state, 0.5)


def test_whole_sweeps_keep_the_cache_and_log_kernels_agree():
    x, prior, state, g = _problem(5)
    for _ in range(3):
        rbhmc_sweep(x, state, prior, 0.1, 1.0, g)
    cache = MarginCache(x, state.tree, state.eta, 1.0)
    _assert_equal_to_full(cache, x, state, 1.0)
    full_k, *_ = log_kernels(x, state, 0.1, 1.0)
    np.testing.assert_allclose(log_kernel(state.lam.numpy(), cache.zeta, cache.level, 0.1),
                               full_k.numpy(), rtol=1e-13, atol=1e-12)


def test_rows_cover_every_changed_datum_and_subsets_compute_alike():
    """The rows path_move_rows and node_rows name hold every datum whose zeta changed (checked
    directly, from two full recomputations), and compute() on any row subset equals the full."""
    x, prior, state, g = _problem(6)
    tree, eta = state.tree, state.eta
    covered_changes = 0
    for n in range(x.shape[0]):
        before = margin_violations(x, tree, eta, 1.0)
        edit = tree.move_path(n, path_proposal(tree, n, prior.alpha, g).path)
        for z in edit.born:
            eta[z] = torch.randn(x.shape[1], dtype=F64, generator=g)
        after = margin_violations(x, tree, eta, 1.0)
        moved = (before[0] != after[0]) | (before[2] != after[2])
        changed = set(np.flatnonzero(moved.numpy()).tolist())
        rows = set(path_move_rows(tree.paths.numpy(), edit).tolist())
        assert changed <= rows
        covered_changes += len(changed - {n})
        for z in edit.died:
            del eta[z]
    assert covered_changes > 0  # moves changed other data's zeta
    paths = tree.paths.numpy()
    for z in [z for z in tree.nodes if z != tree.root]:
        before = margin_violations(x, tree, eta, 1.0)
        eta[z] = eta[z] + 3.0
        after = margin_violations(x, tree, eta, 1.0)
        changed = np.flatnonzero((before[0] != after[0]).numpy())
        assert set(changed.tolist()) <= set(node_rows(paths, tree, z).tolist())
    cache = MarginCache(x, tree, eta, 1.0)
    rows = np.sort(torch.randperm(x.shape[0], generator=g)[:7].numpy())
    sub = cache.compute(tree, eta, rows)
    np.testing.assert_array_equal(sub[1], cache.level[rows])
    np.testing.assert_allclose(sub[0], cache.zeta[rows], rtol=0, atol=1e-12)


@pytest.mark.parametrize("scale", [1.0, 1000.0])
def test_leaf_log_ratio_equals_the_logsumexp_ratio(scale):
    """The path step's likelihood ratio from shifted likelihoods against the direct
    log-sum-exp of log beta + log N, with weights floored at the smallest normal float and
    log likelihoods up to 1000 nats apart (exp without the shift underflows below -745)."""
    g = torch.Generator().manual_seed(7)
    loglik = -scale * torch.rand(6, 5, dtype=F64, generator=g)
    lik = shifted_likelihoods(loglik)
    for n in range(6):
        w = torch.softmax(3 * torch.randn(2, 5, dtype=F64, generator=g), -1)
        w[0, n % 5] = torch.finfo(F64).tiny
        w = w / w.sum(-1, keepdim=True)
        exact = (torch.logsumexp(torch.log(w[1]) + loglik[n], 0)
                 - torch.logsumexp(torch.log(w[0]) + loglik[n], 0))
        assert abs(leaf_log_ratio(lik[n], w[1], w[0]) - float(exact)) < 1e-12 * (1 + abs(float(exact)))


@pytest.mark.parametrize("rows", [1, 9])
def test_kernel_log_ratio_equals_the_polson_scott_kernel_difference(rows):
    """Against augmentation.polson_scott_log_kernel at the effective violations (0 where the
    level is -1), for one datum (the plain-float branch) and several."""
    g = torch.Generator().manual_seed(11)
    lam = 0.1 + 2 * torch.rand(rows, dtype=F64, generator=g)
    new = (3 * torch.randn(rows, dtype=F64, generator=g), torch.randint(-1, 3, (rows,), generator=g))
    old = (3 * torch.randn(rows, dtype=F64, generator=g), torch.randint(-1, 3, (rows,), generator=g))
    if rows == 1:
        old = (old[0], torch.tensor([-1]))  # the unconstrained branch on one side
    for C in (0.01, 1.0):
        exact = sum(
            (polson_scott_log_kernel(lam, torch.where(level >= 0, zeta, torch.zeros_like(zeta)), C)
             * sign).sum() for (zeta, level), sign in ((new, 1), (old, -1)))
        fast = kernel_log_ratio(lam.numpy(), tuple(t.numpy() for t in new),
                                tuple(t.numpy() for t in old), C)
        assert abs(fast - float(exact)) < 1e-12 * (1 + abs(float(exact)))


@pytest.mark.parametrize("which", ["bhmc", "rbhmc"])
def test_sweeps_run_on_one_torch_thread_and_restore_the_callers_count(which, monkeypatch):
    from pyromodels.bhmc import regularised, sampler

    x, prior, state, g = _problem(8, N=6)
    seen = []
    original = sampler._sample_weights  # the sweep's (unchecked) weights block

    def spy(*args, **kwargs):
        seen.append(torch.get_num_threads())
        return original(*args, **kwargs)

    monkeypatch.setattr(sampler, "_sample_weights", spy)
    monkeypatch.setattr(regularised, "_sample_weights", spy)
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        if which == "bhmc":
            sampler.sweep(x, state, prior, g)
        else:
            regularised.rbhmc_sweep(x, state, prior, 0.1, 1.0, g)
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
    assert seen == [1]
