"""Geweke's "getting it right" check of the whole BHMC sweep at a tiny size: the successive-
conditional simulator (a sweep given x, then x redrawn given the state) must reproduce the
prior's law of label-invariant statistics, estimated from independent forward draws."""

import math

import pytest
import torch
from scipy import stats

from pyromodels.bhmc import BHMC, BHMCPrior
from pyromodels.bhmc.sampler import sweep

F64 = torch.float64


def _statistics(x, state):
    tree = state.tree
    same = float(tree.path(0) == tree.path(1))
    gap = float((x[0] - x[1]).pow(2).sum())
    return [len(tree.nodes_at_level(1)), len(tree.leaves), float(state.theta.pow(2).sum()),
            float(x.pow(2).mean()), float(state.c[0] == state.c[1]), same, same * gap, gap]


@pytest.mark.slow
def test_geweke_whole_sweep():
    """Both sides estimate the same means (8 statistics). The forward side's standard errors
    are iid ones; the chain's come from 80 batch means. The z of each difference must stay
    below the normal quantile at family-wise level 1e-3, two-sided (Bonferroni over 8); the
    Student correction for 80 batches is absorbed by the forward side's iid errors.

    A small gamma makes the leaf weights nearly one-hot, so that the data depend strongly on
    the paths. Power: with the path kernel's likelihood switched off (a wrong kernel that
    leaves only the prior of the paths invariant) the same check gave |z| of 5.6, 5.4 and 4.9
    on sum theta^2, mean x^2 and the gap, against the bound 3.5 (the correct one: |z| < 0.8)."""
    prior = BHMCPrior(alpha=1.0, gamma=0.2, gamma0=1.0, depth=2, num_components=3)
    model = BHMC(prior)
    N, D = 3, 2
    sweeps, batches = 16000, 80
    g = torch.Generator().manual_seed(11)
    forward = torch.tensor([_statistics(d.x, d.state)
                            for d in (model.simulate(N, D, g) for _ in range(sweeps))], dtype=F64)
    draw = model.simulate(N, D, g)
    x, state = draw.x, draw.state
    chain = torch.empty(sweeps, forward.shape[1], dtype=F64)
    for s in range(sweeps):
        sweep(x, state, prior, g)
        x = state.theta[state.c] + torch.randn(N, D, dtype=F64, generator=g)
        chain[s] = torch.tensor(_statistics(x, state), dtype=F64)
    se_f = forward.std(0) / math.sqrt(forward.shape[0])
    se_c = chain.reshape(batches, -1, chain.shape[1]).mean(1).std(0) / math.sqrt(batches)
    z = (chain.mean(0) - forward.mean(0)) / torch.sqrt(se_f ** 2 + se_c ** 2)
    bound = stats.norm.ppf(1 - 1e-3 / (2 * forward.shape[1]))
    assert float(z.abs().max()) < bound, (z, chain.mean(0), forward.mean(0))
