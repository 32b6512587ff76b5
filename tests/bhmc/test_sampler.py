"""The BHMC sampler's blocks against the Pyro program (condition-and-score), the path kernel
against the exact conditional of a tiny tree, and the path kernel's invariance for the nested
CRP prior (likelihood off) against exact values."""

import math

import pytest
import torch
from scipy import stats

from pyromodels.bhmc import BHMC, BHMCPrior, BHMCState, cdl, program_values
from pyromodels.bhmc import sampler as sampler_module
from pyromodels.bhmc.sampler import (
    component_conditional,
    label_log_probs,
    path_step,
    run_bhmc,
    sample_paths,
    sweep,
)
from pyromodels.bnp import (
    NEW,
    Tree,
    antoniak_log_prob,
    crp_log_prob,
    path_conditional_log_probs,
    set_partitions,
)

F64 = torch.float64


def _draw(seed, N=6, D=2, K=3, L=2):
    prior = BHMCPrior(alpha=1.5, gamma=0.8, gamma0=1.2, depth=L, num_components=K,
                      loc=0.0, scale=1.0)
    model = BHMC(prior)
    return model, model.simulate(N, D, torch.Generator().manual_seed(seed))


@pytest.mark.parametrize("seed", [0, 1])
def test_label_conditional_is_the_programs(seed):
    model, draw = _draw(seed, N=5, K=4)
    logp = label_log_probs(draw.x, draw.state)
    for n in range(5):
        scores = []
        for k in range(4):
            c = draw.state.c.clone()
            c[n] = k
            values = program_values(BHMCState(draw.state.tree, draw.state.weights, draw.state.theta, c))
            scores.append(model.log_joint(draw.x, values))
        assert torch.allclose(logp[n], torch.log_softmax(torch.stack(scores), 0), atol=1e-11)


def test_component_conditional_is_the_programs():
    """log p(theta_k = a | rest) - log p(theta_k = b | rest) from the program equals the
    Gaussian log-density difference of N(S_k / (n_k + 1), I / (n_k + 1)), for an occupied and
    an empty component."""
    model, draw = _draw(2, N=8, K=3, D=2)
    c = torch.tensor([0, 0, 0, 1, 1, 0, 1, 0])
    state = BHMCState(draw.state.tree, draw.state.weights, draw.state.theta, c)
    mean, var = component_conditional(draw.x, c, 3)
    g = torch.Generator().manual_seed(4)
    for k in range(3):
        a, b = torch.randn(2, 2, dtype=F64, generator=g)
        lp = []
        for point in (a, b):
            theta = state.theta.clone()
            theta[k] = point
            s = BHMCState(state.tree, state.weights, theta, c)
            lp.append(model.log_joint(draw.x, program_values(s)))
        gauss = torch.distributions.Normal(mean[k], var[k].sqrt())
        expected = gauss.log_prob(a).sum() - gauss.log_prob(b).sum()
        assert torch.isclose(lp[0] - lp[1], expected, rtol=1e-10, atol=1e-10)
    assert var[2] == 1.0 and torch.equal(mean[2], torch.zeros(2, dtype=F64))  # empty: the prior


def _batch_z(indicators, exact, batches):
    """z statistics by batch means: the chain's frequency minus the exact probability over the
    standard error estimated from `batches` consecutive batch means (nearly independent
    when a batch is much longer than the chain's autocorrelation)."""
    b = indicators.reshape(batches, -1, indicators.shape[-1]).mean(1)
    se = b.std(0, unbiased=True) / math.sqrt(batches)
    return (indicators.mean(0) - exact) / se, se


