"""Potts energies and couplings against brute-force recomputation from the edge list."""

import itertools

import pytest
import torch

from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.mrf.energy import (
    PottsCoupling,
    conditional_logits,
    greedy_coloring,
    local_energies,
    potts_energy,
    resolve_coupling,
    total_energy,
)
from pyromodels.data import Graph, WorkerPopulation, simulate_annotations, simulate_networked_annotations


def brute_energy(edges, delta_e, y):
    """U(y) = 1/2 sum over listed edges of delta_e [y_i != y_j], one edge at a time."""
    return 0.5 * sum(d for (i, j), d in zip(edges, delta_e) if y[i] != y[j])


def brute_local(num_nodes, edges, arc_weight, y, n, k):
    """U_n(k) = 1/2 sum over neighbours n' of W[n, n'] [k != y_n'] from the edge list."""
    total = 0.0
    for (i, j) in edges:
        for a, b in ((i, j), (j, i)):
            if a == n and y[b] != k:
                total += arc_weight(a, b)
    return 0.5 * total


def random_graph(n, num_edges, seed):
    g = torch.Generator().manual_seed(seed)
    pairs = list(itertools.combinations(range(n), 2))
    pick = torch.randperm(len(pairs), generator=g)[:num_edges].tolist()
    return Graph.from_edges([pairs[p] for p in pick], num_nodes=n)


@pytest.mark.parametrize("kind", ["constant", "edge"])
def test_local_energy_is_the_energy_difference(kind):
    graph = random_graph(9, 14, seed=1)
    g = torch.Generator().manual_seed(2)
    if kind == "constant":
        coupling = PottsCoupling.constant(graph, 1.7)
        delta_e = [1.7] * graph.num_edges
    else:
        delta_e = (torch.rand(graph.num_edges, generator=g) * 3).tolist()
        coupling = PottsCoupling.per_edge(graph, delta_e)
    edges = graph.edges.tolist()
    K = 3
    for _ in range(5):
        y = torch.randint(K, (9,), generator=g)
        u = local_energies(coupling, y, K)
        assert potts_energy(coupling, y).item() == pytest.approx(
            brute_energy(edges, delta_e, y.tolist()), abs=1e-12)
        for n in range(9):
            for k in range(K):
                y2 = y.clone()
                y2[n] = k
                diff = brute_energy(edges, delta_e, y2.tolist()) - brute_energy(
                    edges, delta_e, y.tolist())
                assert (u[n, k] - u[n, y[n]]).item() == pytest.approx(diff, abs=1e-12)
                # U_n is exactly the y_n-dependent part of U: U(y) - U_n(y_n) is free of y_n
                assert (potts_energy(coupling, y2) - u[n, k]).item() == pytest.approx(
                    (potts_energy(coupling, y) - u[n, y[n]]).item(), abs=1e-12)


def test_node_coupling_local_energy_uses_the_node_s_own_delta():
    graph = random_graph(7, 10, seed=3)
    delta_n = torch.tensor([0.5, 1.0, 2.0, 0.0, 3.0, 1.5, 0.25])
    coupling = PottsCoupling.per_node(graph, delta_n)
    edges = graph.edges.tolist()
    y = torch.tensor([0, 1, 1, 0, 2, 2, 1])
    u = local_energies(coupling, y, 3)
    for n in range(7):
        for k in range(3):
            want = brute_local(7, edges, lambda a, b: float(delta_n[a]), y.tolist(), n, k)
            assert u[n, k].item() == pytest.approx(want, abs=1e-12)
    sym = coupling.symmetrized()
    assert sym.kind == "edge"
    want_e = [(float(delta_n[i]) + float(delta_n[j])) / 2 for i, j in edges]
    assert torch.allclose(sym.edge_delta, torch.tensor(want_e, dtype=torch.float64))
    with pytest.raises(ValueError, match="node-dependent coupling defines only local energies"):
        potts_energy(coupling, y)


def test_soft_local_energy_and_conditional_logits():
    graph = random_graph(6, 8, seed=4)
    coupling = PottsCoupling.constant(graph, 2.0)
    g = torch.Generator().manual_seed(5)
    q = torch.softmax(torch.randn(6, 3, generator=g), -1)
    edges = graph.edges.tolist()
    u = local_energies(coupling, q)
    for n in range(6):
        nbrs = [b for a, b in edges if a == n] + [a for a, b in edges if b == n]
        for k in range(3):
            want = 0.5 * sum(2.0 * (1 - q[m, k].item()) for m in nbrs)
            assert u[n, k].item() == pytest.approx(want, abs=1e-12)
    # hard labels are the one-hot special case
    y = torch.tensor([0, 2, 1, 1, 0, 2])
    onehot = torch.nn.functional.one_hot(y, 3).double()
    assert torch.allclose(local_energies(coupling, y, 3), local_energies(coupling, onehot))
    log_b = torch.randn(6, 3, generator=g)
    assert torch.allclose(conditional_logits(coupling, log_b, y), log_b - local_energies(
        coupling, y, 3))


