"""The eq. 17 fit: block algebra, exact recovery, monotone sweeps, alignment, labels."""

import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from pyromodels.core.errors import ConvergenceWarning
from pyromodels.crowd.emissions import confusion_counts, normalize_rows
from pyromodels.crowd.moments.blocks import MomentDesign, moment_objective
from pyromodels.crowd.moments.fit import (
    MomentEstimate,
    align_classes,
    fit_moments,
    moment_labels,
    moment_posterior,
    solve_moments,
)
from pyromodels.crowd.moments.statistics import population_moments, sample_moments
from pyromodels.data import load_conll_ner_crowd
from pyromodels.data.simulate_crowd import WorkerPopulation, random_confusions, simulate_annotations
from pyromodels.testing import assert_monotone

NER = Path(__file__).resolve().parents[3].parent / "shared" / "data" / "conll2003_ner_crowd"


def _random_rows(gen, *shape):
    x = torch.rand(*shape, generator=gen, dtype=torch.float64)
    return x / x.sum(-1, keepdim=True)


def test_block_quadratics_reproduce_the_objective():
    # Along one worker's block (or the prior) the objective must equal
    # tr(C^T G C) - 2 tr(C^T H) + const: the difference is the same at every point.
    table, _ = simulate_annotations(80, WorkerPopulation(6, missing_rate=0.6), 3, seed=2)
    mom = sample_moments(table)
    design = MomentDesign.build(mom, min_overlap=5)  # some weights are 0
    assert 0 < float(design.w3.sum()) < len(design.w3)
    gen = torch.Generator().manual_seed(0)
    prior, conf = _random_rows(gen, 3), _random_rows(gen, 6, 3, 3)
    for a in range(6):
        inner, terms = design.worker_terms(a, conf, conf @ conf.transpose(1, 2))
        g, h = torch.outer(prior, prior) * inner, prior[:, None] * terms
        diffs = []
        for _ in range(3):
            trial = conf.clone()
            trial[a] = _random_rows(gen, 3, 3)
            quad = float((trial[a] * (g @ trial[a])).sum() - 2 * (trial[a] * h).sum())
            diffs.append(design.objective(prior, trial) - quad)
        assert max(diffs) - min(diffs) < 1e-12
    right, rhs = design.prior_block(conf, conf @ conf.transpose(1, 2))
    diffs = []
    for _ in range(3):
        p = _random_rows(gen, 3)
        diffs.append(design.objective(p, conf) - float(p @ right @ p - 2 * rhs @ p))
    assert max(diffs) - min(diffs) < 1e-12


def test_objective_is_zero_at_the_truth_for_exact_moments():
    conf = random_confusions(5, 3, seed=1)
    prior = torch.tensor([0.5, 0.3, 0.2])
    mom = population_moments(prior, conf)
    assert moment_objective(mom, prior, conf) < 1e-30
    assert moment_objective(mom, prior.flip(0), conf) > 1e-3


@pytest.mark.parametrize("k, m, seed, n_init", [(3, 5, 0, 1), (3, 5, 1, 1), (4, 6, 2, 2)])
def test_exact_moments_give_back_the_parameters(k, m, seed, n_init):
    # Population moments, random starts only: the fit must find the true prior and
    # confusion matrices (up to the one class permutation that As2 fixes).
    conf = random_confusions(m, k, force_dominant=True, seed=seed)
    prior = torch.linspace(1, 2, k) / torch.linspace(1, 2, k).sum()
    sol = solve_moments(population_moments(prior, conf), n_init=n_init, tol=1e-16, max_iter=400,
                        seed=seed)
    assert len(sol.start_objectives) == n_init
    assert sol.objective == min(sol.start_objectives) < 1e-13
    assert float((sol.confusion - conf).abs().max()) < 1e-6
    assert float((sol.prior - prior).abs().max()) < 1e-6
    assert_monotone(sol.history, "decrease", rtol=1e-13)


def test_alignment_undoes_a_class_permutation():
    conf = random_confusions(4, 4, force_dominant=True, seed=3)
    prior = torch.tensor([0.1, 0.2, 0.3, 0.4])
    perm = torch.tensor([2, 0, 3, 1])
    got_prior, got_conf = align_classes(prior[perm], conf[:, perm, :])
    torch.testing.assert_close(got_conf, conf, rtol=0, atol=0)
    torch.testing.assert_close(got_prior, prior, rtol=0, atol=0)
    # a start whose classes are permuted converges to the permuted optimum; As2 relabels it
    sol = solve_moments(population_moments(prior, conf), n_init=1,
                        init=(prior[perm], conf[:, perm, :]), max_iter=5)
    torch.testing.assert_close(sol.confusion, conf, rtol=0, atol=1e-10)


def test_sweeps_never_raise_the_objective_on_sparse_data():
    table, _ = simulate_annotations(400, WorkerPopulation(7, dominance=0.6, missing_rate=0.4), 3,
                                    seed=4)
    for seed in range(2):
        with warnings.catch_warnings():  # the budget is meant to run out
            warnings.simplefilter("ignore", ConvergenceWarning)
            sol = solve_moments(sample_moments(table), n_init=1, max_iter=40, tol=1e-15,
                                seed=seed)
        assert len(sol.history) == 41
        assert_monotone(sol.history, "decrease", rtol=1e-13)
        assert sol.history[-1] < sol.history[0]


