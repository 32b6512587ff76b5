"""The BHMC benchmark: ``--quick --only bhmc.`` writes passing records (speed is not tested);
the full run's cases are listed without running them; the fresh-process path runs once."""

from __future__ import annotations

import doctest
import json

import numpy as np
import pytest

WARM = ("bhmc.sweep[data=animals,N=33,D=7,L=3,K=20,sampler={s},start=warm,"
        "iterations_per_call=2]")
QUICK = {WARM.format(s="bhmc"), WARM.format(s="rbhmc,C=0.1")}


@pytest.fixture(scope="module")
def records(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("bhmc.", timeout=240)
    assert proc.returncode == 0, proc.stderr
    return {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.fixture
def bench(import_benchmarks):
    return import_benchmarks("bench_bhmc")[0]


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_the_warm_cases_with_passing_fast_path_checks(records):
    assert set(records) == QUICK
    for label, rec in records.items():
        assert rec["metric"] == "seconds_per_iter" and rec["peers"] == {}
        assert rec["ours"] > 0 and rec["timing"]["ours"]["repeats"] == 2
        expected = {"leaf_log_ratio", "margins"} if "rbhmc" in label else {"leaf_log_ratio"}
        assert set(rec["agreement"]) == expected
        assert all(check["passed"] for check in rec["agreement"].values()), rec["agreement"]
    assert records[WARM.format(s="rbhmc,C=0.1")]["agreement"]["margins"]["same_argmax"]


def test_full_cases_cover_the_paper_sets_and_the_n_scaling(bench):
    labels = [case.label for case in bench.cases(quick=False)]
    assert len(labels) == len(set(labels)) == 2 * (4 + 4 + 3 * 2)
    for n in (100, 1000, 10000):
        for sampler in ("sampler=bhmc", "sampler=rbhmc,C=0.01"):
            for start in ("start=warm", "start=cold"):
                assert any(f"data=synthetic,N={n}," in s and sampler in s and start in s
                           for s in labels), (n, sampler, start)
    assert sum("data=fashion100" in s and "start=cold" in s for s in labels) == 4


def test_docstring_examples(bench):
    result = doctest.testmod(bench, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_fresh_process_gives_the_same_first_sweep_as_this_process(bench):
    phases, fresh = bench.cold_sweep("synthetic", 30, "rbhmc", 0.1)
    np.testing.assert_array_equal(fresh, bench.first_sweep("synthetic", 30, "rbhmc", 0.1))
    assert set(phases) == {"import_s", "read_s", "init_s", "sweep_s", "read_to_sweep_s"}
    assert fresh.shape == (30, 4 + 1 + 1)  # L + 1 path columns and the labels
