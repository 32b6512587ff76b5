"""LabelPosterior (the labels given fixed confusions): its program against exact enumeration,
its written-out log joint and labels block against the program, and sample_labels as a
run_gibbs fit (shapes, seeds, backends, log joint per draw, bad input)."""

import itertools
import math

import pytest
import torch

from pyromodels.core import Model, Posterior
from pyromodels.core.enumeration import marginal_log_joint
from pyromodels.core.seeding import derive_seed, make_generator
from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.mrf.energy import PottsCoupling, conditional_logits
from pyromodels.crowd.mrf.exact import exact_posterior
from pyromodels.crowd.mrf.fit import sample_labels
from pyromodels.crowd.mrf.gibbs import gibbs_label_sweep
from pyromodels.crowd.mrf.labels import LabelData, LabelPosterior
from pyromodels.data import Graph, WorkerPopulation, simulate_annotations
from pyromodels.testing import check_discrete_conditional


def tiny(n=6, num_edges=8, seed=0, K=3):
    g = torch.Generator().manual_seed(seed)
    pairs = list(itertools.combinations(range(n), 2))
    pick = torch.randperm(len(pairs), generator=g)[:num_edges].tolist()
    graph = Graph.from_edges([pairs[p] for p in pick], num_nodes=n)
    coupling = PottsCoupling.per_edge(graph, 3.0 * torch.rand(num_edges, generator=g))
    table, truth = simulate_annotations(n, WorkerPopulation(3, dominance=0.5), K, seed=seed)
    return LabelData(log_emissions(table, truth["confusion"].log()), coupling)


def test_enumerated_program_has_the_exact_evidence():
    data = tiny()
    ex = exact_posterior(data.log_b, data.coupling)
    # the program is the posterior times the uniform base measure 3^-6
    evidence = marginal_log_joint(LabelPosterior(), data, {})
    assert float(evidence) == pytest.approx(ex.log_partition - 6 * math.log(3), rel=1e-12)


def test_written_out_log_joint_is_the_program_s():
    data = tiny(seed=1)
    model = LabelPosterior()
    g = torch.Generator().manual_seed(1)
    for _ in range(4):
        y = torch.randint(3, (6,), generator=g)
        traced = Model.log_joint(model, data, {"y": y})
        assert float(model.log_joint(data, {"y": y})) == pytest.approx(float(traced), rel=1e-13)


def test_labels_block_is_the_program_s_conditional():
    data = tiny(seed=2)
    model = LabelPosterior()
    (block,) = model.gibbs_sweep(data).blocks
    y = torch.randint(3, (6,), generator=torch.Generator().manual_seed(2))
    logits = conditional_logits(data.coupling, data.log_b, y)
    for n in range(6):
        own, joint = check_discrete_conditional(model, data, block, {"y": y}, "y", n, range(3))
        assert torch.allclose(own, joint, atol=1e-12)
        assert torch.allclose(torch.softmax(logits[n], 0), joint, atol=1e-12)


def test_sample_labels_is_a_run_gibbs_fit():
    data = tiny(seed=3)
    post = sample_labels(data.log_b, data.coupling, num_samples=30, num_warmup=5, num_chains=3,
                         seed=7)
    assert isinstance(post, Posterior) and post.method == "gibbs"
    y = post.samples["y"]
    assert y.shape == (3, 30, 6) and y.dtype == torch.long
    assert not torch.equal(y[0], y[1])  # each chain has its own seed
    # the log joint of every draw, as the model writes it
    lp = post.sample_stats["lp"]
    model = LabelPosterior()
    assert float(lp[2, 11]) == pytest.approx(float(model.log_joint(data, {"y": y[2, 11]})),
                                             rel=1e-13)
    again = sample_labels(data.log_b, data.coupling, num_samples=30, num_warmup=5, num_chains=3,
                          seed=7)
    assert torch.equal(again.samples["y"], y)
    # thinning keeps every thin-th sweep of the same chain
    thinned = sample_labels(data.log_b, data.coupling, num_samples=10, num_warmup=5, thin=3,
                            num_chains=3, seed=7)
    assert torch.equal(thinned.samples["y"], y[:, ::3])


def test_sequential_draws_are_the_same_on_both_backends_and_start_where_asked():
    data = tiny(seed=4)
    kw = {"num_samples": 20, "num_warmup": 0, "schedule": "sequential", "seed": 3}
    fast = sample_labels(data.log_b, data.coupling, backend="numba", **kw).samples["y"]
    slow = sample_labels(data.log_b, data.coupling, backend="python", **kw).samples["y"]
    assert torch.equal(fast, slow)
    start = torch.tensor([2, 2, 2, 2, 2, 2])
    model = LabelPosterior()
    assert torch.equal(model.init_state(data, None)["y"], data.log_b.argmax(-1))
    post = model.fit(data, init_labels=start, num_samples=1, num_warmup=0, num_chains=1, seed=0,
                     schedule="sequential", progress=False)
    # a sequential sweep from ``start`` with the first chain's uniforms
    gen = make_generator(derive_seed(0, "chain", 0))
    want = gibbs_label_sweep(data.log_b, data.coupling, start, gen, schedule="sequential")
    assert torch.equal(post.samples["y"][0, 0], want)


def test_bad_label_data_is_rejected():
    data = tiny(seed=5)
    node = PottsCoupling.per_node(data.coupling.graph, torch.ones(6))
    with pytest.raises(ValueError, match="Gibbs sampling needs a symmetric coupling"):
        LabelData(data.log_b, node)
    with pytest.raises(TypeError, match="coupling must be a PottsCoupling, got Graph"):
        LabelData(data.log_b, data.coupling.graph)
    with pytest.raises(ValueError, match=r"log_b must have one row per node \(6\), got 5"):
        sample_labels(data.log_b[:5], data.coupling)
    with pytest.raises(ValueError, match=r"data must be a \(log_b, coupling\) pair"):
        LabelPosterior().fit((data.log_b,), progress=False)
    with pytest.raises(TypeError, match="data must be LabelData or a"):
        LabelPosterior().fit(data.log_b, progress=False)
    with pytest.raises(ValueError, match=r"labels must have one entry per node \(6\), got 2"):
        sample_labels(data.log_b, data.coupling, labels=[0, 1])
    with pytest.raises(ValueError, match="method must be one of"):
        LabelPosterior().fit(data, method="em")
    with pytest.raises(ValueError, match="backend must be one of"):
        sample_labels(data.log_b, data.coupling, backend="cuda")
