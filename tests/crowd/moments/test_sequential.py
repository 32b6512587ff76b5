"""Alg. 2: lag-1 moments, the eq. 22 programme, the transition orientation and recovery."""

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from pyromodels.crowd.moments.fit import MomentEstimate
from pyromodels.crowd.moments.sequential import (
    LagMoments,
    fit_sequential_moments,
    lag_moments,
    population_lag_moments,
    solve_joint,
    transition_from_joint,
)
from pyromodels.data import AnnotationTable, Sequences
from pyromodels.data.simulate_crowd import random_confusions, simulate_sequential_annotations

CYCLE = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)
# A non-reversible chain: P(i -> j) differs from P(j -> i) in the stationary regime.
SKEWED = torch.tensor([[0.6, 0.3, 0.1], [0.1, 0.6, 0.3], [0.3, 0.1, 0.6]], dtype=torch.float64)


def _estimate(confusion, prior=None):
    m, k = confusion.shape[:2]
    prior = torch.full((k,), 1.0 / k, dtype=torch.float64) if prior is None else prior
    return MomentEstimate(prior, confusion, 0.0, (), torch.arange(m))


def _stationary_joint(transition):
    vals, vecs = torch.linalg.eig(transition.T)
    pi = vecs[:, torch.argmin((vals - 1).abs())].real
    pi = pi / pi.sum()
    return pi[:, None] * transition


def test_lag_moments_match_a_loop_over_consecutive_pairs():
    rng = np.random.default_rng(0)
    lengths = [3, 1, 4, 2, 5]
    n, m, k = sum(lengths), 4, 3
    rows = [(i, w, int(rng.integers(k))) for i in range(n) for w in range(m) if rng.random() < 0.7]
    items, workers, labels = map(list, zip(*rows))
    table = AnnotationTable.from_arrays(items, workers, labels, num_items=n, num_workers=m,
                                        num_classes=k)
    dense = np.full((n, m), -1)
    dense[items, workers] = labels
    sums, counts = np.zeros((m, m, k, k)), np.zeros((m, m), dtype=int)
    start = 0
    for length in lengths:  # pairs never cross from one sequence into the next
        for t in range(start + 1, start + length):
            for a in range(m):
                for b in range(m):
                    if dense[t - 1, a] >= 0 and dense[t, b] >= 0:
                        sums[a, b, dense[t - 1, a], dense[t, b]] += 1
                        counts[a, b] += 1
        start += length
    lag = lag_moments(Sequences(table, lengths))
    np.testing.assert_array_equal(lag.counts.numpy(), counts)
    np.testing.assert_allclose(lag.second.numpy(), sums / np.maximum(counts, 1)[:, :, None, None],
                               atol=1e-15)
    sub = lag_moments(Sequences(table, lengths), workers=[3, 1])
    np.testing.assert_array_equal(sub.counts.numpy(), counts[np.ix_([1, 3], [1, 3])])


def test_lag_moments_are_unbiased_for_population_moments():
    # Monte Carlo identity with 20,000 independent stationary sequences of length 2: each
    # entry of S~_ab is a mean of 20,000 i.i.d. indicators with success probability
    # p = (C_a^T A C_b)[i, j], standard error sqrt(p (1 - p) / 20000); all 81 entries must
    # lie within 5 standard errors. A chain that is not reversible makes the order matter:
    # the transposed joint law is off by more than 15 standard errors.
    seqs, truth = simulate_sequential_annotations([2] * 20000, 3, 3, transition=SKEWED, seed=5)
    lag = lag_moments(seqs)
    joint = truth["initial"][:, None] * truth["transition"]
    pop = population_lag_moments(truth["confusion"], joint)
    se = torch.sqrt(pop.second * (1 - pop.second) / lag.counts[:, :, None, None])
    assert float(((lag.second - pop.second).abs() / se).max()) < 5
    wrong = population_lag_moments(truth["confusion"], joint.T)
    assert float(((lag.second - wrong.second).abs() / se).max()) > 15


def _slsqp_joint(lag, conf, w):
    k = conf.shape[-1]
    s, c, wn = lag.second.numpy(), conf.numpy(), w.numpy()

    def f(v):
        a = v.reshape(k, k)
        fit = np.einsum("aki,kl,blj->abij", c, a, c)
        return float((wn[:, :, None, None] * (s - fit) ** 2).sum())

    res = minimize(f, np.full(k * k, 1.0 / k ** 2), method="SLSQP", bounds=[(0, None)] * k * k,
                   constraints=[{"type": "eq", "fun": lambda v: v.sum() - 1}],
                   options={"ftol": 1e-16, "maxiter": 2000})
    return res.x.reshape(k, k), res.fun


