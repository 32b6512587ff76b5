"""Starting labels of items without responses (``unlabelled``): hand-computed propagation on a
small graph, a loop-based breadth-first reference on random graphs, the old rule kept under
``"prior"``, agreement of the model's EM path with ``networked_em``, and bad input."""

import warnings
from collections import deque

import pytest
import torch

from pyromodels.core.errors import ConvergenceWarning
from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.majority import majority_vote
from pyromodels.crowd.mrf.em import initialize, mode_field_objective, propagate_labels
from pyromodels.crowd.mrf.energy import PottsCoupling, resolve_coupling
from pyromodels.crowd.mrf.fit import networked_em
from pyromodels.crowd.mrf.model import NetworkedDawidSkene
from pyromodels.data import AnnotationTable, Graph, WorkerPopulation, simulate_networked_annotations

PRIOR = torch.tensor([0.5, 0.2, 0.3], dtype=torch.float64)
# (i, j, weight); node 10 touches node 4 only through a zero-weight edge, node 11 is isolated
EDGES = [(0, 1, 1.0), (1, 2, 2.0), (2, 3, 1.0), (3, 4, 1.0), (3, 6, 1.0), (0, 7, 1.0),
         (7, 8, 3.0), (8, 4, 1.0), (2, 5, 2.0), (9, 10, 1.0), (4, 10, 0.0)]


def hand_case():
    """12 items, 2 workers, K = 3; only items 0, 4 and 6 have responses (both workers answer
    1, 2 and 1). With 0.8 on the confusion diagonal, eq. 18 gives them 1, 2 and 1."""
    items = torch.tensor([0, 0, 4, 4, 6, 6])
    table = AnnotationTable.from_arrays(items, torch.tensor([0, 1] * 3),
                                        torch.tensor([1, 1, 2, 2, 1, 1]), 12, 2, 3)
    confusion = torch.full((2, 3, 3), 0.1, dtype=torch.float64)
    confusion[:, torch.arange(3), torch.arange(3)] = 0.8
    graph = Graph.from_edges([e[:2] for e in EDGES], num_nodes=12)
    coupling = PottsCoupling.per_edge(graph, torch.tensor([e[2] for e in EDGES]))
    return table, graph, coupling, confusion


def test_propagated_start_equals_the_hand_computed_labels():
    table, graph, coupling, confusion = hand_case()
    _, y = initialize(table, coupling=coupling, confusion=confusion, prior=PRIOR)
    # layer 1: 1 <- 0 (1); 3 <- 4 (2), 6 (1): tie, prior 0.3 > 0.2 gives 2; 7 <- 0 (1);
    #          8 <- 4 (2) only: 7 is in the same layer, so its weight-3 vote is not heard.
    # layer 2: 2 <- 1 (1, weight 2), 3 (2, weight 1): 1.  layer 3: 5 <- 2 (1).
    # 9, 10 (zero-weight edge to 4) and 11 are reached from no item with responses: prior mode 0.
    assert y.tolist() == [1, 1, 1, 2, 2, 1, 1, 1, 2, 0, 0, 0]
    # uniform prior: ties go to the smallest code, so 3 takes 1, and 2 hears 1 from both sides
    _, y = initialize(table, coupling=coupling, confusion=confusion)
    assert y.tolist() == [1, 1, 1, 1, 2, 1, 1, 1, 2, 0, 0, 0]
    # one coupling on every edge (4 - 10 now counts): 3 and 2 tie and take 2; 10 <- 4, 9 <- 10
    constant = PottsCoupling.constant(graph, 7.0)
    _, y = initialize(table, coupling=constant, confusion=confusion, prior=PRIOR)
    assert y.tolist() == [1, 1, 2, 2, 2, 2, 1, 1, 2, 2, 2, 0]


def test_prior_option_and_no_graph_keep_the_map_rule():
    table, graph, coupling, confusion = hand_case()
    old = [1, 0, 0, 0, 2, 0, 1, 0, 0, 0, 0, 0]  # eq. 18: the prior's mode where nothing answered
    for kw in ({"coupling": coupling, "unlabelled": "prior"}, {}):
        conf, y = initialize(table, confusion=confusion, prior=PRIOR, **kw)
        assert y.tolist() == old
        assert torch.allclose(conf, confusion, rtol=0, atol=1e-6)
    # delta_n = M_n / 2 is 0 for an item without responses: it hears no neighbour, so
    # propagation leaves every such item at the prior's mode
    node = resolve_coupling(graph, "node", table)
    assert initialize(table, coupling=node, confusion=confusion, prior=PRIOR)[1].tolist() == old


