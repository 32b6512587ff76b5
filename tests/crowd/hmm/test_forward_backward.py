"""Forward-backward against exact enumeration, hmmlearn and its own invariants."""

import numpy as np
import pytest
import torch
from hmmlearn.hmm import CategoricalHMM

from pyromodels.crowd.emissions import log_emissions
from pyromodels.crowd.hmm import brute_force, forward_backward, forward_filter, log_likelihood
from pyromodels.crowd.hmm.kernels.logspace import logmatmulexp, vector_scan
from pyromodels.data.simulate_crowd import WorkerPopulation, simulate_sequential_annotations

BACKENDS = ["torch", "numba"]


def crowd_case(lengths, K, M=3, missing_rate=0.4, seed=0):
    """Log emissions of simulated crowd labels (with missing responses) and random parameters
    whose initial law is NOT the stationary one."""
    seqs, truth = simulate_sequential_annotations(lengths,
                                                  WorkerPopulation(M, missing_rate=missing_rate), K,
                                                  stickiness=0.3, seed=seed)
    g = torch.Generator().manual_seed(seed)
    initial = torch.softmax(torch.randn(K, generator=g, dtype=torch.float64) * 2, -1)
    e = log_emissions(seqs.data, truth["confusion"].log())
    return seqs, e, initial.log(), truth["transition"].log()


