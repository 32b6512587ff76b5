"""The pairwise worker model's benchmark: ``--quick --only scdc.`` writes its two cases and
its checks pass (speed is not tested)."""

from __future__ import annotations

import json


def test_quick_run_writes_the_fit_and_step_cases(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("scdc.", timeout=300)
    assert proc.returncode == 0, proc.stderr
    records = {r["case"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"scdc.pairwise_fit", "scdc.pairwise_step"}
    fit = records["scdc.pairwise_fit"]
    assert fit["peers"] == {} and fit["params"]["N"] == 500
    assert fit["agreement"]["accuracy"]["passed"], fit["agreement"]
    assert fit["agreement"]["weights"]["passed"], fit["agreement"]
    assert records["scdc.pairwise_step"]["metric"] == "seconds_per_iter"
