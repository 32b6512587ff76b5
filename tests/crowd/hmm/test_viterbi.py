"""Viterbi against brute-force argmax, Pyro's infer_discrete and hmmlearn."""

import numpy as np
import pytest
import torch
from hmmlearn.hmm import CategoricalHMM
from pyro import poutine
from pyro.infer import infer_discrete

from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.hmm import SequentialDawidSkene, brute_force, viterbi
from pyromodels.data.simulate_crowd import WorkerPopulation, simulate_sequential_annotations

BACKENDS = ["torch", "numba"]


def _case(lengths, K, seed, missing_rate=0.4):
    seqs, truth = simulate_sequential_annotations(lengths,
                                                  WorkerPopulation(3, missing_rate=missing_rate), K,
                                                  stickiness=0.4, seed=seed)
    initial = torch.softmax(torch.randn(K, generator=torch.Generator().manual_seed(seed),
                                        dtype=torch.float64), -1)
    return seqs, truth, initial


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lengths,K,seed", [([1, 4, 2, 5], 2, 0), ([5, 3], 3, 1), ([2, 1, 4], 3, 2)])
def test_matches_brute_force_argmax(backend, lengths, K, seed):
    seqs, truth, initial = _case(lengths, K, seed)
    e = log_emissions(seqs.data, truth["confusion"].log())
    path, score = viterbi(e, initial.log(), truth["transition"].log(), lengths, backend=backend)
    exact = brute_force(e, initial.log(), truth["transition"].log(), lengths)
    assert torch.equal(path, exact["viterbi"])
    torch.testing.assert_close(score, exact["viterbi_score"], rtol=0, atol=1e-12)


@pytest.mark.parametrize("initial_mode", ["learned", "fixed"])
def test_matches_infer_discrete_at_temperature_zero(initial_mode):
    lengths = [6, 2, 5, 4]
    seqs, truth, initial = _case(lengths, 3, seed=3)
    probs = initial if initial_mode == "fixed" else None
    model = SequentialDawidSkene(initial=initial_mode, initial_probs=probs)
    data = model.prepare(seqs)
    params = {"transition": truth["transition"], "confusion": truth["confusion"]}
    if initial_mode == "learned":
        params["initial"] = initial
    cond = poutine.condition(model.enumerated_model, data=params)
    trace = poutine.trace(infer_discrete(cond, first_available_dim=-2, temperature=0)).get_trace(data)
    _, mask = data.dense
    z = torch.stack([trace.nodes[f"z_{t}"]["value"] for t in range(mask.shape[1])], 1)[mask]
    decoded = model.decode(data, {**params, "initial": initial})
    assert torch.equal(decoded, z)


@pytest.mark.parametrize("backend", BACKENDS)
def test_agrees_with_hmmlearn_decode(backend):
    lengths = [300, 50, 651]
    seqs, truth = simulate_sequential_annotations(lengths, WorkerPopulation(1, dominance=0.6), 4,
                                                  stickiness=0.5, seed=4)
    initial = torch.tensor([0.4, 0.3, 0.2, 0.1], dtype=torch.float64)
    peer = CategoricalHMM(n_components=4, n_features=4, init_params="", params="")
    peer.startprob_, peer.transmat_ = initial.numpy(), truth["transition"].numpy()
    peer.emissionprob_ = truth["confusion"][0].numpy()
    best, states = peer.decode(seqs.values().numpy(), lengths)
    e = log_emissions(seqs.data, truth["confusion"].log())
    path, score = viterbi(e, initial.log(), truth["transition"].log(), lengths, backend=backend)
    np.testing.assert_array_equal(path.numpy(), states)
    assert abs(float(score.sum()) - best) < 1e-8


def test_backends_agree_on_ragged_sequences_with_impossible_moves():
    g = torch.Generator().manual_seed(5)
    K, lengths = 4, [400, 1, 17, 250]
    e = torch.randn(sum(lengths), K, generator=g, dtype=torch.float64) * 3
    tr = torch.softmax(torch.randn(K, K, generator=g, dtype=torch.float64), -1)
    tr[0, 1] = tr[2, 3] = 0.0  # impossible moves (-inf)
    a = torch.softmax(torch.randn(K, generator=g, dtype=torch.float64), -1).log()
    p1, s1 = viterbi(e, a, tr.log(), lengths, backend="torch")
    p2, s2 = viterbi(e, a, tr.log(), lengths, backend="numba")
    assert torch.equal(p1, p2)
    torch.testing.assert_close(s1, s2, rtol=1e-14, atol=1e-10)
    inside = torch.ones(sum(lengths) - 1, dtype=torch.bool)
    inside[[399, 400, 417]] = False  # the steps that cross sequence boundaries
    for i, j in [(0, 1), (2, 3)]:
        assert not bool(((p1[:-1] == i) & (p1[1:] == j) & inside).any())


@pytest.mark.parametrize("backend", BACKENDS)
def test_ties_go_to_the_smallest_state(backend):
    e = torch.zeros(5, 3, dtype=torch.float64)
    a = torch.full((3,), 1 / 3, dtype=torch.float64).log()
    tr = torch.full((3, 3), 1 / 3, dtype=torch.float64).log()
    assert viterbi(e, a, tr, [2, 3], backend=backend)[0].tolist() == [0, 0, 0, 0, 0]


def test_bad_lengths_are_named():
    e = torch.zeros(5, 2, dtype=torch.float64)
    a = torch.full((2,), 0.5, dtype=torch.float64).log()
    with pytest.raises(ValueError, match="lengths must sum to the number of positions 5"):
        viterbi(e, a, a.expand(2, 2), [2, 2])
