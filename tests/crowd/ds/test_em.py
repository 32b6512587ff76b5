"""Dawid-Skene EM: monotone, its M-step is the maximiser, it recovers and beats majority vote."""

import math

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from pyromodels.core import marginal_log_joint
from pyromodels.crowd.ds import em
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.majority import majority_vote
from pyromodels.data import WorkerPopulation, simulate_annotations
from pyromodels.data.simulate_crowd import emit_labels, random_confusions, who_labels
from pyromodels.testing import assert_monotone


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
@pytest.mark.parametrize("em_floor", [0.0, 1e-10])
def test_em_objective_never_decreases(seed, em_floor):
    # overlapping classes and half the labels missing: EM needs many iterations
    table, _ = simulate_annotations(150, WorkerPopulation(6, dominance=0.6, missing_rate=0.5), 3,
                                    seed=seed)
    model = DawidSkene(em_floor=em_floor, allow_unlabelled=True)
    post = model.fit(table, method="em", seed=0, progress=False, max_iter=2000, tol=1e-12)
    assert len(post.losses) > 50 and post.diagnostics["converged"]
    assert_monotone(post.losses, rtol=1e-12)
    final = {k: post.params[k] for k in model.em_sites}
    assert float(post.losses[-1]) == pytest.approx(
        float(marginal_log_joint(model, post.data, final)), rel=1e-12)


def _expected_complete_log_posterior(data, q, prior, confusion):
    """Q(theta) = E_q[log p(labels, z, theta)] written from the definition (dense loops)."""
    t = data.table
    out = (q * prior.log()).sum()
    out = out + (q[t.item_idx] * confusion[t.worker_idx, :, t.label_idx].log()).sum()
    Dirichlet = torch.distributions.Dirichlet
    out = out + Dirichlet(data.confusion_concentration).log_prob(confusion).sum()
    if data.fixed_prior is None:
        out = out + Dirichlet(data.prior_concentration).log_prob(prior)
    return out


@pytest.mark.parametrize("priors", [
    {},  # Dirichlet(1): maximum likelihood
    {"prior_concentration": [2.0, 1.5, 3.0], "confusion_concentration": 1.2, "diagonal": 1.0},
])
def test_m_step_matches_a_numerical_maximiser_of_the_expected_complete_log_posterior(priors):
    table, _ = simulate_annotations(60, WorkerPopulation(3, dominance=0.6), 3, seed=4)
    data = DawidSkene(**priors).prepare(table)
    g = torch.Generator().manual_seed(0)
    q = torch.softmax(2 * torch.randn(60, 3, generator=g), -1)
    closed = em.m_step(data, q, floor=0.0)
    M, K = 3, 3

    def negative_q(x):
        x = torch.as_tensor(x, dtype=torch.float64).requires_grad_(True)
        prior = torch.softmax(x[:K], -1)
        confusion = torch.softmax(x[K:].reshape(M, K, K), -1)
        value = -_expected_complete_log_posterior(data, q, prior, confusion)
        value.backward()
        return float(value.detach()), x.grad.numpy().copy()

    res = minimize(negative_q, np.zeros(K + M * K * K), jac=True, method="L-BFGS-B",
                   options={"gtol": 1e-12, "ftol": 1e-15, "maxiter": 5000})
    x = torch.as_tensor(res.x)
    numeric_prior = torch.softmax(x[:K], -1)
    numeric_conf = torch.softmax(x[K:].reshape(M, K, K), -1)
    # the closed form is at least as good as the numerical optimum, and they coincide
    closed_value = float(
        _expected_complete_log_posterior(data, q, closed["prior"], closed["confusion"]))
    assert closed_value >= -res.fun - 1e-9
    torch.testing.assert_close(closed["prior"], numeric_prior, rtol=0, atol=1e-5)
    torch.testing.assert_close(closed["confusion"], numeric_conf, rtol=0, atol=1e-5)


def test_equal_priors_em_is_the_papers_eq_9_and_keeps_the_prior_uniform():
    table, _ = simulate_annotations(80, 4, 3, class_prior=[0.6, 0.3, 0.1], seed=6)
    model = DawidSkene(update_prior=False)
    post = model.fit(table, method="em", seed=0, progress=False)
    assert "prior" not in post.samples
    torch.testing.assert_close(post.params["prior"], torch.full((3,), 1 / 3))
    # eq. 9: q_nk proportional to exp(sum_m sum_k' I(f_m = k') log Gamma_m(k', k)), dense form
    dense = table.to_dense()
    log_conf = post.params["confusion"].log()
    expected = torch.zeros(80, 3, dtype=torch.float64)
    for m in range(4):
        expected += log_conf[m, :, dense[:, m]].T
    torch.testing.assert_close(post.params["probas"], torch.softmax(expected, -1), rtol=0,
                               atol=1e-12)


