"""The InferenceData benchmark: a ``--quick`` run writes its records and its check passes
(speed is not tested)."""

from __future__ import annotations

import json

import pytest


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_both_cases_with_a_passing_check(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("core.", timeout=180)
    assert proc.returncode == 0, proc.stderr
    records = {r["case"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"core.inference_data_from_trace", "core.posterior_to_inference_data"}
    assert records["core.inference_data_from_trace"]["agreement"]["log_likelihood"]["passed"]
    assert all(r["ours"] > 0 for r in records.values())
