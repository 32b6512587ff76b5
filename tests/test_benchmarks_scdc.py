"""The semi-crowdsourced family's benchmarks: a ``--quick`` run of the pairwise worker model
writes its two cases with passing checks, and the SCDC epoch a consistent record, its
fresh-process path giving the clusters of the same fit in this process (speed is not tested)."""

from __future__ import annotations

import json

LABEL = ("scdc.epoch[N=500,D=784,K=50,d=8,hidden=500-500,batch_size=128,hits=5,workers=5,"
         "start=warm]")


def test_quick_scdc_run_writes_the_warm_epoch(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("scdc.epoch", timeout=240)
    assert proc.returncode == 0, proc.stderr
    records = {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {LABEL}
    rec = records[LABEL]
    assert rec["metric"] == "seconds" and rec["peers"] == {}
    check = rec["agreement"]["labels"]
    assert check["passed"] is True
    assert 0.0 <= check["acc_digits"] <= 1.0 and 0.0 <= check["nmi_digits"] <= 1.0
    assert len(rec["timing"]["ours"]["times_s"]) == 2


def test_the_links_follow_the_papers_hit_shape(import_benchmarks):
    (bench,) = import_benchmarks("bench_scdc")
    o, pairs, digits = bench.mnist_links(True)
    assert tuple(o.shape) == (500, 784) and set(o.unique().tolist()) <= {0.0, 1.0}
    assert pairs.num_pairs == 5 * 630 and pairs.num_workers == 5


def test_a_fresh_scdc_process_gives_the_in_process_fit(import_benchmarks, monkeypatch):
    (bench,) = import_benchmarks("bench_scdc")
    monkeypatch.setattr(bench, "COLD_PHASE_RUNS", 1)
    rec = bench._cold_check(True)()["cold_labels"]
    assert rec["passed"] is True
    assert set(rec["phases"]) == {"import_s", "read_s", "fit_s", "read_to_labels_s"}
    assert [c.params["start"] for c in bench.cases(False)] == ["warm", "cold"]
    assert [c.params["start"] for c in bench.cases(True)] == ["warm"]

def test_quick_run_writes_the_fit_and_step_cases(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("scdc.pairwise", timeout=300)
    assert proc.returncode == 0, proc.stderr
    records = {r["case"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {"scdc.pairwise_fit", "scdc.pairwise_step"}
    fit = records["scdc.pairwise_fit"]
    assert fit["peers"] == {} and fit["params"]["N"] == 500
    assert fit["agreement"]["accuracy"]["passed"], fit["agreement"]
    assert fit["agreement"]["weights"]["passed"], fit["agreement"]
    assert records["scdc.pairwise_step"]["metric"] == "seconds_per_iter"