@pytest.mark.parametrize("pairs", ["distinct", "paper", "all"])
def test_joint_programme_matches_slsqp(pairs):
    gen = torch.Generator().manual_seed(3)
    conf = random_confusions(4, 3, seed=9)
    joint = _stationary_joint(SKEWED)
    noisy = population_lag_moments(conf, joint).second
    noisy = noisy + 0.02 * torch.randn(noisy.shape, generator=gen, dtype=torch.float64)
    lag = LagMoments(torch.arange(4), noisy)
    got, objective, gap = solve_joint(lag, conf, pairs=pairs)
    ref, ref_value = _slsqp_joint(lag, conf, lag.weights(pairs))
    assert gap <= 1e-13
    assert objective <= ref_value + 1e-10
    np.testing.assert_allclose(got.numpy(), ref, atol=1e-5)


@pytest.mark.parametrize("pairs", ["distinct", "paper", "all"])
def test_exact_lag_moments_give_back_the_transition(pairs):
    conf = random_confusions(5, 3, seed=2)
    joint = _stationary_joint(SKEWED)
    got, objective, _ = solve_joint(population_lag_moments(conf, joint), conf, pairs=pairs)
    assert objective < 1e-20
    torch.testing.assert_close(got, joint, rtol=0, atol=1e-9)
    prior, transition = transition_from_joint(got)
    torch.testing.assert_close(transition, SKEWED, rtol=0, atol=1e-8)
    torch.testing.assert_close(prior, joint.sum(1), rtol=0, atol=1e-9)


def test_pair_sets():
    w = LagMoments(torch.arange(3), torch.zeros(3, 3, 2, 2)).weights
    assert w("distinct").tolist() == [[0, 1, 1], [1, 0, 1], [1, 1, 0]]
    assert w("paper").tolist() == [[0, 0, 0], [1, 0, 0], [1, 1, 0]]
    assert w("all").tolist() == [[1, 1, 1], [1, 1, 1], [1, 1, 1]]


def _cycle_sequences(num_sequences=30, length=12, workers=4, seed=0):
    gen = torch.Generator().manual_seed(seed)
    starts = torch.randint(3, (num_sequences,), generator=gen)
    z = ((starts[:, None] + torch.arange(length)[None, :]) % 3).reshape(-1)
    n = len(z)
    items = torch.arange(n).repeat_interleave(workers)
    table = AnnotationTable.from_arrays(items, torch.arange(workers).repeat(n), z[items],
                                        num_items=n, num_workers=workers, num_classes=3)
    return Sequences(table, [length] * num_sequences)


def test_a_deterministic_cycle_gives_the_cycle_matrix_not_its_transpose():
    # 0 -> 1 -> 2 -> 0 labelled by perfect workers: transition[i, j] = P(y_t = j | y_{t-1} = i)
    # must be the cycle matrix with rows indexing the previous state.
    seqs = _cycle_sequences()
    est = fit_sequential_moments(seqs, _estimate(torch.eye(3, dtype=torch.float64).expand(4, 3, 3)))
    torch.testing.assert_close(est.transition, CYCLE, rtol=0, atol=1e-10)
    assert float((est.transition - CYCLE.T).abs().max()) == 1.0
    # the whole of Alg. 2, confusion matrices included, finds the same chain
    full = fit_sequential_moments(seqs, n_init=2)
    torch.testing.assert_close(full.confusion, torch.eye(3, dtype=torch.float64).expand(4, 3, 3),
                               rtol=0, atol=1e-6)
    torch.testing.assert_close(full.transition, CYCLE, rtol=0, atol=1e-6)


def test_large_sample_recovers_the_transition():
    # 500 sequences of length 40 (N = 20,000), M = 10, K = 4. With the true confusion
    # matrices the only error is the sampling error of the lag moments: over 8 independent
    # data sets of this size the largest transition error had mean 0.0137 and sd 0.0041, so
    # the bound is mean + 7 sd = 0.042. Alg. 2 with estimated confusion matrices: mean 0.0143,
    # sd 0.0045, bound 0.046; stationary prior: mean 0.0048, sd 0.0019, bound 0.018.
    seqs, truth = simulate_sequential_annotations([40] * 500, 10, 4, stickiness=0.3, seed=21)
    oracle = fit_sequential_moments(seqs, _estimate(truth["confusion"]))
    assert float((oracle.transition - truth["transition"]).abs().max()) < 0.042
    est = fit_sequential_moments(seqs, n_init=1)
    assert float((est.transition - truth["transition"]).abs().max()) < 0.046
    assert float((est.prior - truth["initial"]).abs().max()) < 0.018
    torch.testing.assert_close(est.A.sum(), torch.tensor(1.0, dtype=torch.float64))
    torch.testing.assert_close(est.prior, est.A.sum(1), rtol=0, atol=0)
