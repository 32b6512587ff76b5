"""Baum-Welch: orientation, monotonicity, hmmlearn, M-step optimality, reductions, bad input."""

import numpy as np
import pytest
import torch
from hmmlearn.hmm import CategoricalHMM

from pyromodels.core import ConvergenceWarning
from pyromodels.crowd.emissions import confusion_counts, log_emissions, normalize_rows
from pyromodels.crowd.hmm import (
    SequentialDawidSkene,
    baum_welch_step,
    e_step,
    m_step,
    majority_vote_params,
    stationary_distribution,
)
from pyromodels.data import AnnotationTable, Sequences
from pyromodels.data.simulate_crowd import WorkerPopulation, simulate_sequential_annotations
from pyromodels.testing import assert_monotone

CYCLE = torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0], [1.0, 0.0, 0.0]], dtype=torch.float64)


def _perfect_workers_on_a_cycle(num_workers=2, lengths=(8, 5, 9)):
    seqs, truth = simulate_sequential_annotations(list(lengths), 1, 3, transition=CYCLE,
                                                  initial=[1 / 3] * 3, seed=0)
    n = seqs.total_length
    items = torch.arange(n).repeat_interleave(num_workers)
    workers = torch.arange(num_workers).repeat(n)
    table = AnnotationTable.from_arrays(items, workers, truth["z"][items], num_classes=3)
    return Sequences(table, seqs.lengths)


def _follows_the_cycle(transition):
    """The cycle test: each state's most likely successor is the next state of 0 -> 1 -> 2 -> 0."""
    return transition.argmax(-1).tolist() == [1, 2, 0]


def test_one_step_on_a_deterministic_cycle_recovers_it_and_the_printed_update_transposes_it():
    seqs = _perfect_workers_on_a_cycle()
    start = {"initial": torch.full((3,), 1 / 3, dtype=torch.float64),
             "transition": torch.full((3, 3), 1 / 3, dtype=torch.float64),
             "confusion": torch.eye(3, dtype=torch.float64).expand(2, 3, 3)}
    correct, _ = baum_welch_step(seqs.data, seqs.lengths, start)
    literal, _ = baum_welch_step(seqs.data, seqs.lengths, start, paper_literal=True)
    torch.testing.assert_close(correct["transition"], CYCLE, rtol=0, atol=1e-12)
    torch.testing.assert_close(literal["transition"], CYCLE.T, rtol=0, atol=1e-12)
    assert _follows_the_cycle(correct["transition"])
    assert not _follows_the_cycle(literal["transition"])


def test_em_from_majority_vote_recovers_a_noisy_cycle_and_the_literal_update_does_not():
    sticky_cycle = 0.85 * CYCLE + 0.05
    seqs, truth = simulate_sequential_annotations([30] * 15, WorkerPopulation(5, dominance=0.7), 3,
                                                  transition=sticky_cycle, seed=1)
    fit = SequentialDawidSkene().fit(seqs, method="em", seed=0, progress=False, max_iter=300)
    est = fit.params["transition"]
    assert _follows_the_cycle(est)
    assert float((est - sticky_cycle).abs().sum()) < 0.5 * float((est - sticky_cycle.T).abs().sum())
    with pytest.warns(ConvergenceWarning):  # its "likelihood" is not monotone: it is not EM
        literal = SequentialDawidSkene(paper_literal=True).fit(
            seqs, method="em", seed=0, progress=False, max_iter=50)
    assert not _follows_the_cycle(literal.params["transition"])


@pytest.mark.parametrize("initial", ["learned", "fixed"])
@pytest.mark.parametrize("seed", [2, 3])
def test_log_likelihood_never_decreases(initial, seed):
    seqs, _ = simulate_sequential_annotations([20] * 8 + [3, 1],
                                              WorkerPopulation(4, dominance=0.55, missing_rate=0.3),
                                              3, stickiness=0.4, seed=seed)
    fit = SequentialDawidSkene(initial=initial).fit(seqs, method="em", seed=seed, progress=False,
                                                    max_iter=150, tol=1e-12, warn_not_converged=False)
    assert len(fit.losses) > 10
    assert_monotone(fit.losses, rtol=1e-12)
    # the recorded objective is the log-likelihood plus the (constant) Dirichlet(1) log density
    model = SequentialDawidSkene(initial=initial)
    ll = model.log_likelihood(seqs, fit.params).sum() + model.log_prior(seqs, fit.params)
    assert float(ll) == pytest.approx(float(fit.losses[-1]), abs=1e-9)


