"""Alg. 3 (mode-field EM): reductions to Dawid-Skene, the E-step against brute force, recovery,
the model's EM engine, and bad input."""

import math
import warnings

import pandas as pd
import pytest
import torch

from pyromodels.core import run_em
from pyromodels.crowd.emissions import confusion_counts, log_emissions, normalize_rows
from pyromodels.crowd.majority import majority_vote
from pyromodels.crowd.mrf.em import initialize, mode_field_objective, mode_field_posteriors
from pyromodels.crowd.mrf.energy import PottsCoupling, total_energy
from pyromodels.crowd.mrf.fit import networked_em
from pyromodels.crowd.mrf.model import NetworkedDawidSkene
from pyromodels.data import AnnotationTable, Graph, WorkerPopulation, simulate_networked_annotations


def data(seed, n=200, mean_degree=5.0, within=0.9, **workers):
    workers = WorkerPopulation(5, **{"dominance": 0.5, "labels_per_item": 3, **workers})
    return simulate_networked_annotations(n, workers, 3, mean_degree=mean_degree, within=within,
                                          seed=seed)


def ds_em(table, labels, num_iter):
    """Dawid-Skene EM with equal priors written out (eqs. 9 and 11): E-step softmax of the
    emissions, M-step normalised expected counts; returns every iterate's confusions."""
    q = torch.nn.functional.one_hot(labels, table.num_classes).double()
    confs = [normalize_rows(confusion_counts(table, q))]
    for _ in range(num_iter):
        q = torch.softmax(log_emissions(table, confs[-1].log()), -1)
        confs.append(normalize_rows(confusion_counts(table, q)))
    return confs


@pytest.mark.parametrize("how", ["zero delta", "no edges"])
def test_without_coupling_alg3_is_dawid_skene_em(how):
    table, graph, _ = data(0)
    if how == "no edges":
        graph = Graph.from_edges(torch.zeros(0, 2, dtype=torch.long), num_nodes=table.num_items)
        delta = "M"
    else:
        delta = 0.0
    mv = majority_vote(table, seed=3)
    fit = networked_em(table, graph, delta, labels=mv, max_iter=6, tol=1e-300,
                       warn_not_converged=False)
    confs = ds_em(table, mv, 6)
    assert fit.diagnostics["n_iter"] == 6
    assert torch.allclose(fit.params["confusion"], confs[-1], atol=1e-12)
    assert torch.allclose(fit.params["posteriors"],
                          torch.softmax(log_emissions(table, confs[-1].log()), -1), atol=1e-12)
    # the labels are the last ICM's: the per-item argmax under the previous confusions
    assert torch.equal(fit.params["labels"], log_emissions(table, confs[-2].log()).argmax(-1))
    # the objective is the equal-prior Dawid-Skene log likelihood of each iterate
    for c, value in zip(confs, fit.losses.tolist()):
        log_b = log_emissions(table, c.log())
        want = torch.logsumexp(log_b, -1).sum() - table.num_items * math.log(3)
        assert value == pytest.approx(float(want), rel=1e-12)


def brute_log_likelihood(table, confusion):
    """sum_n log( 1/K sum_k prod over item n's labels of confusion[w, k, answer] )."""
    K = table.num_classes
    per_item = [[1.0] * K for _ in range(table.num_items)]
    for n, w, j in zip(table.item_idx.tolist(), table.worker_idx.tolist(),
                       table.label_idx.tolist()):
        for k in range(K):
            per_item[n][k] *= float(confusion[w, k, j])
    return sum(math.log(sum(p) / K) for p in per_item)


def test_mode_field_e_step_is_the_exact_conditional_given_clamped_neighbours():
    table, graph, truth = data(1, n=12, mean_degree=3.0, within=0.7)
    g = torch.Generator().manual_seed(1)
    coupling = PottsCoupling.per_edge(graph, 4 * torch.rand(graph.num_edges, generator=g))
    log_b = log_emissions(table, truth["confusion"].log())
    y = torch.randint(3, (12,), generator=g)
    q = mode_field_posteriors(log_b, coupling, y)
    for n in range(12):
        ys = y.repeat(3, 1)
        ys[:, n] = torch.arange(3)
        want = torch.softmax(-total_energy(coupling, log_b, ys), 0)  # p(y_n | y_-n), brute force
        assert torch.allclose(q[n], want, atol=1e-12)
    zero = PottsCoupling.constant(graph, 0.0)
    assert float(mode_field_objective(log_b, zero, y)) == pytest.approx(
        brute_log_likelihood(table, truth["confusion"]), rel=1e-12)


