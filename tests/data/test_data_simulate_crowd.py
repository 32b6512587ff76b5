"""Crowd simulators: the truth they return is what generated the labels."""

import pytest
import torch

from pyromodels.data import (
    random_confusions,
    random_transitions,
    sbm_graph,
    simulate_networked_annotations,
    simulate_sequential_annotations,
)


def test_confusions_are_row_stochastic_and_forced_dominant():
    conf = random_confusions(8, 4, dominance=0.4, concentration=2.0, num_random=3,
                             force_dominant=True, seed=0)
    assert conf.shape == (8, 4, 4) and torch.allclose(conf.sum(-1), torch.ones(8, 4, dtype=conf.dtype))
    good = conf[:5]
    assert bool((torch.diagonal(good, dim1=-2, dim2=-1) == good.max(-1).values).all())
    same = random_confusions(8, 4, dominance=0.4, concentration=2.0, num_random=3, seed=0)
    # the swap only permutes entries within rows of the first five workers
    assert torch.allclose(same.sort(-1).values, conf.sort(-1).values)
    assert torch.equal(same[5:], conf[5:])


def test_transitions_mix_with_identity():
    t0 = random_transitions(3, seed=1)
    t = random_transitions(3, stickiness=0.5, seed=1)
    assert torch.allclose(t, 0.5 * t0 + 0.5 * torch.eye(3, dtype=t.dtype))
    with pytest.raises(ValueError, match="stickiness must be < 1"):
        random_transitions(3, stickiness=1.0, seed=0)


def test_sequential_truth_matches_empirical_transitions():
    seqs, truth = simulate_sequential_annotations([200] * 50, 3, 3, stickiness=0.3, seed=2)
    z, T = truth["z"], truth["transition"]
    assert int(seqs.lengths.sum()) == len(z) == seqs.data.num_items
    counts = torch.zeros(3, 3, dtype=torch.float64)
    start = 0
    for length in seqs.lengths.tolist():
        y = z[start:start + length]
        counts.index_put_((y[:-1], y[1:]), torch.ones(length - 1, dtype=torch.float64), accumulate=True)
        start += length
    emp = counts / counts.sum(-1, keepdim=True)
    # each row has at least ~2,000 transitions: binomial standard error <= 0.012; allow 5 of them
    se = (T * (1 - T) / counts.sum(-1, keepdim=True)).sqrt()
    assert bool(((emp - T).abs() <= 5 * se + 1e-12).all())


def test_sbm_graph_degree_and_homophily():
    z = torch.arange(400) % 4
    g = sbm_graph(z, 5.0, within=0.8, seed=3)
    assert g.num_edges == 1000 and g.mean_degree == pytest.approx(5.0)
    e = g.edges
    same = (z[e[:, 0]] == z[e[:, 1]]).double().mean()
    # 1,000 edges, each within-community with probability 0.8: standard error 0.013; allow 5
    assert abs(float(same) - 0.8) < 5 * 0.0127


def test_networked_simulation_returns_matching_graph():
    table, graph, truth = simulate_networked_annotations(60, 5, 3, mean_degree=2.0, seed=4)
    assert graph.num_nodes == table.num_items == len(truth["z"])
    graph.check_matches(table)