def test_majority_vote_start_propagates_and_keeps_its_confusions():
    table, _, coupling, _ = hand_case()
    mv = majority_vote(table, seed=4)
    conf_prior, y_prior = initialize(table, coupling=coupling, unlabelled="prior", seed=4)
    assert torch.equal(y_prior, mv)
    conf, y = initialize(table, coupling=coupling, seed=4)
    # reached items as under the uniform prior above; 9, 10, 11 keep majority vote's draw
    assert y[:9].tolist() == [1, 1, 1, 1, 2, 1, 1, 1, 2]
    assert torch.equal(y[9:], mv[9:])
    # items without responses add no counts, so the M-step is unchanged
    assert torch.equal(conf, conf_prior)
    # labels given by the caller are used as they are
    given = torch.tensor([2, 0, 1, 0, 1, 2, 0, 1, 2, 0, 1, 2])
    assert torch.equal(initialize(table, coupling=coupling, labels=given)[1], given)


def reference_propagation(num_nodes, edges, labels, known, prior):
    """Breadth-first distances from the known nodes over positive edges, then node after node
    in order of distance: weighted votes of the neighbours one step closer, ties to the larger
    prior and then the smaller code."""
    adj = {n: [] for n in range(num_nodes)}
    for i, j, w in edges:
        if w > 0:
            adj[i].append((j, w))
            adj[j].append((i, w))
    dist = {n: 0 for n in range(num_nodes) if known[n]}
    queue = deque(dist)
    while queue:
        n = queue.popleft()
        for m, _ in adj[n]:
            if m not in dist:
                dist[m] = dist[n] + 1
                queue.append(m)
    y = list(labels)
    for n in sorted((n for n in dist if dist[n] > 0), key=lambda n: dist[n]):
        votes = [0.0] * len(prior)
        for m, w in adj[n]:
            if dist.get(m) == dist[n] - 1:
                votes[y[m]] += w
        y[n] = max(range(len(prior)), key=lambda k: (votes[k], prior[k], -k))
    return y


@pytest.mark.parametrize("seed", range(6))
def test_propagation_matches_a_loop_based_breadth_first_reference(seed):
    g = torch.Generator().manual_seed(seed)
    n, e, k = 40, 45, 4
    pairs = torch.randint(n, (3 * e, 2), generator=g)
    pairs = torch.unique(torch.sort(pairs[pairs[:, 0] != pairs[:, 1]], 1).values, dim=0)[:e]
    # small integer weights (0 drops the edge) make exact ties common
    weights = torch.randint(3, (len(pairs),), generator=g).double()
    coupling = PottsCoupling.per_edge(Graph.from_edges(pairs, num_nodes=n), weights)
    labels = torch.randint(k, (n,), generator=g)
    known = torch.rand(n, generator=g) < 0.2
    prior = torch.tensor([0.3, 0.3, 0.1, 0.3], dtype=torch.float64) if seed % 2 else None
    edges = [(int(i), int(j), float(w)) for (i, j), w in zip(pairs, weights)]
    want = reference_propagation(n, edges, labels.tolist(), known.tolist(),
                                 [1.0] * k if prior is None else prior.tolist())
    assert propagate_labels(coupling, labels, known, k, prior).tolist() == want


def sparse_case(seed, keep=0.25):
    """An SBM crowd task where only about ``keep`` of the items have responses."""
    table, graph, truth = simulate_networked_annotations(
        400, WorkerPopulation(5, dominance=0.5, labels_per_item=3), 3, mean_degree=6.0,
        within=0.95, class_prior=[0.5, 0.3, 0.2], seed=seed)
    # a generator of its own: the simulation's first uniforms drew the classes
    mask = torch.rand(400, generator=torch.Generator().manual_seed(1000 + seed)) < keep
    rows = mask[table.item_idx]
    sparse = AnnotationTable.from_arrays(table.item_idx[rows], table.worker_idx[rows],
                                         table.label_idx[rows], 400, 5, 3)
    return sparse, graph, truth


