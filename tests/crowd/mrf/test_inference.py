"""Exact enumeration, Gibbs sampling and mean field against brute force and each other."""

import itertools
import math

import pytest
import torch

from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.mrf import exact as exact_module
from pyromodels.crowd.mrf.energy import PottsCoupling
from pyromodels.crowd.mrf.exact import exact_collapsed_posterior, exact_posterior
from pyromodels.crowd.mrf.fit import sample_labels
from pyromodels.crowd.mrf.mean_field import free_energy, mean_field, mean_field_update
from pyromodels.crowd.mrf.model import NetworkedDawidSkene
from pyromodels.data import Graph, WorkerPopulation, simulate_annotations
from pyromodels.testing import assert_mc_mean, assert_monotone


def tiny(n, num_edges, seed, K=3, M=3, delta_scale=3.0, dominance=0.6):
    """A random graph with per-edge couplings and crowd labels from random confusions."""
    g = torch.Generator().manual_seed(seed)
    pairs = list(itertools.combinations(range(n), 2))
    pick = torch.randperm(len(pairs), generator=g)[:num_edges].tolist()
    graph = Graph.from_edges([pairs[p] for p in pick], num_nodes=n)
    coupling = PottsCoupling.per_edge(graph, delta_scale * torch.rand(num_edges, generator=g))
    table, truth = simulate_annotations(n, WorkerPopulation(M, dominance=dominance), K, seed=seed)
    return table, graph, coupling, log_emissions(table, truth["confusion"].log())


def batch_means(draws, num_classes, num_batches=40):
    """One-hot draws (S, N) averaged within 40 consecutive batches: (40, N, K). Batch means of a
    geometrically ergodic chain are close to independent, so their spread gives the Monte Carlo
    standard error of the overall mean."""
    onehot = torch.nn.functional.one_hot(draws, num_classes).double()
    size = len(draws) // num_batches
    return onehot[: size * num_batches].reshape(num_batches, size, *onehot.shape[1:]).mean(1)


def test_exact_posterior_matches_a_loop_over_every_labeling():
    table, graph, coupling, log_b = tiny(7, 10, seed=0)
    edges, delta = graph.edges.tolist(), coupling.edge_delta.tolist()
    weights = {}
    for y in itertools.product(range(3), repeat=7):
        u = 0.5 * sum(d for (i, j), d in zip(edges, delta) if y[i] != y[j])
        weights[y] = -u + sum(float(log_b[n, y[n]]) for n in range(7))
    log_z = math.log(sum(math.exp(w) for w in weights.values()))
    marg = torch.zeros(7, 3)
    for y, w in weights.items():
        for n in range(7):
            marg[n, y[n]] += math.exp(w - log_z)
    ex = exact_posterior(log_b, coupling)
    assert ex.log_partition == pytest.approx(log_z, rel=1e-12)
    assert torch.allclose(ex.marginals, marg, atol=1e-12)
    best = max(weights, key=weights.get)
    assert ex.map_labels.tolist() == list(best)
    assert ex.map_log_weight == pytest.approx(weights[best], rel=1e-12)


def test_exact_enumeration_in_chunks_equals_one_pass(monkeypatch):
    table, graph, coupling, log_b = tiny(11, 14, seed=1)  # 3^11 = 177147 labelings, 6 chunks
    chunked = exact_posterior(log_b, coupling)
    monkeypatch.setattr(exact_module, "_CHUNK", 2**20)
    whole = exact_posterior(log_b, coupling)
    assert torch.allclose(chunked.marginals, whole.marginals, atol=1e-12)
    assert chunked.log_partition == pytest.approx(whole.log_partition, rel=1e-13)


def test_strong_coupling_map_gives_each_component_its_summed_evidence_label():
    edges = [[0, 1], [1, 2], [2, 3], [4, 5], [5, 6], [4, 6]]
    coupling = PottsCoupling.constant(Graph.from_edges(edges, num_nodes=8), 200.0)
    log_b = 2 * torch.randn(8, 3, generator=torch.Generator().manual_seed(2))
    y = exact_posterior(log_b, coupling).map_labels
    for comp in ([0, 1, 2, 3], [4, 5, 6], [7]):
        assert y[comp].tolist() == [int(log_b[comp].sum(0).argmax())] * len(comp)


@pytest.mark.parametrize("schedule", ["colored", "sequential"])
def test_gibbs_marginals_match_exact_enumeration(schedule):
    # weak evidence (two workers) and strong couplings: the marginals depend on the coupling
    # (a sampler using 0.7 times the couplings is off by about 10 standard errors here)
    table, graph, coupling, log_b = tiny(8, 11, seed=3, M=2, dominance=0.45, delta_scale=4.0)
    ex = exact_posterior(log_b, coupling)
    assert float(ex.marginals.max(-1).values.min()) < 0.6
    draws = sample_labels(log_b, coupling, num_samples=6000, num_warmup=100, schedule=schedule,
                          seed=4 if schedule == "colored" else 5).samples["y"][0]
    # 5 batch-means standard errors: a correct sampler fails an entry with prob ~6e-7
    assert_mc_mean(batch_means(draws, 3), ex.marginals, n_se=5.0)


