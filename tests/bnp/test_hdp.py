"""HDP weight diffusion on a tree: levels, prior draws and moments, the log density against
torch.distributions, and the Gibbs update (exact conjugate cases, an exact posterior by
quadrature with a mutant it must catch, and a Geweke-style invariance test)."""

import math

import pytest
import torch
from scipy import integrate, stats
from scipy.special import betaln

from pyromodels.bnp import hdp
from pyromodels.bnp.hdp import (
    resample_tree_weights,
    sample_table_counts,
    sample_tree_weights,
    tree_levels,
    tree_weights_log_prob,
)

TREE = torch.tensor([-1, 0, 0, 1, 1, 2])  # root, two internal nodes, three leaves


def _z_bound(num_stats: int, df: int | None = None, alpha: float = 1e-3) -> float:
    """Two-sided Bonferroni threshold: all ``num_stats`` statistics of a correct sampler stay
    inside it with probability >= 1 - alpha (normal, or Student t with ``df`` degrees of
    freedom for batch means)."""
    q = 1 - alpha / (2 * num_stats)
    return float(stats.norm.ppf(q) if df is None else stats.t.ppf(q, df))


def _batch_z(series: torch.Tensor, target: torch.Tensor, batches: int = 40) -> torch.Tensor:
    """``(mean - target) / se`` per column, the standard error from ``batches`` batch means
    (which absorbs the chain's autocorrelation); Student t with ``batches - 1`` df."""
    t = series.shape[0] // batches * batches
    means = series[:t].reshape(batches, -1, *series.shape[1:]).mean(1)
    se = means.std(0, unbiased=True) / math.sqrt(batches)
    return (means.mean(0) - target) / se


def _prior_moments(parent, K, gamma0, gamma, root):
    """Exact ``E[beta_zk]`` and ``E[beta_zk^2]`` per node: the root's from its Beta / Dirichlet
    law, then ``E[b_c^2] = E[b_p] / (gamma + 1) + gamma E[b_p^2] / (gamma + 1)`` down each edge
    (from ``Var(b_c | b_p) = b_p (1 - b_p) / (gamma + 1)``); means are equal along edges."""
    if root == "dirichlet":
        a = gamma0 / K
        m1 = torch.full((K,), 1 / K, dtype=torch.float64)
        m2 = torch.full((K,), a * (a + 1) / (gamma0 * (gamma0 + 1)), dtype=torch.float64)
    else:
        e_o, e_1mo = 1 / (1 + gamma0), gamma0 / (1 + gamma0)
        e_o2, e_1mo2 = 2 / ((1 + gamma0) * (2 + gamma0)), gamma0 / (2 + gamma0)
        k = torch.arange(K, dtype=torch.float64)
        m1 = torch.where(k < K - 1, e_o * e_1mo ** k, e_1mo ** (K - 1))
        m2 = torch.where(k < K - 1, e_o2 * e_1mo2 ** k, e_1mo2 ** (K - 1))
    first = torch.empty(len(parent), K, dtype=torch.float64)
    second = torch.empty_like(first)
    for depth, nodes in enumerate(tree_levels(parent)):
        for z in nodes.tolist():
            if depth == 0:
                first[z], second[z] = m1, m2
            else:
                p = int(parent[z])
                first[z] = first[p]
                second[z] = (first[p] + gamma * second[p]) / (gamma + 1)
    return first, second


def test_tree_levels_orders_any_node_numbering_and_rejects_bad_trees():
    assert [lv.tolist() for lv in tree_levels(TREE)] == [[0], [1, 2], [3, 4, 5]]
    assert [lv.tolist() for lv in tree_levels(torch.tensor([3, 3, 0, -1]))] == [[3], [0, 1], [2]]
    with pytest.raises(ValueError, match="parent must describe a tree"):
        tree_levels(torch.tensor([-1, 2, 1]))
    with pytest.raises(ValueError, match="exactly one root"):
        tree_levels(torch.tensor([-1, -1]))
    with pytest.raises(ValueError, match=r"node indices in \[0, 2\)"):
        tree_levels(torch.tensor([-1, 5]))
    with pytest.raises(TypeError, match="parent must be an int64 tensor"):
        tree_levels(torch.tensor([-1, 0], dtype=torch.int32))
    with pytest.raises(TypeError, match="parent must be an int64 tensor"):
        tree_levels([-1, 0])