def test_total_energy_batched_matches_loop():
    table, truth = simulate_annotations(7, 3, 3, seed=6)
    graph = random_graph(7, 9, seed=6)
    coupling = resolve_coupling(graph, "M", table)
    log_b = log_emissions(table, truth["confusion"].log())
    ys = torch.randint(3, (20, 7), generator=torch.Generator().manual_seed(7))
    batched = total_energy(coupling, log_b, ys)
    edges = graph.edges.tolist()
    for s in range(20):
        y = ys[s].tolist()
        want = brute_energy(edges, [3.0] * len(edges), y) - sum(
            log_b[n, y[n]].item() for n in range(7))
        assert batched[s].item() == pytest.approx(want, abs=1e-10)


def test_resolve_coupling_specifications():
    table, graph, _ = simulate_networked_annotations(30, WorkerPopulation(5, missing_rate=0.3), 3,
                                                     mean_degree=3, seed=8)
    c = resolve_coupling(graph, "M", table)
    assert c.kind == "constant" and torch.all(c.edge_delta == 5.0)
    node = resolve_coupling(graph, "node", table)
    assert node.kind == "node"
    assert torch.equal(node.node_delta, table.counts_per_item().double() / 2)
    assert torch.all(resolve_coupling(graph, 0.25).edge_delta == 0.25)
    assert resolve_coupling(graph, c) is c
    # the weighted degree sums each node's arc weights
    deg = graph.degree().double()
    assert torch.allclose(c.weighted_degree, 5.0 * deg)
    assert torch.allclose(node.weighted_degree, node.node_delta * deg)


def test_greedy_coloring_is_proper_and_classes_partition_the_arcs():
    _, graph, _ = simulate_networked_annotations(300, 2, 3, mean_degree=6, seed=9)
    c = PottsCoupling.constant(graph, 1.0)
    colors = c.colors
    e = graph.edges
    assert not bool((colors[e[:, 0]] == colors[e[:, 1]]).any())
    assert int(colors.max()) <= int(graph.degree().max())
    nodes = torch.cat([cls.nodes for cls in c.color_classes])
    assert torch.equal(torch.sort(nodes).values, torch.arange(300))
    assert sum(len(cls.arc_dst) for cls in c.color_classes) == 2 * graph.num_edges
    for cls in c.color_classes:
        assert torch.all(colors[cls.nodes] == colors[cls.nodes[0]])
    # the compiled kernel and the same loop uncompiled colour alike
    assert torch.equal(greedy_coloring(c, "python"), colors)
    assert torch.equal(greedy_coloring(c, "numba"), colors)


def test_bad_couplings_are_rejected():
    graph = Graph.from_edges([[0, 1], [1, 2]], num_nodes=3)
    with pytest.raises(ValueError, match="delta must be >= 0"):
        PottsCoupling.constant(graph, -1.0)
    with pytest.raises(ValueError, match="delta must be finite"):
        PottsCoupling.constant(graph, float("nan"))
    with pytest.raises(ValueError, match="delta must be finite"):
        PottsCoupling.per_edge(graph, [1.0, float("nan")])
    with pytest.raises(ValueError, match=r"delta must have shape \(2,\)"):
        PottsCoupling.per_edge(graph, [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="delta must be >= 0 everywhere"):
        PottsCoupling.per_node(graph, [1.0, -2.0, 3.0])
    with pytest.raises(TypeError, match="delta must be 'M', 'node', a real number"):
        resolve_coupling(graph, [1.0])
    with pytest.raises(ValueError, match=r"delta must be one of \['M', 'node'\]"):
        resolve_coupling(graph, "many")
    with pytest.raises(ValueError, match="needs the annotation table"):
        resolve_coupling(graph, "M")
    with pytest.raises(ValueError, match="graph must be undirected"):
        PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=2, symmetric=False), 1.0)
    with pytest.raises(TypeError, match="graph must be a pyromodels.data.Graph"):
        PottsCoupling.constant([[0, 1]], 1.0)
    other = PottsCoupling.constant(Graph.from_edges([[0, 2], [1, 2]], num_nodes=3), 1.0)
    with pytest.raises(ValueError, match="delta is a coupling on another graph"):
        resolve_coupling(graph, other)