def test_starting_points():
    table, graph, truth = data(2)
    conf, y = initialize(table, confusion=truth["confusion"], prior=torch.tensor([0.6, 0.3, 0.1]))
    log_b = log_emissions(table, truth["confusion"].log())
    assert torch.equal(y, (log_b + torch.tensor([0.6, 0.3, 0.1]).log()).argmax(-1))
    labels = torch.randint(3, (200,), generator=torch.Generator().manual_seed(2))
    conf, y = initialize(table, labels=labels, smoothing=0.5)
    counts = torch.zeros(5, 3, 3)
    for n, w, j in zip(table.item_idx.tolist(), table.worker_idx.tolist(),
                       table.label_idx.tolist()):
        counts[w, labels[n], j] += 1
    assert torch.allclose(conf, (counts + 0.5) / (counts + 0.5).sum(-1, keepdim=True))
    conf, y = initialize(table, seed=4)
    assert torch.equal(y, majority_vote(table, seed=4))


def test_given_confusions_with_zeros_are_floored_before_the_map_rule():
    table, graph, truth = simulate_networked_annotations(100, 4, 2, mean_degree=3, seed=9)
    conf = truth["confusion"].clone()
    conf[0] = torch.tensor([[1.0, 0.0], [1.0, 0.0]])  # worker 0 "never" answers 1, yet does
    assert bool(((table.worker_idx == 0) & (table.label_idx == 1)).any())
    with pytest.raises(ValueError, match="every class probability zero"):
        networked_em(table, graph, confusion=conf, init_floor=0.0)
    fit = networked_em(table, graph, confusion=conf)
    assert fit.diagnostics["converged"] and torch.isfinite(fit.losses).all()
    start, _ = initialize(table, confusion=conf)
    assert torch.allclose(start[0], torch.tensor([[1.0, 1e-6], [1.0, 1e-6]]) / (1 + 1e-6))
    assert torch.allclose(start[1:], truth["confusion"][1:], rtol=0, atol=1e-15)  # kept


def test_graph_recovers_labels_that_majority_vote_and_dawid_skene_miss():
    table, graph, truth = data(1, n=600)
    fit = networked_em(table, graph)  # MV + Alg. 3
    alg4 = networked_em(table, graph, confusion=truth["confusion"], prior=truth["prior"])
    ds = networked_em(table, graph, 0.0, max_iter=30, warn_not_converged=False)

    def acc(y):
        return float((y == truth["z"]).double().mean())

    mv = acc(majority_vote(table, seed=0))
    assert fit.diagnostics["converged"] and fit.params["label_changes"][-1] == 0
    labels, alg4_labels = fit.params["labels"], alg4.params["labels"]
    assert acc(labels) > 0.95 and acc(alg4_labels) > 0.95
    assert acc(labels) > mv + 0.25 and acc(labels) > acc(ds.params["labels"]) + 0.25


def test_model_em_engine_runs_alg3_and_does_not_warn_about_monotonicity():
    table, graph, _ = data(1, n=600)
    model = NetworkedDawidSkene()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        post = model.fit((table, graph), seed=0, progress=False)
    losses = post.losses.tolist()
    assert any(b < a for a, b in zip(losses, losses[1:]))  # the objective did go down once
    with warnings.catch_warnings():  # em_monotone = False: the bare runner is quiet as well
        warnings.simplefilter("error")
        run_em(model, (table, graph), seed=0, progress=False)
    mv = majority_vote(table, seed=5)
    post = model.fit((table, graph), init_labels=mv, progress=False)
    ref = networked_em(table, graph, labels=mv)
    assert torch.equal(post.params["labels"], ref.params["labels"])
    assert torch.allclose(post.params["confusion"], ref.params["confusion"], atol=1e-6)
    # the same number of iterations gives identical iterates (max_iter counts EM steps)
    p3 = model.fit((table, graph), init_labels=mv, max_iter=3, tol=1e-300, progress=False,
                   warn_not_converged=False)
    r3 = networked_em(table, graph, labels=mv, max_iter=3, tol=1e-300, warn_not_converged=False)
    assert len(p3.losses) == 4
    # the model adds the Dirichlet(1) log prior: log Gamma(K) = log 2 for each of M K rows
    shifted = (p3.losses - 15 * math.log(2)).tolist()
    assert shifted == pytest.approx(r3.losses.tolist(), rel=1e-13)
    assert torch.allclose(p3.params["confusion"], r3.params["confusion"], atol=1e-13)
    assert torch.equal(p3.samples["y"][0, 0], r3.params["labels"])
    assert torch.allclose(p3.params["posteriors"], r3.params["posteriors"], atol=1e-13)


