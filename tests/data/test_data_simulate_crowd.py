"""Crowd simulators: the truth they return is what generated the labels."""

import hashlib

import pytest
import torch

from pyromodels.data import (
    WorkerPopulation,
    random_confusions,
    random_transitions,
    sbm_graph,
    simulate_annotations,
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


def _digest(*outputs) -> str:
    """The first 16 hex digits of a SHA-256 over every tensor of the simulators' outputs."""
    h = hashlib.sha256()

    def add(obj):
        if isinstance(obj, torch.Tensor):
            h.update(str(obj.dtype).encode())
            h.update(obj.contiguous().numpy().tobytes())
        elif isinstance(obj, dict):
            for key in sorted(obj):
                h.update(key.encode())
                add(obj[key])
        else:  # a data contract: its tensor fields
            for name in obj._tensor_fields:
                add(getattr(obj, name))

    for out in outputs:
        add(out)
    return h.hexdigest()[:16]


# Digests recorded with the simulators as they were before the worker arguments became a
# WorkerPopulation: the same seed must keep giving the same data, bit for bit.
RECORDED = [
    ("f7360c7beb97d290", lambda: simulate_annotations(
        40, WorkerPopulation(5, dominance=0.6, concentration=4.0, num_random=2,
                             force_dominant=True, labels_per_item=3),
        3, class_prior=[0.2, 0.3, 0.5], seed=7)),
    ("a93e30b802f1795e", lambda: simulate_annotations(
        30, WorkerPopulation(4, missing_rate=0.3), 3, seed=11)),
    ("7daf21635c83483d", lambda: simulate_sequential_annotations(
        [7, 5, 9], WorkerPopulation(4, dominance=0.65, concentration=8.0, num_random=1,
                                    missing_rate=0.25), 3, stickiness=0.4, seed=3)),
    ("6d9acd07b8e67d11", lambda: simulate_sequential_annotations(
        [6, 6], WorkerPopulation(3, labels_per_item=2, force_dominant=True), 2,
        transition=[[0.9, 0.1], [0.2, 0.8]], initial=[0.5, 0.5], seed=5)),
    ("31184acced63d439", lambda: simulate_networked_annotations(
        50, WorkerPopulation(5, dominance=0.75, concentration=12.0, num_random=1,
                             force_dominant=True, labels_per_item=2),
        3, mean_degree=3.0, within=0.8, class_prior=[0.5, 0.25, 0.25], seed=13)),
    ("e7c2fec36411955b", lambda: simulate_networked_annotations(
        30, WorkerPopulation(3, missing_rate=0.2), 2, mean_degree=2.0, seed=1)),
]


@pytest.mark.parametrize("expected, simulate", RECORDED)
def test_simulations_match_the_recorded_data(expected, simulate):
    assert _digest(*simulate()) == expected


def test_a_number_of_workers_is_the_default_population():
    by_number = simulate_sequential_annotations([5, 4], 3, 2, seed=6)
    by_population = simulate_sequential_annotations([5, 4], WorkerPopulation(3), 2, seed=6)
    assert _digest(*by_number) == _digest(*by_population)
    with pytest.raises(TypeError, match="workers must be a WorkerPopulation or a number of "
                                        "workers, got float 3.0"):
        simulate_annotations(5, 3.0, 2, seed=0)
    with pytest.raises(TypeError, match="workers must be a WorkerPopulation"):
        simulate_networked_annotations(5, True, 2, mean_degree=1.0, seed=0)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"num_workers": 0}, ValueError, "num_workers must be an integer >= 1, got 0"),
        ({"num_random": 5}, ValueError, "num_random must be an integer <= 4, got 5"),
        ({"force_dominant": 1}, TypeError, "force_dominant must be a bool, got 1"),
        ({"dominance": 0.0}, ValueError, "dominance must lie strictly between 0 and 1"),
        ({"missing_rate": -0.1}, ValueError, "missing_rate must be >= 0"),
    ],
)
def test_worker_population_is_checked_when_made(kwargs, error, match):
    with pytest.raises(error, match=match):
        WorkerPopulation(**({"num_workers": 4} | kwargs))
