"""Chain state: stable ids, consistent bookkeeping through births, deaths and growth, the same
chain from both backends, Escobar-West inside a chain, and pinned errors."""

from __future__ import annotations

import pytest
import torch

from pyromodels.bnp import (
    DPState,
    assignment_log_probs,
    collapsed_log_joint,
    init_state,
    log_joint,
    resample_params,
    run_chain,
    state_statistics,
    sweep,
)
from pyromodels.conjugate import NormalGamma


def check_invariants(state: DPState, z: torch.Tensor) -> None:
    """The slot bookkeeping agrees with the assignments."""
    k, nfree, next_id = state.counters.tolist()
    active = state.active[:k]
    free = state.free[:nfree]
    assert sorted(torch.cat([active, free]).tolist()) == list(range(state.capacity))
    assert torch.equal(state.position[active], torch.arange(k))
    assert bool((state.cluster_id[free] == -1).all())
    ids = state.cluster_id[active]
    assert len(set(ids.tolist())) == k and bool((ids >= 0).all()) and bool((ids < next_id).all())
    assert set(state.slot.tolist()) == set(active.tolist())
    counts = torch.bincount(state.slot, minlength=state.capacity)
    assert torch.equal(state.counts, counts)
    sums = torch.zeros_like(state.sums).index_add_(0, state.slot, z)
    torch.testing.assert_close(state.sums, sums, rtol=1e-12, atol=1e-12)


def spread_data(n=30):
    # Points 10 apart, a precision prior pinned near 10 (sd 0.3) and a broad prior on the
    # means: every point ends alone, so K climbs from 1 past the initial capacity (17 slots).
    z = 10.0 * torch.arange(n, dtype=torch.float64).unsqueeze(1)
    prior = NormalGamma(torch.full((1,), 5.0 * n, dtype=torch.float64), 1e-5, 500.0, 50.0)
    return z, prior


@pytest.mark.parametrize("algorithm", ["alg2", "alg3"])
def test_backends_give_the_same_chain_for_one_seed(algorithm):
    gen = torch.Generator().manual_seed(0)
    z = torch.cat([torch.randn(15, 3, generator=gen, dtype=torch.float64),
                   3 + torch.randn(15, 3, generator=gen, dtype=torch.float64)])
    prior = NormalGamma(torch.zeros(3, dtype=torch.float64), 0.2, 2.0, 2.0)
    out = {}
    for backend in ("numba", "torch"):
        g = torch.Generator().manual_seed(4)
        state = init_state(z, torch.arange(30) % 4, prior, g, algorithm=algorithm)
        out[backend] = run_chain(z, state, prior, 1.5, g, 25, algorithm=algorithm,
                                 backend=backend, keep_labels=True)
        check_invariants(out[backend].state, z)
    assert torch.equal(out["numba"].labels, out["torch"].labels)
    a, b = out["numba"].state, out["torch"].state
    assert torch.equal(a.counters, b.counters) and torch.equal(a.active, b.active)
    if algorithm == "alg2":
        torch.testing.assert_close(a.mu, b.mu, rtol=1e-12, atol=1e-12)
        torch.testing.assert_close(a.lam, b.lam, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("backend", ["numba", "torch"])
@pytest.mark.parametrize("algorithm", ["alg2", "alg3"])
def test_births_deaths_and_growth_keep_ids_stable(algorithm, backend):
    z, prior = spread_data()
    gen = torch.Generator().manual_seed(1)
    state = init_state(z, [0] * 30, prior, gen, algorithm=algorithm)
    history = []
    for _ in range(3):
        sweep(z, state, prior, 1.0, gen, algorithm=algorithm, backend=backend)
        check_invariants(state, z)
        history.append(state.assignments.clone())
    assert state.num_clusters == 30 and state.capacity > 17
    assert sorted(state.occupied_ids.tolist()) == sorted(set(history[-1].tolist()))
    # An id that disappears never comes back, and a new id is larger than every earlier one.
    seen, gone = set(), set()
    for labels in history:
        now = set(labels.tolist())
        assert not (now & gone)
        new = now - seen
        assert not seen or not new or min(new) > max(seen)
        gone |= seen - now
        seen |= now
    # Once every point is alone, a further sweep keeps the partition; but a point alone is
    # taken out of its cluster, which empties and is deleted, so it comes back under a new id.
    sweep(z, state, prior, 1.0, gen, algorithm=algorithm, backend=backend)
    assert torch.equal(state.assignments, history[-1] + 30)


def test_an_occupied_cluster_keeps_its_id_through_a_sweep():
    gen = torch.Generator().manual_seed(2)
    z = torch.cat([torch.randn(40, 2, generator=gen, dtype=torch.float64),
                   8 + torch.randn(40, 2, generator=gen, dtype=torch.float64)])
    prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.1, 2.0, 2.0)
    labels = torch.tensor([7] * 40 + [3] * 40)
    state = init_state(z, labels, prior, gen)  # ids 0 (first group) and 1 (second)
    for _ in range(5):
        sweep(z, state, prior, 0.01, gen)
        assert set(state.assignments[:40].tolist()) == {0}
        assert set(state.assignments[40:].tolist()) == {1}


