"""The partial_fit benchmark: ``--quick --only ds.partial_fit`` writes a passing record (speed
is not tested), and its split holds new workers, new tasks and more labels for old tasks."""

from __future__ import annotations

import json

import pytest

LABEL = "ds.partial_fit[N=2000,M=40,K=5,L=12000,new_labels=378]"


@pytest.fixture(scope="module")
def records(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("ds.partial_fit", timeout=240)
    assert proc.returncode == 0, proc.stderr
    return {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}


def test_quick_run_writes_the_case_with_its_refit_peer_and_passing_check(records):
    assert set(records) == {LABEL}
    rec = records[LABEL]
    assert set(rec["peers"]) == {"refit"} and rec["ratio"]["refit"] > 0
    check = rec["agreement"]["accuracy"]
    assert check["passed"] is True and 0 <= check["max_abs_diff"] <= check["tolerance"]
    assert 0.9 <= check["label_agreement"] <= 1
    assert 1 <= check["n_iter_update"] and 1 <= check["n_iter_refit"]


def test_the_split_brings_new_workers_new_tasks_and_labels_for_old_tasks(import_benchmarks):
    (bench,) = import_benchmarks("bench_ds_partial_fit")
    frame, old, new, truth = bench._data(*bench.QUICK)
    assert len(old) + len(new) == len(frame) and len(new) == 378
    assert set(new["worker"]) - set(old["worker"])  # workers the fit never saw
    assert set(new["task"]) - set(old["task"])  # tasks the fit never saw
    assert set(new["task"]) & set(old["task"])  # more labels for fitted tasks
    # at the full size the new rows are 1% of the labels exactly
    big, _ = bench.simulate_label_frame(20_000, 2_400, 5, labels_per_task=6, seed=0)
    _, more = bench.split_new(big, 20_000, 2_400, seed=0)
    assert len(more) == 1_200