def test_one_step_agrees_with_hmmlearn():
    lengths = [40, 1, 25, 60]
    seqs, truth = simulate_sequential_annotations(lengths, WorkerPopulation(1, dominance=0.6), 3,
                                                  stickiness=0.5, seed=4)
    g = torch.Generator().manual_seed(4)
    start = {"initial": torch.softmax(torch.randn(3, generator=g, dtype=torch.float64), -1),
             "transition": torch.softmax(torch.randn(3, 3, generator=g, dtype=torch.float64), -1),
             "confusion": torch.softmax(torch.randn(1, 3, 3, generator=g, dtype=torch.float64), -1)}
    new, ll = baum_welch_step(seqs.data, seqs.lengths, start, initial="learned")
    peer = CategoricalHMM(n_components=3, n_features=3, n_iter=1, tol=0.0, init_params="", params="ste")
    peer.startprob_ = start["initial"].numpy()
    peer.transmat_ = start["transition"].numpy()
    peer.emissionprob_ = start["confusion"][0].numpy()
    x = seqs.values().numpy()
    assert abs(float(ll) - peer.score(x, lengths)) < 1e-10
    peer.fit(x, lengths)
    np.testing.assert_allclose(new["transition"].numpy(), peer.transmat_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(new["confusion"][0].numpy(), peer.emissionprob_, rtol=0, atol=1e-10)
    np.testing.assert_allclose(new["initial"].numpy(), peer.startprob_, rtol=0, atol=1e-10)


def test_closed_form_transition_update_maximises_the_expected_log_likelihood():
    seqs, truth = simulate_sequential_annotations([15, 9], 3, 3, stickiness=0.3, seed=5)
    params = {k: truth[k] for k in ("initial", "transition", "confusion")}
    fb = e_step(seqs.data, seqs.lengths, params)
    xi = fb.pairwise.sum(0)
    closed = m_step(seqs.data, seqs.lengths, fb.posterior, xi)["transition"]
    # numeric argmax of sum_ij xi_ij log A_ij over row-stochastic A = softmax(W)
    w = torch.zeros(3, 3, dtype=torch.float64, requires_grad=True)
    opt = torch.optim.LBFGS([w], lr=1, max_iter=500, tolerance_grad=1e-14, tolerance_change=1e-16)

    def objective():
        opt.zero_grad()
        loss = -(xi * torch.log_softmax(w, -1)).sum()
        loss.backward()
        return loss

    opt.step(objective)
    torch.testing.assert_close(closed, torch.softmax(w.detach(), -1), rtol=0, atol=1e-6)


def test_independent_labels_reduce_to_dawid_skene():
    # transition rows all equal to the class prior and initial = prior: the labels are i.i.d.
    seqs, truth = simulate_sequential_annotations([7, 4, 9], WorkerPopulation(4, missing_rate=0.3),
                                                  3, seed=6)
    prior = torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64)
    params = {"initial": prior, "transition": prior.expand(3, 3).clone(), "confusion": truth["confusion"]}
    fb = e_step(seqs.data, seqs.lengths, params)
    logits = prior.log() + log_emissions(seqs.data, truth["confusion"].log())
    q_ds = torch.softmax(logits, -1)
    torch.testing.assert_close(fb.posterior, q_ds, rtol=0, atol=1e-12)
    torch.testing.assert_close(fb.total_log_likelihood, torch.logsumexp(logits, -1).sum(), rtol=0, atol=1e-10)
    new, _ = baum_welch_step(seqs.data, seqs.lengths, params)
    ds_confusion = normalize_rows(confusion_counts(seqs.data, q_ds))
    torch.testing.assert_close(new["confusion"], ds_confusion, rtol=0, atol=1e-12)