def test_large_sample_recovers_the_confusion_matrices():
    # N = 20,000 items, M = 10, K = 4. Each confusion row is identified from about
    # N / K = 5,000 items; a frequency from 5,000 draws has standard deviation at most
    # sqrt(0.25 / 5000) = 0.007. Over 6 independent data sets the moment-matching error had
    # rms 0.005 per entry and never exceeded 0.023; the bound below is 7 such deviations.
    table, truth = simulate_annotations(20000, 10, 4, seed=101)
    est = fit_moments(table, n_init=2)
    err = (est.confusion - truth["confusion"]).abs()
    assert float(err.max()) < 0.05
    assert float(err.mean()) < 0.01
    assert float((est.prior - truth["prior"]).abs().max()) < 0.02
    assert est.converged
    assert_monotone(est.history, "decrease", rtol=1e-13)
    assert est.workers_used.tolist() == list(range(10))


def test_labels_follow_equation_18():
    table, _ = simulate_annotations(60, WorkerPopulation(4, missing_rate=0.3), 3, seed=6)
    gen = torch.Generator().manual_seed(1)
    conf = _random_rows(gen, 4, 3, 3)
    conf[0, 1] = torch.tensor([0.0, 0.2, 0.8])  # an exact zero: the floor keeps logs finite
    est = MomentEstimate(torch.tensor([0.2, 0.3, 0.5]), conf, 0.0, (), torch.arange(4))
    floor = 1e-6
    p = normalize_rows(est.prior, floor).numpy()
    c = normalize_rows(conf, floor).numpy()
    score = np.tile(np.log(p), (60, 1))
    for n, w, y in zip(table.item_idx.tolist(), table.worker_idx.tolist(),
                       table.label_idx.tolist()):
        score[n] += np.log(c[w, :, y])
    assert moment_labels(table, est, floor=floor).tolist() == score.argmax(1).tolist()
    post = np.exp(score - score.max(1, keepdims=True))
    np.testing.assert_allclose(moment_posterior(table, est).numpy(),
                               post / post.sum(1, keepdims=True), atol=1e-12)


def test_workers_left_out_get_one_m_step_against_the_posterior():
    table, truth = simulate_annotations(3000, WorkerPopulation(6, missing_rate=0.5), 3, seed=8)
    est = fit_moments(table, max_workers=4, n_init=1)
    used = est.workers_used.tolist()
    counts = table.counts_per_worker()
    assert sorted(used) == sorted(torch.argsort(-counts, stable=True)[:4].tolist())
    rest = [w for w in range(6) if w not in used]
    only_used = MomentEstimate(est.prior, est.confusion.clone(), 0.0, (), est.workers_used)
    # the posterior from the used workers alone: give the others uninformative rows
    only_used.confusion[rest] = 1.0 / 3
    q = moment_posterior(table, only_used)
    torch.testing.assert_close(est.confusion[rest],
                               normalize_rows(confusion_counts(table, q)[rest]), rtol=0,
                               atol=1e-12)


def _assert_on_simplex(rows, atol=1e-12):
    assert bool(torch.isfinite(rows).all())
    assert float(rows.min()) >= 0
    torch.testing.assert_close(rows.sum(-1), torch.ones(rows.shape[:-1], dtype=rows.dtype),
                               rtol=0, atol=atol)


def test_a_start_with_a_vanishing_class_fits_like_one_without_it():
    # A class whose prior is a rounding residue (the extrapolation projects points summing to
    # 1 - O(eps), which lifts an exact 0 to about 1e-32) gives that class's rows of every
    # confusion block a curvature of O(prior^2) against a gradient of O(prior): their steps
    # move them by O(1 / prior), which the projection once turned into an IndexError. The fit
    # must go on as from the exact zero (the prior block can revive the class either way).
    table, _ = simulate_annotations(600, 5, 3, seed=1)
    mom = sample_moments(table)
    conf = random_confusions(5, 3, force_dominant=True, seed=3)
    sols = [solve_moments(mom, n_init=1, init=(torch.tensor([0.5, 0.5 - t, t]), conf), tol=1e-12)
            for t in (0.0, 1e-32, 1e-100, 1e-160)]
    for sol in sols:
        _assert_on_simplex(sol.confusion)
        _assert_on_simplex(sol.prior)
        assert sol.converged
        assert_monotone(sol.history, "decrease", rtol=1e-13)
        # Each run stops once a sweep changes g / scale by less than 1e-12, which leaves it
        # within about 1e-11 of the optimal g and 5e-6 of the optimum (against a run at
        # tol 1e-15: 7e-12 and 4.2e-6); two runs differ by at most twice that.
        assert abs(sol.objective - sols[0].objective) <= 2e-11
        torch.testing.assert_close(sol.prior, sols[0].prior, rtol=0, atol=1e-5)
        torch.testing.assert_close(sol.confusion, sols[0].confusion, rtol=0, atol=1e-5)
    assert float(sols[0].prior.min()) > 0.25  # the class came back


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_the_ner_crowd_table_fits_at_a_tight_tolerance():
    # The whole CoNLL-2003 crowd table (79,901 tokens, K = 9, M = 47). From the majority start
    # at tol 1e-8 the sweeps once extrapolated to a prior with one class at 2.5e-32, and the
    # next confusion block crashed in the simplex projection.
    table = load_conll_ner_crowd(path=NER).sequences.data
    assert (table.num_classes, table.num_workers) == (9, 47)
    est = fit_moments(table, n_init=1, tol=1e-8)
    assert est.converged
    _assert_on_simplex(est.confusion)
    _assert_on_simplex(est.prior)
    assert_monotone(est.history, "decrease", rtol=1e-13)