def test_bayesian_gibbs_engine_matches_the_collapsed_exact_posterior():
    table, graph, coupling, _ = tiny(6, 7, seed=5, K=2, M=3, delta_scale=2.0)
    alpha = torch.tensor([[4.0, 1.0], [1.0, 4.0]])  # workers better than random a priori
    model = NetworkedDawidSkene(delta=coupling, confusion_concentration=alpha)
    post = model.fit((table, graph), method="gibbs", num_samples=4000, num_warmup=200,
                     num_chains=1, lp_every=0, seed=6, progress=False)
    ex = exact_collapsed_posterior(table, coupling, alpha.expand(3, 2, 2))
    assert_mc_mean(batch_means(post.samples["y"][0], 2), ex.marginals, n_se=5.0)
    assert float(ex.marginals.max()) < 0.99  # a posterior with real uncertainty


def test_mean_field_fixed_point_free_energy_and_bound():
    table, graph, coupling, log_b = tiny(9, 13, seed=7)
    ex = exact_posterior(log_b, coupling)
    for schedule, damping in [("parallel", 0.0), ("parallel", 0.5), ("colored", 0.0),
                              ("colored", 0.3)]:
        fit = mean_field(log_b, coupling, schedule=schedule, damping=damping)
        assert fit.converged
        assert torch.allclose(mean_field_update(log_b, coupling, fit.q), fit.q, atol=1e-9)
        # the free energy bounds -log Z from above (Gibbs' inequality)
        assert fit.free_energies[-1] >= -ex.log_partition - 1e-12
        if schedule == "colored":  # block coordinate descent never increases F
            assert_monotone(fit.free_energies, direction="decrease", rtol=1e-12)
    zero = PottsCoupling.constant(graph, 0.0)
    fit = mean_field(log_b, zero)
    exact0 = exact_posterior(log_b, zero)
    assert torch.allclose(fit.q, exact0.marginals, atol=1e-12)
    assert float(free_energy(log_b, zero, fit.q)) == pytest.approx(-exact0.log_partition,
                                                                   rel=1e-12)


def test_parallel_mean_field_oscillates_without_damping_and_settles_with_it():
    coupling = PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=2), 10.0)
    log_b = torch.zeros(2, 2)
    start = torch.tensor([[0.99, 0.01], [0.01, 0.99]])
    plain = mean_field(log_b, coupling, init=start, max_iter=50)
    assert not plain.converged and min(plain.changes) > 0.9  # it swaps the two nodes each time
    damped = mean_field(log_b, coupling, init=start, damping=0.5)
    assert damped.converged
    colored = mean_field(log_b, coupling, init=start, schedule="colored")
    assert colored.converged and colored.q.argmax(-1).tolist() == [1, 1]


def test_bad_inference_input_is_rejected():
    table, graph, coupling, log_b = tiny(6, 6, seed=8)
    node = PottsCoupling.per_node(graph, torch.ones(6))
    with pytest.raises(ValueError, match="exact enumeration needs a symmetric coupling"):
        exact_posterior(log_b, node)
    with pytest.raises(ValueError, match="Gibbs sampling needs a symmetric coupling"):
        sample_labels(log_b, node)
    with pytest.raises(ValueError, match="node-dependent coupling has no free energy"):
        free_energy(log_b, node, torch.softmax(log_b, -1))
    with pytest.raises(ValueError, match=r"3\^6 = 729 labelings exceeds max_states=100"):
        exact_posterior(log_b, coupling, max_states=100)
    with pytest.raises(ValueError, match=r"damping must lie in \[0, 1\)"):
        mean_field(log_b, coupling, damping=1.0)
    with pytest.raises(ValueError, match=r"init must have rows summing to 1 \(last axis\); row init\[0\] "
                                         r"sums to 3"):
        mean_field(log_b, coupling, init=torch.ones(6, 3))
    with pytest.raises(ValueError, match=r"init must have shape \(6, 3\), got \(6, 2\)"):
        mean_field(log_b, coupling, init=torch.full((6, 2), 0.5))
    with pytest.raises(ValueError, match=r"init must be non-negative, found init\[0, 0\] = -0\.5"):
        mean_field(log_b, coupling, init=torch.tensor([[-0.5, 1.0, 0.5]] * 6))
    with pytest.raises(ValueError, match="schedule must be one of"):
        sample_labels(log_b, coupling, schedule="jacobi")