@pytest.mark.parametrize("root", ["gem", "dirichlet"])
def test_prior_draws_have_the_exact_first_and_second_moments(root):
    parent, K, gamma0, gamma, size = torch.tensor([-1, 0, 1]), 4, 1.5, 2.0, 3000
    g = torch.Generator().manual_seed(11)
    draws = torch.stack([sample_tree_weights(parent, K, gamma0, gamma, g, root=root)
                         for _ in range(size)])
    assert bool((draws > 0).all()) and torch.allclose(draws.sum(-1), torch.ones(size, 3, dtype=torch.float64))
    m1, m2 = _prior_moments(parent, K, gamma0, gamma, root)
    bound = _z_bound(2 * 3 * K)  # independent draws: normal z, Bonferroni over 24 statistics
    for values, target in ((draws, m1), (draws ** 2, m2)):
        z = (values.mean(0) - target) / (values.std(0) / math.sqrt(size))
        assert float(z.abs().max()) < bound


@pytest.mark.parametrize("root", ["gem", "dirichlet"])
def test_log_prob_equals_torch_distributions_and_ignores_node_numbering(root):
    K, gamma0, gamma = 4, 0.85, 1.5
    w = sample_tree_weights(TREE, K, gamma0, gamma, torch.Generator().manual_seed(2), root=root)
    dist = torch.distributions
    b0 = w[0]
    if root == "gem":
        o = torch.stack([b0[k] / b0[k:].sum() for k in range(K - 1)])
        expected = dist.Beta(torch.tensor(1.0, dtype=torch.float64), gamma0).log_prob(o).sum()
    else:
        expected = dist.Dirichlet(torch.full((K,), gamma0 / K, dtype=torch.float64)).log_prob(b0)
    for z in range(1, 6):
        expected = expected + dist.Dirichlet(gamma * w[int(TREE[z])]).log_prob(w[z])
    got = tree_weights_log_prob(TREE, w, gamma0, gamma, root=root)
    assert torch.allclose(got, expected, rtol=1e-12)
    perm = torch.tensor([4, 2, 0, 5, 1, 3])  # new index of old node j is perm[j]
    inverse = torch.argsort(perm)
    parent2 = torch.where(TREE[inverse] >= 0, perm[TREE[inverse].clamp(min=0)], -1)
    relabelled = tree_weights_log_prob(parent2, w[inverse], gamma0, gamma, root=root)
    assert torch.allclose(relabelled, got, rtol=1e-12)


def test_single_node_tree_update_is_the_conjugate_posterior():
    """With the root alone, the update is an exact draw from Dir(gamma0/K + n) or from the
    stick posterior o_k ~ Beta(1 + n_k, gamma0 + sum_{j>k} n_j)."""
    parent, n, gamma0, size = torch.tensor([-1]), torch.tensor([[3, 0, 5, 1]]), 0.9, 2500
    g = torch.Generator().manual_seed(4)
    w0 = torch.full((1, 4), 0.25, dtype=torch.float64)
    bound = _z_bound(8)
    for root in ("dirichlet", "gem"):
        draws = torch.stack([resample_tree_weights(parent, n, w0, gamma0, 1.0, g, root=root)[0]
                             for _ in range(size)])
        nf = n[0].double()
        if root == "dirichlet":
            a = gamma0 / 4 + nf
            target = a / a.sum()
        else:
            tail = torch.flip(torch.cumsum(torch.flip(nf, [0]), 0), [0])
            e_o = (1 + nf[:-1]) / (1 + nf[:-1] + gamma0 + tail[1:])
            rest = torch.cat([torch.ones(1, dtype=torch.float64), torch.cumprod(1 - e_o, 0)])
            target = rest * torch.cat([e_o, torch.ones(1, dtype=torch.float64)])
        z = (draws.mean(0) - target) / (draws.std(0) / math.sqrt(size))
        assert float(z.abs().max()) < bound


