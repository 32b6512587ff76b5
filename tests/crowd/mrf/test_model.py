"""The Pyro program of the networked model against the hand-written kernels: enumeration,
scoring, infer_discrete and condition-and-score of the Gibbs blocks."""

import itertools
import math

import pytest
import torch
from pyro import poutine
from torch.distributions import Dirichlet

from pyromodels.core.enumeration import marginal_log_joint
from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.majority import majority_vote
from pyromodels.crowd.mrf.energy import PottsCoupling, conditional_logits, total_energy
from pyromodels.crowd.mrf.exact import enumerate_labelings, exact_posterior
from pyromodels.crowd.mrf.model import NetworkedData, NetworkedDawidSkene
from pyromodels.data import Graph, WorkerPopulation, simulate_annotations, simulate_networked_annotations
from pyromodels.testing import check_conditional, check_discrete_conditional


def tiny(n=6, num_edges=8, seed=0, K=3, M=3):
    g = torch.Generator().manual_seed(seed)
    pairs = list(itertools.combinations(range(n), 2))
    pick = torch.randperm(len(pairs), generator=g)[:num_edges].tolist()
    graph = Graph.from_edges([pairs[p] for p in pick], num_nodes=n)
    table, truth = simulate_annotations(n, WorkerPopulation(M, dominance=0.5, missing_rate=0.2), K,
                                        seed=seed)
    return table, graph, truth["confusion"]


def enumerated_log_joint(model, data, confusion):
    """log p(F, confusion, y) from the program for every labeling y, ``(K^N,)``, by tracing it
    under parallel enumeration and adding up each site's log probabilities."""
    cond = poutine.condition(model.model, data={"confusion": confusion})
    trace = poutine.trace(poutine.enum(cond, first_available_dim=-2)).get_trace(data)
    trace.compute_log_prob()
    total = 0.0
    for site in trace.nodes.values():
        if site["type"] == "sample":
            lp = site["log_prob"]
            total = total + (lp.sum(-1).reshape(-1) if lp.dim() else lp)
    return total


@pytest.mark.parametrize("delta", ["M", "node", "edge"])
def test_enumerated_program_equals_exact_enumeration(delta):
    table, graph, confusion = tiny()
    if delta == "edge":
        delta = PottsCoupling.per_edge(graph, torch.linspace(0.5, 4.0, graph.num_edges))
    model = NetworkedDawidSkene(delta=delta)
    data = model.prepare((table, graph))
    log_b = log_emissions(table, confusion.log())
    ex = exact_posterior(log_b, data.program_coupling)
    program = enumerated_log_joint(model, data, confusion)
    const = float(Dirichlet(data.concentration).log_prob(confusion).sum()) - 6 * math.log(3)
    assert torch.allclose(program, ex.log_weights + const, atol=1e-10)
    # Pyro's own contraction (TraceEnum_ELBO) gives the same evidence
    evidence = marginal_log_joint(model, data, {"confusion": confusion})
    assert float(evidence) == pytest.approx(ex.log_partition + const, rel=1e-12)
    # the program's enumerated marginals and MAP are exact.py's
    post = torch.softmax(program, 0)
    labelings = enumerate_labelings(6, 3)
    marginals = torch.stack([torch.stack([post[labelings[:, n] == k].sum() for k in range(3)])
                             for n in range(6)])
    assert torch.allclose(marginals, ex.marginals, atol=1e-12)
    assert labelings[int(program.argmax())].tolist() == ex.map_labels.tolist()


def test_node_coupling_program_uses_the_symmetrised_coupling():
    table, graph, _ = tiny(seed=1)
    data = NetworkedDawidSkene(delta="node").prepare((table, graph))
    counts = table.counts_per_item().double()
    e = graph.edges
    assert data.coupling.kind == "node"
    assert torch.allclose(data.program_coupling.edge_delta,
                          (counts[e[:, 0]] + counts[e[:, 1]]) / 4)


