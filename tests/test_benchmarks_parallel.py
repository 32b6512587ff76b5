"""The parallel-runs benchmark: ``--quick --only parallel.`` writes one record per fit whose
check says ``n_jobs=2`` gave the draws of ``n_jobs=1`` (speed is not tested)."""

from __future__ import annotations

import json

import pytest


@pytest.fixture(scope="module")
def records(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("parallel.", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in out.read_text().splitlines()]


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_times_both_fits_against_the_serial_run_with_identical_draws(records):
    assert sorted(r["params"]["fit"] for r in records) == ["bhmc", "mixture_gibbs"]
    for rec in records:
        assert rec["case"] == "parallel.chains" and rec["params"]["n_jobs"] == 2
        assert set(rec["peers"]) == {"n_jobs=1"} and rec["ours"] > 0
        check = rec["agreement"]["identical"]
        assert check["passed"] and check["max_abs_diff"] == 0.0 and check["tolerance"] == 0.0


def test_full_cases_are_the_brief_sizes(import_benchmarks):
    bench = import_benchmarks("bench_parallel_runs")[0]
    full = {c.params["fit"]: c.params for c in bench.cases(quick=False)}
    assert full["mixture_gibbs"]["chains"] == 4 and full["bhmc"]["chains"] == 8
