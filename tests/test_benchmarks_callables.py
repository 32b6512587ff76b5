"""The plain-callable benchmark: ``--quick --only callables.`` writes its two cases, each
with the model-subclass peer and draws equal to it (speed is not tested)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_both_cases_with_equal_draws(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("callables.", timeout=240)
    assert proc.returncode == 0, proc.stderr
    records = {r["case"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"callables.nuts_step", "callables.gibbs_sweep"}
    for rec in records.values():
        assert rec["metric"] == "seconds_per_iter" and set(rec["peers"]) == {"model_subclass"}
        assert rec["agreement"]["same_draws"]["passed"], rec["agreement"]
        assert rec["agreement"]["same_draws"]["max_abs_diff"] == 0.0