def test_initial_state_options():
    seqs, truth = simulate_sequential_annotations([6, 8, 5], 3, 3, stickiness=0.2, seed=7)
    params = {k: truth[k] for k in ("initial", "transition", "confusion")}
    fixed = torch.tensor([0.6, 0.3, 0.1], dtype=torch.float64)
    new, _ = baum_welch_step(seqs.data, seqs.lengths, params, initial="fixed", initial_probs=fixed)
    assert torch.equal(new["initial"], fixed)
    new, _ = baum_welch_step(seqs.data, seqs.lengths, params, initial="stationary")
    torch.testing.assert_close(new["initial"] @ new["transition"], new["initial"], rtol=0, atol=1e-12)
    new, _ = baum_welch_step(seqs.data, seqs.lengths, params, initial="learned")
    q = e_step(seqs.data, seqs.lengths, params).posterior
    torch.testing.assert_close(new["initial"], q[[0, 6, 14]].mean(0), rtol=0, atol=1e-12)


def test_majority_vote_start_counts_by_hand():
    answers = torch.tensor([[0, 0, 1, 1, 0], [0, 1, 1, 1, 0], [0, 0, 1, 0, 0]])  # (worker, item)
    workers, items = torch.meshgrid(torch.arange(3), torch.arange(5), indexing="ij")
    table = AnnotationTable.from_arrays(items.flatten(), workers.flatten(), answers.flatten())
    start = majority_vote_params(table, torch.tensor([3, 2]))  # majority labels 0 0 1 | 1 0
    t = torch.float64
    torch.testing.assert_close(start["transition"], torch.tensor([[0.5, 0.5], [1.0, 0.0]], dtype=t))
    torch.testing.assert_close(start["initial"], torch.tensor([0.5, 0.5], dtype=t))
    expected = torch.tensor([[[1, 0], [0, 1]], [[2 / 3, 1 / 3], [0, 1]], [[1, 0], [0.5, 0.5]]], dtype=t)
    torch.testing.assert_close(start["confusion"], expected)


def test_stationary_distribution_of_a_reducible_chain_is_an_error():
    torch.testing.assert_close(stationary_distribution(CYCLE), torch.full((3,), 1 / 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="no unique stationary distribution"):
        stationary_distribution(torch.eye(3, dtype=torch.float64))


def test_bad_input_is_named():
    seqs, truth = simulate_sequential_annotations([5, 5], 2, 2, seed=8)
    good = {k: truth[k] for k in ("initial", "transition", "confusion")}
    one_class = AnnotationTable.from_arrays(torch.arange(4), torch.zeros(4, dtype=torch.long),
                                            torch.zeros(4, dtype=torch.long), num_classes=1)
    with pytest.raises(ValueError, match="at least 2 classes"):
        SequentialDawidSkene().prepare(Sequences(one_class, [2, 2]))
    with pytest.raises(ValueError, match="lengths must sum to the number of positions 10"):
        e_step(seqs.data, torch.tensor([5, 4]), good)
    nan_start = {**good, "confusion": good["confusion"].clone()}
    nan_start["confusion"][0, 0, 0] = float("nan")
    with pytest.raises(ValueError, match=r"params\['confusion'\] must be finite"):
        SequentialDawidSkene().fit(seqs, method="em", init=nan_start, progress=False)
    with pytest.raises(ValueError, match=r"start\['transition'\] must have rows summing to 1"):
        SequentialDawidSkene().start_from(seqs, confusion=good["confusion"],
                                          transition=good["transition"] * 2)
    with pytest.raises(ValueError, match=r"params\['initial'\] must have shape \(2,\)"):
        e_step(seqs.data, seqs.lengths, {**good, "initial": torch.ones(3) / 3})
    with pytest.raises(ValueError, match="transition_concentration must be >= 1 for EM"):
        SequentialDawidSkene(transition_concentration=0.5).fit(seqs, method="em", progress=False)
    with pytest.raises(ValueError, match="initial_probs is used only with initial='fixed'"):
        SequentialDawidSkene(initial_probs=[0.5, 0.5])
    with pytest.raises(ValueError, match="initial must be one of"):
        SequentialDawidSkene(initial="uniform")
    with pytest.raises(ValueError, match="paper_literal=True cannot be combined"):
        SequentialDawidSkene(initial="stationary", paper_literal=True)
    with pytest.raises(TypeError, match="data must be a pyromodels.data.Sequences"):
        SequentialDawidSkene().prepare(seqs.data)
    with pytest.raises(ValueError, match="initial_probs must have 2 entries|initial_probs must have shape"):
        SequentialDawidSkene(initial="fixed", initial_probs=[0.2, 0.3, 0.5]).prepare(seqs)