def test_em_recovers_the_confusion_matrices_at_large_n():
    N, M, K = 20000, 5, 3
    table, truth = simulate_annotations(N, WorkerPopulation(M, dominance=0.8, concentration=20.0),
                                        K, seed=11)
    post = DawidSkene().fit(table, method="em", seed=0, progress=False)
    # Premise: with 5 good workers the classes are nearly certain, so the ML estimate behaves
    # like the known-class frequency estimate, whose standard error is sqrt(p (1 - p) / n_k).
    assert float(post.params["probas"].max(-1).values.mean()) > 0.97
    n_k = torch.bincount(truth["z"], minlength=K).double()
    p = truth["confusion"]
    se = torch.sqrt(p * (1 - p) / n_k.view(1, K, 1)) + 1e-4
    err = (post.params["confusion"] - p).abs()
    assert bool((err < 6 * se).all()), float((err / se).max())
    prior_se = math.sqrt(0.25 / N)
    assert float((post.params["prior"] - truth["prior"]).abs().max()) < 6 * prior_se


def test_dawid_skene_beats_majority_vote_when_most_workers_are_spammers():
    # 9 workers, the last 5 answer from Dirichlet(1) rows: majority vote follows the spammers
    table, truth = simulate_annotations(600, WorkerPopulation(9, dominance=0.8, num_random=5), 3,
                                        seed=1)
    post = DawidSkene().fit(table, method="em", seed=0, progress=False)
    acc_ds = float((post.params["labels"] == truth["z"]).double().mean())
    acc_mv = float((majority_vote(table, seed=0) == truth["z"]).double().mean())
    # the standard error of a difference of two accuracies on 600 items is <= sqrt(0.5/600)
    assert acc_ds - acc_mv > 5 * math.sqrt(0.5 / 600), (acc_ds, acc_mv)


def test_one_worker_who_always_answers_the_truth_makes_q_one_hot():
    N, M, K, seed = 200, 5, 3, 3
    gen = torch.Generator().manual_seed(seed)
    z = torch.randint(0, K, (N,), generator=gen)
    confusion = random_confusions(M, K, dominance=0.6, seed=seed)
    confusion[0] = torch.eye(K, dtype=torch.float64)
    items, workers = who_labels(N, M, None, None, gen)
    table = emit_labels(z, confusion, items, workers, gen)
    model = DawidSkene()
    data = model.prepare(table)
    # the E-step with the perfect worker's confusion is exactly one-hot on its answers
    start = em.majority_start(data)
    start["confusion"][0] = torch.eye(K, dtype=torch.float64)
    q, _ = em.e_step(data, start)
    assert torch.equal(q, torch.nn.functional.one_hot(z, K).double())
    # and EM started there stays there: the worker stays perfect and q one-hot (to the floor)
    post = model.fit(table, method="em", init=start, seed=0, progress=False)
    q = post.params["probas"]
    assert torch.equal(q.argmax(-1), z)
    assert float(q.max(-1).values.min()) > 1 - 1e-6
    torch.testing.assert_close(post.params["confusion"][0], torch.eye(K, dtype=torch.float64),
                               rtol=0, atol=1e-8)


def test_an_exact_zero_never_recovers_without_the_floor():
    # Worker 0 errs 20% of the time, but EM starts from a confusion that says it never errs.
    N, M, K, seed = 400, 16, 2, 5
    table, truth = simulate_annotations(N, WorkerPopulation(M, dominance=0.8, concentration=50.0),
                                        K, seed=seed)
    data = DawidSkene().prepare(table)
    start = em.majority_start(data)
    start["confusion"][0] = torch.eye(K, dtype=torch.float64)
    fits = {}
    for floor in (0.0, 1e-10):
        model = DawidSkene(em_floor=floor)
        fits[floor] = model.fit(table, method="em", init=start, seed=0, progress=False,
                                max_iter=300)
    stuck = fits[0.0].params["confusion"][0]
    assert float(stuck[0, 1]) == 0.0 and float(stuck[1, 0]) == 0.0
    freed = fits[1e-10].params["confusion"][0]
    # with the floor the other 15 workers outvote the impossible start and the error rate
    # is re-estimated (standard error of a rate on ~200 items <= sqrt(0.25/150) = 0.041)
    true_error = truth["confusion"][0, 0, 1]
    assert abs(float(freed[0, 1] - true_error)) < 5 * math.sqrt(0.25 / 150)
    assert fits[1e-10].losses[-1] > fits[0.0].losses[-1]