def _two_leaf_posterior(n1, n2, gamma0, gamma, root):
    """Exact posterior moments of the one-level toy (root + 2 leaves, K = 2) by quadrature over
    the root weight p = beta_{0,0}: p(p | n) = prior(p) prod_i B(g p + n_i0, g (1 - p) + n_i1) /
    B(g p, g (1 - p)); leaf i's weight given p is Beta(g p + n_i0, g (1 - p) + n_i1)."""
    a, b = (1.0, gamma0) if root == "gem" else (gamma0 / 2, gamma0 / 2)

    def log_density(p):
        out = stats.beta.logpdf(p, a, b)
        for n in (n1, n2):
            out += betaln(gamma * p + n[0], gamma * (1 - p) + n[1]) - betaln(gamma * p, gamma * (1 - p))
        return out

    shift = max(log_density(p) for p in (0.1, 0.3, 0.5, 0.7, 0.9))

    def moment(f):
        return integrate.quad(lambda p: f(p) * math.exp(log_density(p) - shift), 0, 1,
                              epsabs=0, epsrel=1e-11, limit=200)[0]

    norm = moment(lambda p: 1.0)
    out = [moment(lambda p: p) / norm, moment(lambda p: p * p) / norm]
    for n in (n1, n2):
        total = gamma + n[0] + n[1]
        out.append(moment(lambda p, n=n, total=total: (gamma * p + n[0]) / total) / norm)
        out.append(moment(lambda p, n=n, total=total: (gamma * p + n[0]) * (gamma * p + n[0] + 1)
                          / (total * (total + 1))) / norm)
    return torch.tensor(out, dtype=torch.float64)


def _toy_chain_z(root: str, steps: int, seed: int) -> torch.Tensor:
    """Batch-means z of a chain on the two-leaf toy against its exact posterior moments (the
    chain mixes fast here: lag-5 autocorrelation of the root weight below 0.03)."""
    parent = torch.tensor([-1, 0, 0])
    n1, n2, gamma0, gamma = (7, 1), (2, 5), 1.0, 1.5
    exact = _two_leaf_posterior(n1, n2, gamma0, gamma, root)
    counts = torch.tensor([[0, 0], n1, n2])
    g = torch.Generator().manual_seed(seed)
    w = sample_tree_weights(parent, 2, gamma0, gamma, g, root=root)
    series = []
    for _ in range(steps):
        w = resample_tree_weights(parent, counts, w, gamma0, gamma, g, root=root)
        series.append(torch.stack([w[0, 0], w[0, 0] ** 2, w[1, 0], w[1, 0] ** 2, w[2, 0], w[2, 0] ** 2]))
    return _batch_z(torch.stack(series), exact)


@pytest.mark.parametrize("root", ["gem", "dirichlet"])
def test_chain_matches_exact_posterior_of_a_two_leaf_toy(root):
    z = _toy_chain_z(root, 3000, seed=8)
    assert float(z.abs().max()) < _z_bound(6, df=39)


def test_the_toy_test_catches_an_update_without_table_counts(monkeypatch):
    """A mutant that sends a node's customers up as if each were a table (t = m) makes the root
    too concentrated; the same test must reject it (its z is about 11 after 1000 steps)."""
    monkeypatch.setattr(hdp, "sample_tables", lambda n, a, generator: n.clone())
    z = _toy_chain_z("gem", 1000, seed=8)
    assert float(z.abs().max()) > _z_bound(6, df=39)


def _geweke_z(chains: int, steps: int, seed: int, root: str = "dirichlet") -> torch.Tensor:
    """Geweke-style invariance test with independent chains: each starts from an exact prior
    draw and alternates leaf data ~ Multinomial(6, beta_leaf) with the weight update for
    ``steps`` steps. If the update leaves p(weights | data) invariant, the pair of kernels leaves
    the joint prior of (weights, data) invariant, so each chain's final weights are an exact
    prior draw, independent across chains. Returns z of the first and second moments of every
    node's weights against the exact prior moments, with i.i.d. standard errors. (A single long
    successive-conditional chain mixes slowly here, weights sit near a vertex for long spells,
    and batch means then understate the error.)"""
    K, gamma0, gamma = 3, 1.2, 1.5
    g = torch.Generator().manual_seed(seed)
    leaves = torch.tensor([3, 4, 5])
    finals = []
    for _ in range(chains):
        w = sample_tree_weights(TREE, K, gamma0, gamma, g, root=root)
        for _ in range(steps):
            counts = torch.zeros(6, K, dtype=torch.int64)
            draws = torch.multinomial(w[leaves], 6, replacement=True, generator=g)
            counts[leaves] = torch.nn.functional.one_hot(draws, K).sum(1)
            w = resample_tree_weights(TREE, counts, w, gamma0, gamma, g, root=root)
        finals.append(torch.cat([w, w * w], -1))
    finals = torch.stack(finals)
    m1, m2 = _prior_moments(TREE, K, gamma0, gamma, root)
    return (finals.mean(0) - torch.cat([m1, m2], -1)) / (finals.std(0) / math.sqrt(chains))


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
@pytest.mark.parametrize("root", ["dirichlet", "gem"])
def test_update_leaves_the_prior_invariant_geweke(root):
    z = _geweke_z(1000, 3, seed=21, root=root)
    assert float(z.abs().max()) < _z_bound(z.numel())  # normal z, Bonferroni over 36


