"""The partial_fit benchmark: ``--quick --only ds.partial_fit`` writes a passing record (speed
is not tested), and its split holds new workers, new tasks and more labels for old tasks."""

from __future__ import annotations

import json

import pytest

LABELS = {f"ds.partial_fit[N=2000,M=40,K=5,L=12000,new_labels=378,ids={ids}]"
          for ids in ("int", "str")}


@pytest.fixture(scope="module")
def records(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("ds.partial_fit", timeout=240)
    assert proc.returncode == 0, proc.stderr
    return {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_the_cases_with_their_refit_peer_and_passing_checks(records):
    assert set(records) == LABELS
    for rec in records.values():
        assert set(rec["peers"]) == {"refit"} and rec["ratio"]["refit"] > 0
        check = rec["agreement"]["accuracy"]
        assert check["passed"] is True and 0 <= check["max_abs_diff"] <= check["tolerance"]
        assert 0.9 <= check["label_agreement"] <= 1
        assert 1 <= check["n_iter_update"] and 1 <= check["n_iter_refit"]
    # the same rows with string ids: the same fits
    by_ids = {rec["params"]["ids"]: rec["agreement"]["accuracy"] for rec in records.values()}
    for key in ("max_abs_diff", "label_agreement", "n_iter_update", "n_iter_refit"):
        assert by_ids["int"][key] == by_ids["str"][key], key


def test_the_split_brings_new_workers_new_tasks_and_labels_for_old_tasks(import_benchmarks):
    (bench,) = import_benchmarks("bench_ds_partial_fit")
    frame, old, new, truth = bench._data(*bench.QUICK)
    strings = bench._data(*bench.QUICK, "str")[2]
    assert strings["task"].str.startswith("t").all() and len(strings) == len(new)
    assert len(old) + len(new) == len(frame) and len(new) == 378
    assert set(new["worker"]) - set(old["worker"])  # workers the fit never saw
    assert set(new["task"]) - set(old["task"])  # tasks the fit never saw
    assert set(new["task"]) & set(old["task"])  # more labels for fitted tasks
    # at the full size the new rows are 1% of the labels exactly
    big, _ = bench.simulate_label_frame(20_000, 2_400, 5, labels_per_task=6, seed=0)
    _, more = bench.split_new(big, 20_000, 2_400, seed=0)
    assert len(more) == 1_200
