"""The Dask Dawid-Skene benchmarks: ``--quick --only dask.ds`` writes passing records (speed is
not tested)."""

from __future__ import annotations

import json

import pytest

QUICK_LABELS = {
    "dask.ds_em_fit[N=2000,M=100,K=5,L=12000,dtype=float64,engine=memory]",
    "dask.ds_em_fit[N=2000,M=100,K=5,L=12000,dtype=float64,engine=dask,workers=2,"
    "memory_limit=4GB]",
    "dask.ds_em_parquet[N=10000,M=100,K=5,L=60000,dtype=float64,workers=2,memory_limit=4GB]",
}


@pytest.fixture(scope="module")
def records(run_quick_benchmarks, tmp_path_factory):
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYROMODELS_BENCH_CACHE", str(tmp_path_factory.mktemp("bench-cache")))
        proc, out = run_quick_benchmarks("dask.ds", timeout=300)
    assert proc.returncode == 0, proc.stderr
    return {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_every_case_with_passing_checks(records):
    assert set(records) == QUICK_LABELS
    checks = [set(r["agreement"]) for r in records.values()]
    assert {"peak_memory"} in checks and {"worker_peak_memory"} in checks
    assert {"agrees_with_memory", "worker_peak_memory"} in checks
    for rec in records.values():
        for name, check in rec["agreement"].items():
            assert check["passed"] is True, (rec["label"], name)
        for who, t in rec["timing"].items():
            assert len(t["times_s"]) == t["repeats"] == 2, (rec["label"], who)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_worker_figures_are_recorded(records):
    for rec in records.values():
        worker = rec["agreement"].get("worker_peak_memory")
        if worker is not None:
            peaks = worker["worker_peak_rss_mib"]
            assert len(peaks) == 2 and all(p > 0 for p in peaks)
            assert worker["max_abs_diff"] == pytest.approx(max(peaks) * 2**20)