def test_escobar_west_inside_a_chain_moves_alpha():
    z, prior = spread_data(12)
    gen = torch.Generator().manual_seed(3)
    state = init_state(z, [0] * 12, prior, gen, algorithm="alg3")
    out = run_chain(z, state, prior, 0.5, gen, 20, algorithm="alg3", alpha_prior=(1.0, 1.0))
    assert out.alphas.shape == (20,) and bool((out.alphas > 0).all())
    assert len(set(out.alphas.tolist())) == 20 and out.alpha == float(out.alphas[-1])
    fixed = run_chain(z, init_state(z, [0] * 12, prior, gen, algorithm="alg3"), prior, 0.5,
                      gen, 5, algorithm="alg3")
    assert fixed.alphas.tolist() == [0.5] * 5 and fixed.labels is None


def test_collapsed_sweep_drops_the_parameters_and_resample_restores_them():
    z, prior = spread_data(6)
    gen = torch.Generator().manual_seed(5)
    state = init_state(z, [0] * 6, prior, gen)
    assert state.has_params
    sweep(z, state, prior, 1.0, gen, algorithm="alg3")
    assert not state.has_params
    with pytest.raises(ValueError, match="state has no cluster parameters"):
        log_joint(z, state, prior, 1.0)
    with pytest.raises(ValueError, match="state has no cluster parameters"):
        state.point_params()
    resample_params(z, state, prior, gen)
    ids, mu, lam = state.cluster_params()
    assert mu.shape == (state.num_clusters, 1) and lam.shape == (state.num_clusters,)
    mu_i, lam_i = state.point_params()
    for i, c in enumerate(state.assignments.tolist()):
        k = ids.tolist().index(c)
        assert float(mu_i[i, 0]) == float(mu[k, 0]) and float(lam_i[i]) == float(lam[k])
    copy = state.copy()
    sweep(z, copy, prior, 1.0, gen)
    assert state.has_params and torch.equal(state.occupied_ids, ids)


def test_sampler_errors_are_pinned():
    z, prior = spread_data(4)
    gen = torch.Generator().manual_seed(0)
    state = init_state(z, [0, 0, 1, 1], prior, gen)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        sweep(z, state, prior, 0.0, gen)
    with pytest.raises(ValueError, match="alpha must be > 0"):
        collapsed_log_joint(z, [0, 0, 1, 1], prior, -2.0)
    with pytest.raises(ValueError, match="z must be finite"):
        sweep(torch.tensor([[0.0], [1.0], [float("nan")], [2.0]]), state, prior, 1.0, gen)
    with pytest.raises(ValueError, match="z must be 2-dimensional"):
        init_state(torch.zeros(4, dtype=torch.float64), [0, 0, 1, 1], prior, gen)
    with pytest.raises(ValueError, match=r"state is for 4 points of dimension 1, but z has "
                                         r"shape \(5, 1\)"):
        sweep(torch.zeros(5, 1, dtype=torch.float64), state, prior, 1.0, gen)
    with pytest.raises(ValueError, match=r"labels must have one entry per row of z \(4\), got 3"):
        init_state(z, [0, 0, 1], prior, gen)
    with pytest.raises(ValueError, match=r"labels must have one entry per row of z \(4\), got 5"):
        collapsed_log_joint(z, [0, 0, 1, 1, 1], prior, 1.0)
    with pytest.raises(ValueError, match="labels must be non-negative"):
        init_state(z, [0, -1, 1, 1], prior, gen)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        sweep(z, state, prior, 1.0, gen, algorithm="alg8")
    with pytest.raises(ValueError, match="backend must be one of"):
        sweep(z, state, prior, 1.0, gen, backend="cuda")
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sweep(z, state, prior, 1.0, None)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        init_state(z, [0, 0, 1, 1], prior)
    with pytest.raises(TypeError, match="state must be a DPState"):
        sweep(z, {"labels": [0, 0, 1, 1]}, prior, 1.0, gen)
    with pytest.raises(ValueError, match="prior has dimension 1 but z has 2 columns"):
        init_state(torch.zeros(4, 2, dtype=torch.float64), [0, 0, 1, 1], prior, gen)
    with pytest.raises(ValueError, match=r"params\[1\] \(lam\) must be finite and > 0"):
        init_state(z, [0, 0, 1, 1], prior, params=(torch.zeros(2, 1), torch.tensor([1.0, 0.0])))
    with pytest.raises(ValueError, match=r"params\[0\] \(mu\) must have shape \(2, 1\)"):
        init_state(z, [0, 0, 1, 1], prior, params=(torch.zeros(3, 1), torch.ones(2)))
    with pytest.raises(ValueError, match="i must be an integer <= 3"):
        assignment_log_probs(z, state, 4, prior, 1.0)
    with pytest.raises(ValueError, match="num_sweeps must be an integer >= 1"):
        run_chain(z, state, prior, 1.0, gen, 0)
    with pytest.raises(ValueError, match=r"alpha_prior\[1\] must be > 0"):
        run_chain(z, state, prior, 1.0, gen, 1, alpha_prior=(1.0, 0.0))
    with pytest.raises(TypeError, match="state must be a DPState"):
        state_statistics(z, None, prior, 1.0)
    collapsed = init_state(z, [0, 0, 1, 1], prior, algorithm="alg3")
    with pytest.raises(ValueError, match="algorithm='alg2' needs cluster parameters"):
        assignment_log_probs(z, collapsed, 0, prior, 1.0, algorithm="alg2")