def test_program_scores_a_labeling_on_a_larger_graph():
    table, graph, truth = simulate_networked_annotations(120,
                                                         WorkerPopulation(4, labels_per_item=2), 3,
                                                         mean_degree=4, seed=2)
    model = NetworkedDawidSkene()
    data = model.prepare((table, graph))
    conf = truth["confusion"]
    g = torch.Generator().manual_seed(2)
    values = []
    for _ in range(3):
        y = torch.randint(3, (120,), generator=g)
        lj = float(model.log_joint(data, {"confusion": conf, "y": y}))
        values.append(lj + float(total_energy(data.coupling, log_emissions(table, conf.log()), y)))
    # log p = -E(y) + log Dir(conf) - N log K, so lj + E(y) does not depend on y
    assert max(values) - min(values) < 1e-9
    assert values[0] == pytest.approx(float(Dirichlet(data.concentration).log_prob(conf).sum())
                                      - 120 * math.log(3), rel=1e-12)


def test_gibbs_blocks_are_the_program_s_conditionals():
    table, graph, confusion = tiny(seed=3)
    model = NetworkedDawidSkene(confusion_concentration=torch.tensor(
        [[3.0, 1.0, 1.0], [1.0, 3.0, 1.0], [1.0, 1.0, 3.0]]))
    data = model.prepare((table, graph))
    labels_block, confusion_block = model.gibbs_sweep(data).blocks
    y = torch.randint(3, (6,), generator=torch.Generator().manual_seed(3))
    state = {"confusion": confusion, "y": y}
    log_b = log_emissions(table, confusion.log())
    sampler_logits = conditional_logits(data.program_coupling, log_b, y)
    for n in range(6):
        own, joint = check_discrete_conditional(model, data, labels_block, state, "y", n, range(3))
        assert torch.allclose(own, joint, atol=1e-12)
        # the single-site law the sweep draws from is the program's conditional
        assert torch.allclose(torch.softmax(sampler_logits[n], 0), joint, atol=1e-12)
    assert check_conditional(model, data, confusion_block, state, num_values=5) < 1e-9


def test_gibbs_engine_runs_on_a_medium_graph():
    table, graph, truth = simulate_networked_annotations(
        300, WorkerPopulation(5, dominance=0.5, labels_per_item=3), 3, mean_degree=5, seed=4)
    post = NetworkedDawidSkene().fit((table, graph), method="gibbs", num_samples=60,
                                     num_warmup=60, num_chains=1, seed=0, progress=False,
                                     gibbs_schedule="sequential")
    assert post.samples["y"].shape == (1, 60, 300) and post.samples["y"].dtype == torch.long
    assert torch.isfinite(post.sample_stats["lp"]).all()
    votes = torch.nn.functional.one_hot(post.samples["y"][0], 3).sum(0)
    acc = float((votes.argmax(-1) == truth["z"]).double().mean())
    mv = float((majority_vote(table, seed=0) == truth["z"]).double().mean())
    assert acc > 0.9 and acc > mv + 0.2


def test_bad_model_data_is_rejected():
    table, graph, _ = tiny(seed=5)
    other = Graph.from_edges(graph.edges, num_nodes=6, nodes=list("abcdef"))
    with pytest.raises(ValueError, match="graph nodes and table items differ first at code 0"):
        NetworkedData(table, other)
    with pytest.raises(TypeError, match="graph must be a pyromodels.data.Graph"):
        NetworkedData(table, graph.edges)
    with pytest.raises(TypeError, match="table must be a pyromodels.data.AnnotationTable"):
        NetworkedData(None, graph)
    with pytest.raises(ValueError, match=r"data must be a \(table, graph\) pair"):
        NetworkedDawidSkene().prepare((table, graph, graph))
    with pytest.raises(ValueError, match=r"confusion_concentration must broadcast to \(M, K, K\)"):
        NetworkedDawidSkene(confusion_concentration=torch.ones(2, 2)).prepare((table, graph))
    with pytest.raises(ValueError, match="confusion_concentration must be > 0"):
        NetworkedDawidSkene(confusion_concentration=0.0)
    with pytest.raises(ValueError, match="confusion_concentration must be finite"):
        NetworkedDawidSkene(confusion_concentration=torch.tensor(float("nan"))).prepare(
            (table, graph))
    with pytest.raises(ValueError, match="gibbs_schedule must be one of"):
        NetworkedDawidSkene().fit((table, graph), method="gibbs", gibbs_schedule="jacobi")