def test_model_em_with_node_coupling_and_given_confusions():
    table, graph, truth = data(2, n=300, missing_rate=0.3, labels_per_item=None)
    post = NetworkedDawidSkene(delta="node").fit((table, graph), init_confusion=truth["confusion"],
                                                 seed=0, progress=False)
    ref = networked_em(table, graph, "node", confusion=truth["confusion"])
    assert torch.equal(post.params["labels"], ref.params["labels"])
    assert float((ref.params["labels"] == truth["z"]).double().mean()) > 0.9


def test_bad_em_input_is_rejected():
    table, graph, truth = data(3, n=30, mean_degree=2.0)
    other = Graph.from_edges(graph.edges, num_nodes=30, nodes=[f"n{i}" for i in range(30)])
    with pytest.raises(ValueError, match="graph nodes and table items differ"):
        networked_em(table, other)
    with pytest.raises(ValueError, match="graph has 31 nodes but the table has 30 items"):
        networked_em(table, Graph.from_edges(graph.edges, num_nodes=31))
    with pytest.raises(ValueError, match="delta must be >= 0"):
        networked_em(table, graph, -1.0)
    with pytest.raises(ValueError, match="delta must be >= 0"):
        NetworkedDawidSkene(delta=-2.0)
    with pytest.raises(ValueError, match="delta must be finite"):
        networked_em(table, graph, float("nan"))
    df = pd.DataFrame({"task": [0, 1, 2], "worker": [0, 0, 1], "label": ["a", "a", "a"]})
    single = AnnotationTable.from_dataframe(df)
    with pytest.raises(ValueError, match=r"table must have at least 2 classes \(K >= 2\)"):
        networked_em(single, Graph.from_edges([[0, 1]], num_nodes=3))
    bad = truth["confusion"].clone()
    bad[0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match="confusion must be finite"):
        networked_em(table, graph, confusion=bad)
    with pytest.raises(ValueError, match=r"confusion must have rows summing to 1 \(last axis\); "
                                         r"row confusion\[\d, \d\] sums to 2 \(off by 1"):
        networked_em(table, graph, confusion=2 * truth["confusion"])
    with pytest.raises(ValueError, match=r"confusion must have shape \(5, 3, 3\) \(worker, "
                                         r"true class, answer\), got \(4, 3, 3\)"):
        networked_em(table, graph, confusion=truth["confusion"][:4])
    with pytest.raises(ValueError, match="give at most one of confusion and labels"):
        networked_em(table, graph, confusion=truth["confusion"], labels=truth["z"])
    with pytest.raises(ValueError, match="prior is used only with a starting confusion"):
        networked_em(table, graph, prior=truth["prior"])
    with pytest.raises(ValueError, match="smoothing must be >= 0"):
        networked_em(table, graph, smoothing=-0.1)
    with pytest.raises(ValueError, match="em engine needs confusion_concentration >= 1"):
        NetworkedDawidSkene(confusion_concentration=0.5).fit((table, graph), progress=False)
    with pytest.raises(ValueError, match="method must be one of"):
        NetworkedDawidSkene().fit((table, graph), method="svi")
    with pytest.raises(ValueError, match="icm_schedule must be one of"):
        NetworkedDawidSkene().fit((table, graph), icm_schedule="random")
    with pytest.raises(TypeError, match="data must be NetworkedData or a"):
        NetworkedDawidSkene().fit(table, progress=False)