def test_path_kernel_matches_the_exact_conditional(realised_candidate):
    """Datum 3's path under the path kernel alone (other variables fixed) must follow
    p(v_3 | rest) = nCRP(v_3 | V^-3) * sum_k beta_{a,k} N(x_3; theta_k, 1) / Z, with a the
    deepest existing node of the candidate: a new node's weights are integrated out by their
    prior, E[Dir(gamma beta_parent)] = beta_parent, level by level. The chain carries the new
    nodes' drawn weights while it stays on a new branch, so the frequencies are compared
    through batch means; with 6 candidates the bound is the Student t quantile (99 d.o.f.) at
    family-wise level 1e-3, two-sided (Bonferroni)."""
    prior = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=2, num_components=2)
    tree = Tree.from_paths([[0, 1, 2], [0, 1, 3], [0, 4, 5], [0, 1, 2]])
    w = {0: [0.5, 0.5], 1: [0.8, 0.2], 2: [0.95, 0.05], 3: [0.3, 0.7], 4: [0.1, 0.9], 5: [0.02, 0.98]}
    weights = {z: torch.tensor(v, dtype=F64) for z, v in w.items()}
    theta = torch.tensor([[-2.0], [2.0]], dtype=F64)
    x3 = torch.tensor([-1.0], dtype=F64)
    state = BHMCState(tree, weights, theta, torch.zeros(4, dtype=torch.int64))
    loglik = -0.5 * ((x3 - theta[:, 0]) ** 2 + math.log(2 * math.pi))  # (K,)
    paths, log_prior = path_conditional_log_probs(tree, 3, prior.alpha)
    cands = [tuple(p) for p in paths.tolist()]
    anc = [[z for z in p if z != NEW][-1] for p in cands]
    log_target = log_prior + torch.stack([torch.logsumexp(torch.log(weights[a]) + loglik, 0)
                                          for a in anc])
    exact = torch.softmax(log_target, 0)

    steps, batches = 20_000, 100
    g = torch.Generator().manual_seed(2024)
    hits = torch.zeros(steps, len(cands), dtype=F64)
    for t in range(steps):
        path_step(loglik, state, 3, prior, g)
        hits[t, cands.index(realised_candidate(state.tree, 3))] = 1.0
    z, se = _batch_z(hits, exact, batches)
    bound = stats.t.ppf(1 - 1e-3 / (2 * len(cands)), batches - 1)
    assert float(z.abs().max()) < bound, (hits.mean(0), exact)
    # the check has power: the nCRP prior (what a kernel ignoring x_3 would give) is far away
    assert float(((torch.exp(log_prior) - exact).abs() / se).max()) > 3 * bound
    # the other data and the untouched nodes' weights are left as they were
    state.tree.validate()
    assert set(state.weights) == set(state.tree.nodes)
    for z in (0, 1, 2, 3, 4, 5):
        assert torch.equal(state.weights[z], torch.tensor(w[z], dtype=F64))
    assert [state.tree.path(n) for n in range(3)] == [(0, 1, 2), (0, 1, 3), (0, 4, 5)]


def _exact_level_counts(N, alpha):
    """Exact law of (#level-1 nodes, #leaves) of the depth-2 nested CRP: the level-1 partition
    by its CRP EPPF, then each block's number of children by Antoniak(size, alpha),
    independently."""
    law = {}
    for labels in set_partitions(N):
        sizes = torch.bincount(torch.tensor(labels))
        p1 = float(crp_log_prob(sizes, alpha).exp())
        leaves = {0: 1.0}
        for size in sizes.tolist():
            tables = {t: float(antoniak_log_prob(t, size, alpha).exp()) for t in range(1, size + 1)}
            convolved = {}
            for a, pa in leaves.items():
                for t, pt in tables.items():
                    convolved[a + t] = convolved.get(a + t, 0.0) + pa * pt
            leaves = convolved
        for total, p in leaves.items():
            key = (len(sizes), total)
            law[key] = law.get(key, 0.0) + p1 * p
    return law


def test_path_kernel_leaves_the_ncrp_invariant():
    """Likelihood off, block (a) is a Gibbs sampler of the nested CRP: from every datum on one
    path, the chain's frequencies of #level-1 nodes and #leaves (N = 4, L = 2) must match the
    exact law. Batch means over 50 batches; 8 frequencies, Student t bound at family-wise
    level 1e-3 (Bonferroni)."""
    N, alpha = 4, 0.8
    prior = BHMCPrior(alpha=alpha, gamma=1.0, gamma0=1.0, depth=2, num_components=2)
    tree = Tree.from_paths([[0, 1, 2]] * N)
    state = BHMCState(tree, {z: torch.tensor([0.5, 0.5], dtype=F64) for z in (0, 1, 2)},
                      torch.zeros(2, 1, dtype=F64), torch.zeros(N, dtype=torch.int64))
    x = torch.zeros(N, 1, dtype=F64)
    law = _exact_level_counts(N, alpha)
    assert math.isclose(sum(law.values()), 1.0, rel_tol=1e-12)
    exact = torch.tensor([sum(p for (a, _), p in law.items() if a == k) for k in range(1, N + 1)]
                         + [sum(p for (_, b), p in law.items() if b == k) for k in range(1, N + 1)],
                         dtype=F64)
    g = torch.Generator().manual_seed(7)
    for _ in range(50):  # burn-in from the one-path start
        sample_paths(x, state, prior, g, likelihood=False)
    sweeps, batches = 6000, 50
    hits = torch.zeros(sweeps, 2 * N, dtype=F64)
    for s in range(sweeps):
        sample_paths(x, state, prior, g, likelihood=False)
        hits[s, len(state.tree.nodes_at_level(1)) - 1] = 1.0
        hits[s, N + len(state.tree.nodes_at_level(2)) - 1] = 1.0
    z, _ = _batch_z(hits, exact, batches)
    z = torch.nan_to_num(z, nan=0.0)  # a category never seen with exact probability 0
    bound = stats.t.ppf(1 - 1e-3 / (2 * 2 * N), batches - 1)
    assert float(z.abs().max()) < bound, (hits.mean(0), exact)
    assert set(state.weights) == set(state.tree.nodes)


