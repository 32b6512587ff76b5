"""The reproduction's method runners and synthetic scoring, against brute force and EM theory."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.crowd.ds.em import log_marginal
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.crowd.emissions import normalize_rows
from pyromodels.crowd.hmm import SequentialDawidSkene
from pyromodels.data import WorkerPopulation, simulate_networked_annotations, simulate_sequential_annotations
from pyromodels.experiments.crowd.synthetic import (
    SyntheticSettings,
    class_permutation,
    networked_study,
    parameter_errors,
    sequential_study,
    simulate_sequential,
    summarize,
)
from pyromodels.experiments.crowd.tables import (
    Estimate,
    MethodSettings,
    networked_estimates,
    sequential_estimates,
)

FAST = MethodSettings(mm_max_iter=50, em_max_iter=50, mrf_max_iter=10)


def _brute_force_paths(sequences, truth):
    """argmax over all K^T label paths of log p(path, labels) for each sequence."""
    table, k = sequences.data, sequences.data.num_classes
    dense = table.to_dense(fill=-1).numpy()
    conf = truth["confusion"].numpy()
    init, trans = truth["initial"].numpy(), truth["transition"].numpy()
    out, start = [], 0
    for length in sequences.lengths.tolist():
        rows = dense[start:start + length]
        best, best_path = -np.inf, None
        for path in itertools.product(range(k), repeat=length):
            lp = np.log(init[path[0]]) + sum(np.log(trans[a, b]) for a, b in zip(path, path[1:]))
            for t, y in enumerate(path):
                lp += sum(np.log(conf[m, y, j]) for m, j in enumerate(rows[t]) if j >= 0)
            if lp > best:
                best, best_path = lp, path
        out += list(best_path)
        start += length
    return np.array(out)


def test_oracle_is_the_brute_force_map_path():
    seqs, truth = simulate_sequential_annotations([4, 5, 3], WorkerPopulation(3, missing_rate=0.3),
                                                  3, seed=4)
    est = sequential_estimates(seqs, ("oracle",), FAST, truth=truth)["oracle"]
    np.testing.assert_array_equal(est.labels.numpy(), _brute_force_paths(seqs, truth))


@pytest.fixture(scope="module")
def sequential_fit():
    old = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        seqs, truth = simulate_sequential_annotations([40] * 15,
                                                      WorkerPopulation(6, force_dominant=True), 3,
                                                      stickiness=0.3, seed=1)
        est = sequential_estimates(seqs, ("mv", "mm", "ds", "alg2", "alg2_alg1", "mv_alg1"),
                                   MethodSettings(em_max_iter=300, em_tol=1e-10), seed=0)
    finally:
        torch.set_default_dtype(old)
    return seqs, truth, est


def test_ds_ends_at_least_as_likely_as_its_moment_start(sequential_fit):
    # EM never decreases the likelihood (up to its 1e-10 pseudo-counts), so DS ends at least
    # as likely as the floored moment estimate it starts from.
    seqs, _, est = sequential_fit
    data = DawidSkene(allow_unlabelled=True).prepare(seqs.data)
    start = {"prior": normalize_rows(est["mm"].prior, 1e-6),
             "confusion": normalize_rows(est["mm"].confusion, 1e-6)}
    fitted = {"prior": est["ds"].prior, "confusion": est["ds"].confusion}
    assert float(log_marginal(data, fitted)) >= float(log_marginal(data, start)) - 1e-6
    assert float(log_marginal(data, fitted)) > float(log_marginal(data, start)) + 1.0


def test_baum_welch_ends_at_least_as_likely_as_alg2(sequential_fit):
    # Baum-Welch is EM for the HMM, so Alg. 2 + Alg. 1 ends at least as likely as the
    # floored Alg. 2 estimate it starts from (the 1e-8 pseudo-counts shift the objective by
    # far less than the tolerance).
    seqs, _, est = sequential_fit
    hmm = SequentialDawidSkene()
    start = hmm.start_from(seqs, confusion=normalize_rows(est["alg2"].confusion, 1e-6),
                           transition=normalize_rows(est["alg2"].transition, 1e-6),
                           initial=normalize_rows(est["alg2"].prior, 1e-6))
    end = {"initial": est["alg2_alg1"].prior, "confusion": est["alg2_alg1"].confusion,
           "transition": est["alg2_alg1"].transition}
    assert float(hmm.log_likelihood(seqs, end).sum()) >= float(
        hmm.log_likelihood(seqs, start).sum()) - 1e-6
    # and the fit is an EM fixed point: a further Baum-Welch step barely moves it
    again = hmm.fit(seqs, method="em", init=end, max_iter=1, progress=False,
                    warn_not_converged=False).params
    assert torch.allclose(again["confusion"], end["confusion"], atol=1e-4)
    assert torch.allclose(again["transition"], end["transition"], atol=1e-4)


def test_methods_beat_chance_and_time_themselves(sequential_fit):
    seqs, truth, est = sequential_fit
    z = truth["z"]
    for method, e in est.items():
        # chance accuracy is at most the largest class share; 3 binomial sds above it
        share = float(torch.bincount(z).max()) / len(z)
        margin = 3 * math.sqrt(share * (1 - share) / len(z))
        assert float((e.labels == z).double().mean()) > share + margin, method
        assert e.seconds >= 0
    assert est["ds"].seconds >= est["mm"].seconds  # DS counts the moment fit it starts from
    assert est["mv"].confusion is None and est["alg2"].transition.shape == (3, 3)


def test_edgeless_graph_makes_alg4_the_equal_prior_dawid_skene():
    # Without edges the mode-field E-step is the Dawid-Skene E-step with a uniform prior, so
    # Alg. 4 converges to the fixed point of equal-prior DS EM from the same start.
    table, graph, truth = simulate_networked_annotations(300,
                                                         WorkerPopulation(5, force_dominant=True),
                                                         3, mean_degree=0.0, seed=2)
    est = networked_estimates(table, graph, ("mm", "alg4"),
                              MethodSettings(mrf_max_iter=400, em_tol=1e-12), seed=0)
    post = DawidSkene(update_prior=False).fit(
        table, method="em", init={"confusion": normalize_rows(est["mm"].confusion, 1e-6)},
        max_iter=400, tol=1e-12, progress=False, warn_not_converged=False)
    assert torch.allclose(est["alg4"].confusion, post.params["confusion"], atol=1e-4)
    assert torch.equal(est["alg4"].labels, post.params["labels"])


def test_class_permutation_matches_brute_force():
    rng = np.random.default_rng(0)
    truth = rng.integers(0, 4, 200)
    labels = np.where(rng.random(200) < 0.7, np.array([2, 0, 3, 1])[truth], rng.integers(0, 4, 200))
    perm = class_permutation(truth, labels, 4)
    best = max(itertools.permutations(range(4)),
               key=lambda p: sum(int(np.sum((truth == k) & (labels == p[k]))) for k in range(4)))
    assert perm.tolist() == list(best)
    # a class the estimate never uses fills the unmatched true class
    assert class_permutation([0, 1, 2, 2], [1, 1, 0, 0], 3).tolist() == [1, 2, 0]


def test_relabelled_truth_has_zero_errors_and_errors_use_the_induced_norm():
    seqs, truth = simulate_sequential_annotations([10] * 3, 4, 3, seed=5)
    p = torch.tensor([2, 0, 1])  # estimate's class p[k] is true class k
    inv = torch.argsort(p)
    est = Estimate(p[truth["z"]], truth["confusion"][:, inv][:, :, inv],
                   truth["transition"][inv][:, inv])
    perm = class_permutation(truth["z"].numpy(), est.labels.numpy(), 3)
    assert perm.tolist() == p.tolist()
    errors = parameter_errors(truth, est, perm)
    assert errors == {"confusion_error": 0.0, "transition_error": 0.0}
    other = Estimate(truth["z"], torch.full((4, 3, 3), 1 / 3), torch.full((3, 3), 1 / 3))
    errors = parameter_errors(truth, other, torch.arange(3))
    gamma = truth["confusion"].transpose(-1, -2).numpy()  # the paper's column orientation
    assert errors["confusion_error"] == pytest.approx(
        np.mean([np.linalg.norm(g - 1 / 3, 1) for g in gamma]))
    assert errors["transition_error"] == pytest.approx(
        np.linalg.norm(truth["transition"].T.numpy() - 1 / 3, 1))


def test_summarize_is_mean_and_sample_sd():
    frame = pd.DataFrame({"x": [1, 1, 1, 2], "run": [0, 1, 2, 0], "method": ["a"] * 4,
                          "f_score": [0.5, 0.7, 0.9, 0.4], "confusion_error": [0.1, 0.3, 0.2, 0.5],
                          "transition_error": [np.nan] * 4, "seconds": [1.0] * 4})
    out = summarize(frame)
    assert out.loc[(1, "a"), ("f_score", "mean")] == pytest.approx(0.7)
    assert out.loc[(1, "a"), ("f_score", "sd")] == pytest.approx(np.std([0.5, 0.7, 0.9], ddof=1))
    assert out.loc[(2, "a"), ("confusion_error", "sd")] == 0.0  # one run
    assert np.isnan(out.loc[(1, "a"), ("transition_error", "sd")])


TINY = SyntheticSettings(runs=1, sizes=(400,), worker_counts=(5,), size_for_workers=200,
                         networked_sizes=(300,), methods=FAST)


def test_tiny_sequential_study_oracle_leads_and_all_beat_chance():
    frame = sequential_study(TINY, vary="N", seed=0)
    f = frame.set_index("method")["f_score"]
    assert set(f.index) == {"single_best", "mv", "mm", "alg2", "alg2_alg1", "mv_alg1", "oracle"}
    n = 400
    # the oracle decodes with the true parameters; an estimate can trail or beat it only by
    # sampling noise of the F-score on n items (3 binomial sds of a difference)
    assert f["oracle"] >= f["alg2_alg1"] - 3 * math.sqrt(2 * 0.25 / n)
    # K = 4 classes: random labels score about 0.25
    assert (f > 0.25 + 3 * math.sqrt(0.25 / n)).all()
    assert frame.loc[frame["method"] == "mv", "confusion_error"].isna().all()
    by_m = sequential_study(TINY, vary="M", seed=0)
    assert set(by_m["x"]) == {5}


def test_tiny_networked_study_and_bad_arguments():
    frame = networked_study(TINY, mean_degree=5.0, seed=0)
    f = frame.set_index("method")["f_score"]
    assert (f > 0.25 + 3 * math.sqrt(0.25 / 300)).all()
    assert frame["transition_error"].isna().all()
    with pytest.raises(ValueError, match="n must be a multiple of the sequence length 40"):
        simulate_sequential(100, 5, TINY, seed=0)
    with pytest.raises(ValueError, match="sizes must be multiples of the sequence length 40"):
        SyntheticSettings(sizes=(200, 500))
    with pytest.raises(ValueError, match="vary must be one of"):
        sequential_study(TINY, vary="K")
    with pytest.raises(ValueError, match="methods must be one of"):
        sequential_estimates(None, ("viterbi",))
    with pytest.raises(TypeError, match="methods must be a sequence of names"):
        networked_estimates(None, None, "mv")
    with pytest.raises(ValueError, match="'oracle' needs truth"):
        sequential_estimates(None, ("oracle",))
