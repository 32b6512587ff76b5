"""The parameter draws of Algorithm 2: a cluster opened mid-pass gets (mu, lambda) from the
Normal-Gamma posterior given its one point (both passes), and the parameter block samples
eq. 22."""

from __future__ import annotations

import math

import pytest
import torch

from pyromodels.bnp import init_state, resample_params
from pyromodels.bnp.dp_conditional import torch_pass
from pyromodels.bnp.dp_kernels import HAVE_NUMBA, alg2_pass
from pyromodels.conjugate import NormalGamma
from pyromodels.testing import assert_mc_mean


def two_groups():
    z = torch.tensor([[0.0, 0.1], [0.2, -0.1], [3.0, 2.5], [2.8, 2.9]], dtype=torch.float64)
    prior = NormalGamma(torch.tensor([0.5, -0.5], dtype=torch.float64), 0.4, 2.0, 1.5)
    return z, prior


@pytest.mark.parametrize("backend", ["numba", "torch"])
def test_a_cluster_opened_mid_pass_draws_from_the_one_point_posterior(backend):
    if backend == "numba" and not HAVE_NUMBA:
        pytest.skip("numba is not installed")
    z, prior = two_groups()
    state = init_state(z, [0, 0, 1, 1], prior, params=(torch.zeros(2, 2), torch.ones(2)))
    # A huge alpha makes the new cluster certain for the first point; stop after it by giving
    # a one-draw pool (the pass returns before point 1, asking for a refill).
    log_new = torch.full((4,), 1e6, dtype=torch.float64)
    u = torch.full((4,), 0.5, dtype=torch.float64)
    g = torch.tensor([1.7], dtype=torch.float64)
    eps = torch.tensor([[0.3, -1.2]], dtype=torch.float64)
    if backend == "numba":
        pos = torch.zeros(1, dtype=torch.int64)
        stop = alg2_pass(z.numpy(), state.slot.numpy(), state.cluster_id.numpy(),
                         state.counts.numpy(), state.sums.numpy(), state.sumsq.numpy(),
                         state.mu.numpy(), state.lam.numpy(), state.active.numpy(),
                         state.position.numpy(), state.free.numpy(), state.counters.numpy(),
                         u.numpy(), log_new.numpy(), g.numpy(), eps.numpy(), pos.numpy(),
                         prior.loc.numpy(), float(prior.kappa), float(prior.b), 0)
    else:
        stop = torch_pass(z, state, prior, "alg2", u, log_new, g, eps, [0], 0)
    assert stop == 1
    assert state.assignments.tolist() == [2, 0, 1, 1] and state.num_clusters == 3
    slot = int(state.slot[0])
    post = prior.posterior(1, z[0], (z[0] ** 2).sum())
    lam = 1.7 / float(post.b)  # unit-rate Gamma(alpha_0 + d/2) draw over the rate
    assert float(post.a) == 2.0 + 1.0
    assert float(state.lam[slot]) == pytest.approx(lam, rel=1e-13)
    expected_mu = post.loc + eps[0] / math.sqrt(float(post.kappa) * lam)
    torch.testing.assert_close(state.mu[slot], expected_mu, rtol=1e-13, atol=1e-13)


def test_parameter_block_samples_eq_22():
    # Means of lambda_k and mu_k over 3000 draws against the posterior means a_n / b_n and m_n,
    # and of lambda_k^2 against a_n (a_n + 1) / b_n^2; 5 Monte Carlo standard errors
    # (independent draws).
    z, prior = two_groups()
    gen = torch.Generator().manual_seed(0)
    state = init_state(z, [0, 0, 1, 1], prior, gen)
    lam, mu = [], []
    for _ in range(3000):
        resample_params(z, state, prior, gen)
        _, m, la = state.cluster_params()
        lam.append(la.clone())
        mu.append(m.clone())
    lam, mu = torch.stack(lam), torch.stack(mu)
    lab = torch.tensor([0, 0, 1, 1])
    for k in range(2):
        zk = z[lab == k]
        post = prior.posterior(len(zk), zk.sum(0), (zk * zk).sum())
        a, b = float(post.a), float(post.b)
        assert_mc_mean(torch.stack([lam[:, k], lam[:, k] ** 2], 1).numpy(),
                       [a / b, a * (a + 1) / b ** 2])
        assert_mc_mean(mu[:, k].numpy(), post.loc.numpy())
