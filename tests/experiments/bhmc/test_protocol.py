"""The protocols' bookkeeping with stand-in samplers whose trees are known."""

import math
import warnings

import pytest
import torch

from pyromodels.bnp import sample_ncrp_paths
from pyromodels.experiments.bhmc.data import planted_hierarchy
from pyromodels.experiments.bhmc.paper_numbers import HYPERPARAMETERS
from pyromodels.experiments.bhmc.protocol import (
    ChainOutput,
    run_convergence,
    run_f_measure,
    run_seed,
    run_sensitivity,
    score_tree,
    summarise_sensitivity,
)
from pyromodels.experiments.bhmc.settings import ProtocolRun, grid, protocol_settings
from pyromodels.metrics import aid, aod

DATA = planted_hierarchy(n_per_leaf=4, seed=3)
HYPER = HYPERPARAMETERS["animals"]
SINGLE = torch.tensor([[0, 1, 2]] * DATA.x.shape[0])


class Recorder:
    """RBHMC returns the true tree; BHMC returns a prior draw of the nested CRP, seeded by the
    request, and a single path for seeds it is told to."""

    def __init__(self, single_for=()):
        self.requests = []
        self.single_for = set(single_for)

    def __call__(self, request):
        self.requests.append(request)
        n = request.data.x.shape[0]
        if request.seed in self.single_for:
            paths = SINGLE
        elif request.C is None:
            paths = sample_ncrp_paths(n, 2, 1.0, torch.Generator().manual_seed(request.seed))
        else:
            paths = request.data.true_paths
        trace = torch.arange(request.burn_in + request.draws, dtype=torch.float64)
        return ChainOutput(paths, cdl=trace, rcdl=trace - (request.C or 0.0))


def test_run_seeds_are_distinct_and_reproducible():
    seeds = {run_seed(0, i, r) for i in range(5) for r in range(50)}
    assert len(seeds) == 250 and all(0 <= s < 2**63 for s in seeds)
    assert run_seed(7, 1, 2) == run_seed(7, 1, 2) != run_seed(8, 1, 2)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        run_seed(-1)


def test_score_tree_values_and_single_path():
    scores = score_tree(DATA, DATA.true_paths)
    assert scores["aid"] == aid(DATA.x, DATA.true_paths)
    assert scores["aod"] == aod(DATA.x, DATA.true_paths)
    assert scores["f_level_2"] == 1.0 and scores["f_true_1"] == scores["f_true_2"] == 1.0
    assert scores["leaves"] == 6 and not scores["single_path"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        single = score_tree(DATA, SINGLE)
    assert single["single_path"] and math.isnan(single["aod"]) and math.isnan(single["aid"])


def test_sensitivity_rows_summary_and_dropped_runs():
    run = ProtocolRun("sensitivity", grid((0.01, 1.0), (1.0, 2.0)), 1, 3, 0, 5, "last", False)
    single_seed = run_seed(0, 2, 1)  # setting 2 = (0.01, 2.0), repeat 1
    sampler = Recorder(single_for={single_seed})
    frame = run_sensitivity(DATA, HYPER, sampler, run, seed=0)
    assert len(frame) == 5 * 3 and frame.seed.nunique() == 15
    assert [(r.C, r.eps0) for r in sampler.requests[3::3]] == list(run.settings)
    assert all(r.selection == "last" and r.draws == 5 for r in sampler.requests)
    summary = summarise_sensitivity(frame)
    assert summary.method.tolist() == ["BHMC"] + ["RBHMC"] * 4
    assert summary.runs.tolist() == [3, 3, 2, 3, 3] and summary.dropped.tolist() == [0, 0, 1, 0, 0]
    # Every RBHMC run returns the truth: its AID and AOD are the truth's, which beats the
    # nested-CRP prior draws of the BHMC stand-in on both counts.
    truth = score_tree(DATA, DATA.true_paths)
    assert summary.aid[1:].tolist() == pytest.approx([truth["aid"]] * 4)
    assert summary.better_than_bhmc.tolist() == [False, True, True, True, True]


def test_f_measure_rows():
    run = protocol_settings("planted", "f_measure", "smoke")
    sampler = Recorder()
    frame = run_f_measure(DATA, HYPER, sampler, run, seed=1)
    assert len(frame) == (1 + len(run.settings)) * run.chains * 2
    assert set(frame.level) == {1, 2}
    rb = frame[frame.method == "RBHMC"]
    assert rb.f_true.tolist() == [1.0] * len(rb)
    assert rb[rb.level == 1].f_measure.tolist() == pytest.approx([0.5] * run.chains)
    assert all(r.selection == "best" and r.burn_in == run.burn_in for r in sampler.requests)


def test_convergence_traces_and_bad_samplers():
    run = protocol_settings("planted", "convergence", "smoke")
    frame = run_convergence(DATA, HYPER, Recorder(), run, seed=0)
    assert len(frame) == len(run.settings) * run.chains * (run.burn_in + run.draws)
    assert (frame.cdl - frame.rcdl == frame.C).all()
    with pytest.raises(ValueError, match="sampler must return cdl and rcdl traces"):
        run_convergence(DATA, HYPER, lambda r: ChainOutput(DATA.true_paths), run)
    with pytest.raises(ValueError, match=r"traces of lengths 6 \(cdl\) and 5 \(rcdl\)"):
        run_convergence(DATA, HYPER, lambda r: ChainOutput(DATA.true_paths, torch.zeros(6),
                                                           torch.zeros(5)), run)
    with pytest.raises(TypeError, match="sampler must return a ChainOutput, got Tensor"):
        run_f_measure(DATA, HYPER, lambda r: DATA.true_paths, run)
