"""The sequential-allocation start and the chains checked once: the start seats each point from
its collapsed conditional given the points before it (against the product of those
conditionals, enumerated from the collapsed log joint), both backends draw the same start, a
chain checks its inputs once, and the blocked chain is blocked_sweep sweep by sweep."""

from __future__ import annotations

import math
from unittest import mock

import pytest
import torch

import pyromodels.bnp.blocked as blocked_module
import pyromodels.bnp.dp_sweep as sweep_module
import pyromodels.bnp.ng_predictive as ng_module
from pyromodels.bnp import (
    blocked_chain,
    blocked_init,
    blocked_sweep,
    chain_sweeps,
    collapsed_log_joint,
    partition_key,
    sequential_init,
    set_partitions,
    sweep,
)
from pyromodels.bnp.dp_kernels import HAVE_NUMBA
from pyromodels.conjugate import NormalGamma
from pyromodels.testing import assert_mc_mean

F64 = torch.float64
Z4 = torch.tensor([[0.0, 0.3], [0.4, -0.2], [2.5, 2.0], [0.9, 1.1]], dtype=F64)
PRIOR = NormalGamma(torch.tensor([0.5, 0.5], dtype=F64), 0.3, 2.0, 1.0)
ALPHA = 1.3
BACKENDS = ["torch"] + (["numba"] if HAVE_NUMBA else [])


def sequential_probability(labels) -> float:
    """prod_i p(c_i | c_<i, z_<=i): each factor the collapsed joint of the first i + 1 points
    normalised over the clusters open so far and a new one."""
    prob = 1.0
    for i in range(len(labels)):
        opened = max(labels[:i], default=-1) + 1
        joints = torch.stack([collapsed_log_joint(Z4[:i + 1], list(labels[:i]) + [k], PRIOR, ALPHA)
                              for k in range(opened + 1)])
        prob *= float(torch.softmax(joints, 0)[labels[i]])
    return prob


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_start_draws_the_product_of_sequential_conditionals(backend):
    # 3000 starts: the frequency of each of the 15 partitions within 5 Monte Carlo standard
    # errors of its probability (each cell fails with probability 5.7e-7 for a correct start)
    parts = set_partitions(4)
    exact = torch.tensor([sequential_probability(p) for p in parts], dtype=F64)
    assert math.isclose(float(exact.sum()), 1.0, rel_tol=1e-12)
    index = {p: j for j, p in enumerate(parts)}
    g = torch.Generator().manual_seed(0)
    hits = torch.zeros(3000, len(parts), dtype=F64)
    for r in range(3000):
        state = sequential_init(Z4, PRIOR, ALPHA, g, "alg3", backend=backend)
        hits[r, index[partition_key(state.assignments)]] = 1.0
    assert_mc_mean(hits, exact)


def test_both_backends_draw_the_same_start_and_ids_are_canonical():
    if not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    g = torch.Generator().manual_seed(1)
    z = torch.cat([torch.randn(30, 3, generator=g, dtype=F64) + 6 * k for k in range(4)])
    prior = NormalGamma(torch.zeros(3, dtype=F64), 0.05, 3.0, 3.0)
    starts = {b: sequential_init(z, prior, 1.0, torch.Generator().manual_seed(2), "alg2",
                                 backend=b) for b in ("numba", "torch")}
    a, b = starts["numba"], starts["torch"]
    assert torch.equal(a.assignments, b.assignments)
    assert torch.allclose(a.mu[a.active_slots], b.mu[b.active_slots], rtol=0, atol=1e-12)
    assert a.has_params and partition_key(a.assignments) == tuple(a.assignments.tolist())
    # 6 standard deviations apart, no planted cluster is merged with another (an early point
    # may still open a cluster of its own while its cluster holds few points)
    planted = torch.arange(4).repeat_interleave(30)
    for k in range(a.num_clusters):
        assert len(torch.unique(planted[a.assignments == a.occupied_ids[k]])) == 1


def test_a_chain_checks_its_inputs_once_and_sweeps_like_sweep():
    g = torch.Generator().manual_seed(3)
    z = torch.randn(25, 2, generator=g, dtype=F64)
    start = sequential_init(z, PRIOR, ALPHA, torch.Generator().manual_seed(4), "alg3")
    by_hand, chained = start.copy(), start.copy()
    g1, g2 = torch.Generator().manual_seed(5), torch.Generator().manual_seed(5)
    for _ in range(6):
        sweep(z, by_hand, PRIOR, ALPHA, g1, algorithm="alg3")
    with mock.patch.object(sweep_module, "check_data", wraps=sweep_module.check_data) as spy, \
            mock.patch.object(ng_module, "check_data", wraps=ng_module.check_data) as inner:
        for _ in chain_sweeps(z, chained, PRIOR, ALPHA, g2, 6, algorithm="alg3"):
            pass
    assert spy.call_count == 1 and inner.call_count == 0
    assert torch.equal(by_hand.assignments, chained.assignments)


def test_the_blocked_chain_checks_once_and_is_blocked_sweep_sweep_by_sweep():
    g = torch.Generator().manual_seed(6)
    z = torch.randn(40, 2, generator=g, dtype=F64)
    state = blocked_init(z, 3, PRIOR, ALPHA, 8, g)
    g1, g2 = torch.Generator().manual_seed(7), torch.Generator().manual_seed(7)
    by_hand = state
    with mock.patch.object(blocked_module, "check_state", wraps=blocked_module.check_state) as spy:
        for chained in blocked_chain(z, state, PRIOR, g2, 5, resample_alpha=(1.0, 1.0)):
            by_hand = blocked_sweep(z, by_hand, PRIOR, g1, resample_alpha=(1.0, 1.0))
            for name in ("labels", "v", "mu", "lam", "alpha"):
                assert torch.equal(getattr(chained, name), getattr(by_hand, name))
    assert spy.call_count == 1 + 5  # the chain's one check, and one per blocked_sweep call


def test_bad_start_arguments_are_named():
    g = torch.Generator().manual_seed(0)
    with pytest.raises(ValueError, match="algorithm must be one of"):
        sequential_init(Z4, PRIOR, ALPHA, g, "alg4")
    with pytest.raises(ValueError, match="alpha"):
        sequential_init(Z4, PRIOR, -1.0, g)
    with pytest.raises(ValueError, match="z must be finite|finite"):
        sequential_init(Z4 * float("nan"), PRIOR, ALPHA, g)
    with pytest.raises(ValueError, match="num_sweeps"):
        chain_sweeps(Z4, sequential_init(Z4, PRIOR, ALPHA, g, "alg3"), PRIOR, ALPHA, g, 0, "alg3")