CASES = [([1, 4, 2, 5], 2, 0), ([5], 3, 1), ([3, 1, 1, 2, 4], 3, 2), ([2, 2], 2, 3)]


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("lengths,K,seed", CASES)
def test_matches_enumeration_over_all_paths(backend, lengths, K, seed):
    seqs, e, a, tr = crowd_case(lengths, K, seed=seed)
    assert bool((seqs.data.counts_per_item() < 3).any())  # some responses are missing
    exact = brute_force(e, a, tr, lengths)
    step = forward_backward(e, a, tr, lengths, pairwise="step", backend=backend)
    summed = forward_backward(e, a, tr, lengths, pairwise="sum", backend=backend)
    torch.testing.assert_close(step.log_likelihood, exact["log_likelihood"], rtol=0, atol=1e-10)
    torch.testing.assert_close(step.posterior, exact["posterior"], rtol=0, atol=1e-10)
    torch.testing.assert_close(step.pairwise, exact["pairwise"], rtol=0, atol=1e-10)
    seq_of_step = torch.repeat_interleave(torch.arange(len(lengths)), torch.tensor(lengths) - 1)
    per_seq = torch.zeros(len(lengths), K, K, dtype=torch.float64)
    per_seq.index_add_(0, seq_of_step, exact["pairwise"])
    torch.testing.assert_close(summed.pairwise, per_seq, rtol=0, atol=1e-10)
    torch.testing.assert_close(log_likelihood(e, a, tr, lengths, backend=backend), exact["log_likelihood"],
                               rtol=0, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_pairwise_marginals_sum_to_the_marginals(backend):
    lengths = [6, 3, 7]
    _, e, a, tr = crowd_case(lengths, 3, seed=4)
    fb = forward_backward(e, a, tr, lengths, pairwise="step", backend=backend)
    starts = torch.zeros(16, dtype=torch.bool)
    starts[[0, 6, 9]] = True
    t = torch.nonzero(~starts).flatten()
    torch.testing.assert_close(fb.pairwise.sum(-1), fb.posterior[t - 1], rtol=0, atol=1e-12)
    torch.testing.assert_close(fb.pairwise.sum(-2), fb.posterior[t], rtol=0, atol=1e-12)


@pytest.mark.parametrize("backend", BACKENDS)
def test_filter_is_the_posterior_at_each_sequence_end(backend):
    lengths = [4, 1, 5]
    _, e, a, tr = crowd_case(lengths, 3, seed=5)
    log_filt, loglik = forward_filter(e, a, tr, lengths, backend=backend)
    exact = brute_force(e, a, tr, lengths)
    ends = torch.tensor([3, 4, 9])
    torch.testing.assert_close(log_filt[ends].exp(), exact["posterior"][ends], rtol=0, atol=1e-10)
    # the filter at t uses F_1..F_t only: it is the posterior of the sequence cut at t
    cut = brute_force(e[5:7], a, tr, [2])
    torch.testing.assert_close(log_filt[6].exp(), cut["posterior"][1], rtol=0, atol=1e-10)
    torch.testing.assert_close(loglik, exact["log_likelihood"], rtol=0, atol=1e-10)


def test_gradient_of_the_scan_log_likelihood_is_the_posterior():
    # d log p(F) / d log b_t(k) = q_t(k): the torch path is differentiable end to end
    lengths = [5, 3]
    _, e, a, tr = crowd_case(lengths, 3, seed=6)
    e = e.clone().requires_grad_(True)
    log_likelihood(e, a, tr, lengths, backend="torch").sum().backward()
    exact = brute_force(e.detach(), a, tr, lengths)
    torch.testing.assert_close(e.grad, exact["posterior"], rtol=0, atol=1e-10)


def _hmmlearn(K, transition, emission, initial):
    model = CategoricalHMM(n_components=K, n_features=emission.shape[1], n_iter=1, tol=0.0,
                           init_params="", params="ste")
    model.startprob_ = initial.numpy()
    model.transmat_ = transition.numpy()
    model.emissionprob_ = emission.numpy()
    return model


@pytest.mark.parametrize("backend", BACKENDS)
def test_agrees_with_hmmlearn_on_long_ragged_sequences(backend):
    # one worker answering every item: hmmlearn's CategoricalHMM with transmat_ = transition
    # (rows = previous), emissionprob_ = confusion[0], startprob_ = the law of y_1
    lengths = [700, 1, 1300, 500]
    seqs, truth = simulate_sequential_annotations(lengths, WorkerPopulation(1, dominance=0.6), 4,
                                                  stickiness=0.6, seed=7)
    initial = torch.tensor([0.1, 0.2, 0.3, 0.4], dtype=torch.float64)
    x = seqs.values().numpy()  # (T, 1) label codes
    peer = _hmmlearn(4, truth["transition"], truth["confusion"][0], initial)
    e = log_emissions(seqs.data, truth["confusion"].log())
    fb = forward_backward(e, initial.log(), truth["transition"].log(), lengths, backend=backend)
    assert abs(float(fb.total_log_likelihood) - peer.score(x, lengths)) < 1e-8
    np.testing.assert_allclose(fb.posterior.numpy(), peer.predict_proba(x, lengths), rtol=0, atol=1e-10)


def test_backends_agree_on_one_long_sequence_with_many_workers():
    # 20,000 steps, K = 10, 12 workers: log-likelihood in the thousands of nats
    T, K = 20_000, 10
    seqs, truth = simulate_sequential_annotations([T], WorkerPopulation(12, missing_rate=0.5), K,
                                                  stickiness=0.5, seed=8)
    e = log_emissions(seqs.data, truth["confusion"].log())
    a = torch.full((K,), 1.0 / K, dtype=torch.float64).log()
    scan = forward_backward(e, a, truth["transition"].log(), backend="torch")
    scaled = forward_backward(e, a, truth["transition"].log(), backend="numba")
    rel = abs(float(scan.total_log_likelihood / scaled.total_log_likelihood) - 1)
    assert rel < 1e-12
    torch.testing.assert_close(scan.posterior, scaled.posterior, rtol=0, atol=1e-8)
    torch.testing.assert_close(scan.pairwise / T, scaled.pairwise / T, rtol=0, atol=1e-10)


@pytest.mark.parametrize("backend", BACKENDS)
def test_impossible_transitions_are_handled_exactly(backend):
    # a deterministic 3-cycle with -inf entries and responses that contradict it softly
    cycle = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
    g = torch.Generator().manual_seed(9)
    e = torch.randn(7, 3, generator=g, dtype=torch.float64)
    a = torch.tensor([0.5, 0.25, 0.25], dtype=torch.float64).log()
    exact = brute_force(e, a, cycle.log(), [4, 3])
    fb = forward_backward(e, a, cycle.log(), [4, 3], pairwise="step", backend=backend)
    torch.testing.assert_close(fb.log_likelihood, exact["log_likelihood"], rtol=0, atol=1e-12)
    torch.testing.assert_close(fb.posterior, exact["posterior"], rtol=0, atol=1e-12)
    torch.testing.assert_close(fb.pairwise, exact["pairwise"], rtol=0, atol=1e-12)


def test_log_matrix_product_is_exact_far_below_the_row_and_column_maxima():
    # the shifted exp-product underflows for entry (0, 0): exact value is -1500
    a = torch.tensor([[[0.0, -1000.0], [0.0, 0.0]]], dtype=torch.float64)
    b = torch.tensor([[[-500.0, 0.0], [-1500.0, 0.0]]], dtype=torch.float64)
    exact = torch.logsumexp(a.unsqueeze(-1) + b.unsqueeze(-3), dim=-2)
    out = logmatmulexp(a, b)
    torch.testing.assert_close(out, exact, rtol=0, atol=1e-12)
    assert float(out[0, 0, 0]) == pytest.approx(-500.0)
    dead = torch.tensor([[[-float("inf"), -float("inf")], [0.0, -1.0]]], dtype=torch.float64)
    out = logmatmulexp(dead, b)
    assert torch.isneginf(out[0, 0]).all() and torch.isfinite(out[0, 1]).all()


def test_segmented_scan_matches_a_sequential_loop():
    g = torch.Generator().manual_seed(10)
    T, K = 37, 3
    x = torch.randn(T, K, K, generator=g, dtype=torch.float64)
    first = torch.randn(T, K, generator=g, dtype=torch.float64)
    reset = torch.rand(T, generator=g) < 0.2
    reset[0] = True
    out = vector_scan(x, first, reset)
    v = None
    for t in range(T):
        v = first[t] if reset[t] else torch.logsumexp(v.unsqueeze(-1) + x[t], 0)
        torch.testing.assert_close(out[t], v, rtol=0, atol=1e-12)


@pytest.mark.parametrize("backend", ["auto", "torch", "numba"])
def test_zero_probability_sequence_is_an_error_for_posteriors(backend):
    e = torch.tensor([[0.0, -float("inf")], [0.0, -float("inf")]], dtype=torch.float64)
    a = torch.tensor([0.0, -float("inf")], dtype=torch.float64)
    switch = torch.tensor([[-float("inf"), 0.0], [0.0, -float("inf")]], dtype=torch.float64)
    assert torch.isneginf(log_likelihood(e, a, switch, backend=backend)).all()
    with pytest.raises(ValueError, match=r"sequence\(s\) \[0\] have probability zero"):
        forward_backward(e, a, switch, backend=backend)


def test_auto_backend_recomputes_in_log_space_when_scaling_underflows():
    # the step from state 0 to 1 has probability e^-800: below the smallest double
    e = torch.tensor([[0.0, -float("inf")], [-float("inf"), 0.0]], dtype=torch.float64)
    a = torch.tensor([0.0, -float("inf")], dtype=torch.float64)
    tr = torch.tensor([[0.0, -800.0], [-800.0, 0.0]], dtype=torch.float64)
    assert torch.isneginf(log_likelihood(e, a, tr, backend="numba")).all()
    assert float(log_likelihood(e, a, tr, backend="auto")[0]) == pytest.approx(-800.0, abs=1e-12)
    fb = forward_backward(e, a, tr, backend="auto", pairwise="step")
    torch.testing.assert_close(fb.pairwise[0], torch.tensor([[0.0, 1.0], [0.0, 0.0]], dtype=torch.float64))


def test_float32_inputs_stay_float32():
    _, e, a, tr = crowd_case([3, 4], 2, seed=11)
    for backend in BACKENDS:
        fb = forward_backward(e.float(), a.float(), tr.float(), [3, 4], backend=backend)
        assert fb.posterior.dtype == torch.float32 and fb.log_likelihood.dtype == torch.float32


def test_bad_inputs_are_named():
    _, e, a, tr = crowd_case([3, 4], 2, seed=12)
    with pytest.raises(ValueError, match="lengths must sum to the number of positions 7"):
        forward_backward(e, a, tr, [3, 3])
    with pytest.raises(ValueError, match="lengths must all be >= 1"):
        forward_backward(e, a, tr, [7, 0])
    bad = e.clone()
    bad[2, 1] = float("nan")
    with pytest.raises(ValueError, match="log_emissions must not contain NaN"):
        forward_backward(bad, a, tr, [3, 4])
    with pytest.raises(ValueError, match=r"log_initial must not contain \+inf"):
        forward_backward(e, torch.tensor([float("inf"), 0.0], dtype=torch.float64), tr)
    with pytest.raises(ValueError, match=r"log_transition must have shape \(2, 2\)"):
        forward_backward(e, a, tr[:1])
    with pytest.raises(TypeError, match="log_emissions must be a floating tensor"):
        forward_backward(torch.zeros(7, 2, dtype=torch.long), a, tr)
    with pytest.raises(ValueError, match="backend must be one of"):
        forward_backward(e, a, tr, backend="cuda")
    with pytest.raises(ValueError, match="pairwise must be one of"):
        forward_backward(e, a, tr, pairwise="all")