def test_run_bhmc_records_and_reproduces():
    model, draw = _draw(3, N=12, K=4, L=2)
    prior = model.prior
    chain = run_bhmc(draw.x, prior, 6, torch.Generator().manual_seed(5), burn_in=2)
    again = run_bhmc(draw.x, prior, 6, torch.Generator().manual_seed(5), burn_in=2)
    assert torch.equal(chain.cdl, again.cdl)
    assert chain.cdl.shape == (6,) and chain.nodes_per_level.shape == (6, 2)
    assert torch.isclose(chain.cdl[-1], cdl(draw.x, chain.state, prior))
    assert chain.best_cdl == float(chain.cdl[2:].max())
    assert math.isclose(float(cdl(draw.x, chain.best_state, prior)), chain.best_cdl, rel_tol=1e-12)
    assert int(chain.num_leaves[-1]) == len(chain.state.tree.leaves)
    # the chain started from `init` does not modify it
    init = draw.state.copy()
    run_bhmc(draw.x, prior, 2, torch.Generator().manual_seed(0), init=init)
    assert init.tree == draw.state.tree and torch.equal(init.c, draw.state.c)


def test_bad_input():
    model, draw = _draw(1)
    g = torch.Generator().manual_seed(0)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        sweep(draw.x, draw.state, model.prior, 0)
    with pytest.raises(TypeError, match="prior must be a BHMCPrior"):
        sweep(draw.x, draw.state, None, g)
    with pytest.raises(TypeError, match="likelihood must be a bool"):
        sample_paths(draw.x, draw.state, model.prior, g, likelihood=1)
    deeper = BHMCPrior(alpha=1.0, gamma=1.0, gamma0=1.0, depth=3, num_components=3)
    with pytest.raises(ValueError, match="state must have depth 3"):
        sweep(draw.x, draw.state, deeper, g)
    with pytest.raises(ValueError, match=r"x must have shape \(6, 2\)"):
        sweep(draw.x[:3], draw.state, model.prior, g)
    with pytest.raises(ValueError, match="burn_in must be an integer <= 4"):
        run_bhmc(draw.x, model.prior, 5, g, burn_in=5)
    with pytest.raises(ValueError, match="num_sweeps must be an integer >= 1"):
        run_bhmc(draw.x, model.prior, 0, g)


def test_label_and_weight_kernels_leave_the_prior_invariant():
    """Likelihood off, from exact prior draws: two rounds of blocks (b) and (d) must leave the
    law of (beta_root[0], beta_leaf(0)[0], beta_leaf(0)[c_0], 1(c_0 = c_1)) unchanged. Paired
    differences (after - before) have mean 0 under invariance; each z over its iid standard
    error must stay below the normal quantile at family-wise level 1e-3, two-sided
    (Bonferroni over 4). The blocks must also move the state (a kernel that does nothing
    passes the z test). Power: a weight update with a Dirichlet root instead of the GEM gave
    z = -8.1 on beta_root[0]; one that ignores the label counts gave z = -49 on
    beta_leaf(0)[c_0]."""
    prior = BHMCPrior(alpha=1.0, gamma=0.5, gamma0=1.0, depth=2, num_components=3)
    model = BHMC(prior)
    g = torch.Generator().manual_seed(21)
    x = torch.zeros(4, 1, dtype=F64)

    def statistics(state):
        leaf = state.weights[state.tree.path(0)[-1]]
        return [float(state.weights[0][0]), float(leaf[0]), float(leaf[state.c[0]]),
                float(state.c[0] == state.c[1])]

    diffs = []
    for _ in range(1500):
        state = model.simulate(4, 1, g).state
        before = statistics(state)
        for _ in range(2):
            sampler_module.sample_labels(x, state, g, likelihood=False)
            sampler_module.sample_weights(state, prior, g)
        diffs.append([a - b for a, b in zip(statistics(state), before)])
    d = torch.tensor(diffs, dtype=F64)
    z = d.mean(0) / (d.std(0) / math.sqrt(d.shape[0]))
    assert float(z.abs().max()) < stats.norm.ppf(1 - 1e-3 / 8), z
    assert float(d[:, :3].abs().mean()) > 0.05