def test_table_counts_are_consistent():
    g = torch.Generator().manual_seed(0)
    w = sample_tree_weights(TREE, 3, 1.0, 1.0, g)
    counts = torch.zeros(6, 3, dtype=torch.int64)
    counts[3:] = torch.tensor([[4, 0, 1], [0, 0, 0], [2, 2, 9]])
    t, m = sample_table_counts(TREE, counts, w, 1.0, g)
    assert int(t[0].abs().sum()) == 0
    assert torch.equal(m[3:], counts[3:])
    assert torch.equal(m[1], t[3] + t[4]) and torch.equal(m[2], t[5]) and torch.equal(m[0], t[1] + t[2])
    nonroot = torch.arange(1, 6)
    assert bool((t[nonroot] <= m[nonroot]).all()) and bool(((m[nonroot] > 0) <= (t[nonroot] > 0)).all())


def test_bad_input_messages():
    g = torch.Generator().manual_seed(0)
    w = torch.full((6, 3), 1 / 3, dtype=torch.float64)
    counts = torch.zeros(6, 3, dtype=torch.int64)
    with pytest.raises(ValueError, match="K must be an integer >= 2"):
        sample_tree_weights(TREE, 1, 1.0, 1.0, g)
    with pytest.raises(ValueError, match="gamma0 must be > 0"):
        sample_tree_weights(TREE, 3, 0.0, 1.0, g)
    with pytest.raises(ValueError, match="gamma must be > 0"):
        resample_tree_weights(TREE, counts, w, 1.0, -1.0, g)
    with pytest.raises(ValueError, match="root must be one of"):
        sample_tree_weights(TREE, 3, 1.0, 1.0, g, root="stick")
    with pytest.raises(ValueError, match="weights rows must sum to 1"):
        tree_weights_log_prob(TREE, w * 2, 1.0, 1.0)
    with pytest.raises(ValueError, match=r"weights must have shape \(M, K\) = \(6, K >= 2\)"):
        tree_weights_log_prob(TREE, w[:4], 1.0, 1.0)
    with pytest.raises(ValueError, match="weights must be finite and >= 0"):
        tree_weights_log_prob(TREE, torch.full((6, 3), float("nan"), dtype=torch.float64), 1.0, 1.0)
    with pytest.raises(TypeError, match="counts must be an integer tensor"):
        resample_tree_weights(TREE, counts.double(), w, 1.0, 1.0, g)
    with pytest.raises(ValueError, match="counts must be >= 0"):
        resample_tree_weights(TREE, counts - 1, w, 1.0, 1.0, g)
    with pytest.raises(ValueError, match=r"counts must have shape \(M, K\) = \(6, 3\)"):
        resample_tree_weights(TREE, counts[:, :2], w, 1.0, 1.0, g)
    with pytest.raises(TypeError, match="generator must be a torch.Generator"):
        resample_tree_weights(TREE, counts, w, 1.0, 1.0, None)


def test_update_on_a_tree_numbered_children_first():
    """Node order is free: on a tree whose children carry smaller indices than their parents
    the tables still flow to the right parents and the weights stay on the simplex."""
    parent = torch.tensor([3, 3, 4, 5, 5, -1])  # leaves 0, 1, 2; internal 3, 4; root 5
    g = torch.Generator().manual_seed(1)
    w = sample_tree_weights(parent, 3, 1.0, 2.0, g)
    counts = torch.zeros(6, 3, dtype=torch.int64)
    counts[:3] = torch.tensor([[4, 0, 1], [1, 1, 1], [0, 6, 0]])
    t, m = sample_table_counts(parent, counts, w, 2.0, g)
    assert torch.equal(m[3], t[0] + t[1]) and torch.equal(m[4], t[2]) and torch.equal(m[5], t[3] + t[4])
    assert int(t[5].abs().sum()) == 0
    new = resample_tree_weights(parent, counts, w, 1.0, 2.0, g)
    assert bool((new > 0).all()) and torch.allclose(new.sum(-1), torch.ones(6, dtype=torch.float64))
    assert torch.isfinite(tree_weights_log_prob(parent, new, 1.0, 2.0))