def test_items_with_responses_keep_eq18_and_networked_em_starts_where_initialize_does():
    table, graph, truth = sparse_case(0)
    answered = table.counts_per_item() > 0
    assert 60 < int(answered.sum()) < 140
    coupling = resolve_coupling(graph, "M", table)
    log_b = log_emissions(table, truth["confusion"].log())
    eq18 = (log_b + truth["prior"].log()).argmax(-1)
    starts = {}
    for option in ("propagate", "prior"):
        conf, y = initialize(table, coupling=coupling, confusion=truth["confusion"],
                             prior=truth["prior"], unlabelled=option, floor=0.0)
        assert torch.equal(y[answered], eq18[answered])
        fit = networked_em(table, graph, confusion=truth["confusion"], prior=truth["prior"],
                           unlabelled=option, init_floor=0.0, max_iter=1,
                           warn_not_converged=False)
        assert fit.losses[0].item() == float(mode_field_objective(log_b, coupling, y))
        starts[option] = y
    assert torch.equal(starts["prior"], eq18)
    assert int((starts["propagate"] != eq18).sum()) > 60


@pytest.mark.parametrize("option", ["propagate", "prior"])
def test_model_em_agrees_with_networked_em_when_items_lack_responses(option):
    table, graph, truth = sparse_case(1)
    kw = {"confusion": truth["confusion"], "prior": truth["prior"]}
    ref = networked_em(table, graph, unlabelled=option, max_iter=200, **kw)
    post = NetworkedDawidSkene().fit((table, graph), init_confusion=kw["confusion"],
                                     init_prior=kw["prior"], init_unlabelled=option, seed=3,
                                     max_iter=200, progress=False)
    assert ref.diagnostics["converged"]
    assert torch.equal(post.params["labels"], ref.params["labels"])
    assert torch.allclose(post.params["confusion"], ref.params["confusion"], atol=1e-6)


def test_propagated_start_recovers_more_labels_when_most_items_lack_responses():
    gains = []
    for seed in range(3):
        table, graph, truth = sparse_case(seed)
        acc = {}
        for option in ("propagate", "prior"):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ConvergenceWarning)
                fit = networked_em(table, graph, confusion=truth["confusion"],
                                   prior=truth["prior"], unlabelled=option)
            acc[option] = float((fit.params["labels"] == truth["z"]).double().mean())
        assert acc["propagate"] > acc["prior"]
        gains.append(acc["propagate"] - acc["prior"])
    # the prior's mode spread over three quarters of the graph: about half the items right
    assert sum(gains) / 3 > 0.15


def test_bad_unlabelled_option_is_rejected():
    table, graph, coupling, confusion = hand_case()
    with pytest.raises(ValueError, match=r"unlabelled must be one of \['propagate', 'prior'\], "
                                         r"got 'nearest'"):
        initialize(table, coupling=coupling, confusion=confusion, unlabelled="nearest")
    with pytest.raises(ValueError, match=r"^unlabelled must be one of"):
        networked_em(table, graph, unlabelled=None)
    with pytest.raises(ValueError, match=r"init_unlabelled must be one of \['propagate', "
                                         r"'prior'\], got 'random'"):
        NetworkedDawidSkene().fit((table, graph), init_unlabelled="random")
    with pytest.raises(ValueError, match=r"coupling must be on the table's 12 items, got 3 nodes"):
        initialize(table, coupling=PottsCoupling.constant(Graph.from_edges([[0, 1]], num_nodes=3),
                                                          1.0))
    with pytest.raises(TypeError, match="coupling must be a PottsCoupling or None, got Graph"):
        initialize(table, coupling=graph)
    with pytest.raises(TypeError, match=r"known must be a bool tensor of shape \(12,\)"):
        propagate_labels(coupling, torch.zeros(12, dtype=torch.long), torch.zeros(12), 3)
    with pytest.raises(ValueError, match=r"prior must have shape \(3,\), got \(2,\)"):
        propagate_labels(coupling, torch.zeros(12, dtype=torch.long),
                         torch.zeros(12, dtype=torch.bool), 3, prior=[0.5, 0.5])
