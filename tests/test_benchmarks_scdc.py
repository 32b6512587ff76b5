"""The semi-crowdsourced family's benchmarks: a ``--quick`` run of the pairwise worker model
writes its two cases with passing checks, and the SCDC and BayesSCDC epochs consistent
records, their fresh-process paths giving the clusters of the same fit in this process and
recording its peak memory (speed is not tested)."""

from __future__ import annotations

import json

import pytest

LABEL = ("scdc.epoch[N=500,D=784,K=50,d=8,hidden=500-500,batch_size=128,hits=5,workers=5,"
         "start=warm]")
BAYES = "bayes_scdc.epoch[N=500,D=784,K=50,d=8,hidden=500-500,batch_size=128,dtype=float64,"
BAYES_LABELS = {BAYES + "links=none,start=warm]", BAYES + "links=hits,hits=5,workers=5,start=warm]"}
MEMORY_KEYS = {"peak_rss_mib", "peak_rss_before_fit_mib", "fit_peak_rss_mib"}


def _assert_fresh_memory(rec):
    """A fresh-process record carries the three memory figures, consistent with each other."""
    assert MEMORY_KEYS <= set(rec) and not MEMORY_KEYS & set(rec["phases"])
    # the fresh process imported torch: far more than an empty interpreter's ~10 MiB
    assert rec["peak_rss_before_fit_mib"] > 50
    assert rec["peak_rss_mib"] == max(rec["peak_rss_before_fit_mib"], rec["fit_peak_rss_mib"])


@pytest.fixture(scope="module")
def epoch_records(run_quick_benchmarks):
    """``--quick --only scdc.epoch``: the SCDC and the BayesSCDC epochs (the label of the
    first is part of the second's), by label."""
    proc, out = run_quick_benchmarks("scdc.epoch", timeout=300)
    assert proc.returncode == 0, proc.stderr
    records = {r["label"]: r for r in map(json.loads, out.read_text().splitlines())}
    assert set(records) == {LABEL} | BAYES_LABELS
    return records


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_scdc_run_writes_the_warm_epoch(epoch_records):
    rec = epoch_records[LABEL]
    assert rec["metric"] == "seconds" and rec["peers"] == {}
    check = rec["agreement"]["labels"]
    assert check["passed"] is True
    assert 0.0 <= check["acc_digits"] <= 1.0 and 0.0 <= check["nmi_digits"] <= 1.0
    assert 1 <= check["occupied_clusters"] <= 50
    assert len(rec["timing"]["ours"]["times_s"]) == 2


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_bayes_scdc_run_writes_the_warm_epochs_with_and_without_links(epoch_records):
    for rec in (epoch_records[label] for label in BAYES_LABELS):
        assert rec["metric"] == "seconds" and rec["peers"] == {} and rec["device"] == "cpu"
        check = rec["agreement"]["labels"]
        assert check["passed"] is True and check["tolerance"] == 0.0
        assert 0.0 <= check["acc_digits"] <= 1.0 and 0.0 <= check["nmi_digits"] <= 1.0
        assert 1 <= check["occupied_clusters"] <= 50
        assert len(rec["timing"]["ours"]["times_s"]) == 2


def test_the_bayes_scdc_cases_fit_the_links_only_where_the_label_says(import_benchmarks,
                                                                       monkeypatch):
    bayes, scdc = import_benchmarks("bench_bayes_scdc", "bench_scdc")
    seen = []

    def record(o, pairs, name="scdc", device="cpu"):
        seen.append((name, pairs is None, device))

    monkeypatch.setattr(scdc, "fit_epoch", record)
    for case in bayes.cases(True):
        case.ours()
    assert seen == [("bayes_scdc", True, "cpu"), ("bayes_scdc", False, "cpu")]
    starts = [(c.params["links"], c.params["start"]) for c in bayes.cases(False)]
    assert starts == [("none", "warm"), ("none", "cold"), ("hits", "warm"), ("hits", "cold")]


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_a_fresh_bayes_scdc_process_gives_the_in_process_fit(import_benchmarks, monkeypatch):
    (bench,) = import_benchmarks("bench_scdc")
    monkeypatch.setattr(bench, "COLD_PHASE_RUNS", 1)
    rec = bench._cold_check(True, "bayes_scdc", True, "cpu")()["cold_labels"]
    assert rec["passed"] is True
    _assert_fresh_memory(rec)


def test_the_links_follow_the_papers_hit_shape(import_benchmarks):
    (bench,) = import_benchmarks("bench_scdc")
    o, pairs, digits = bench.mnist_links(True)
    assert tuple(o.shape) == (500, 784) and set(o.unique().tolist()) <= {0.0, 1.0}
    assert pairs.num_pairs == 5 * 630 and pairs.num_workers == 5


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_a_fresh_scdc_process_gives_the_in_process_fit(import_benchmarks, monkeypatch):
    (bench,) = import_benchmarks("bench_scdc")
    monkeypatch.setattr(bench, "COLD_PHASE_RUNS", 1)
    rec = bench._cold_check(True)()["cold_labels"]
    assert rec["passed"] is True
    assert set(rec["phases"]) == {"import_s", "read_s", "fit_s", "read_to_labels_s"}
    _assert_fresh_memory(rec)
    assert [c.params["start"] for c in bench.cases(False)] == ["warm", "cold"]
    assert [c.params["start"] for c in bench.cases(True)] == ["warm"]

@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
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


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_a_fresh_pairwise_process_gives_the_in_process_fit(import_benchmarks, monkeypatch):
    (bench,) = import_benchmarks("bench_scdc_pairwise")
    monkeypatch.setattr(bench, "COLD_PHASE_RUNS", 1)
    rec = bench._cold_check(bench._Problem(500, 4, 2_000))()["cold_labels"]
    assert rec["passed"] is True
    assert set(rec["phases"]) == {"import_s", "read_s", "fit_s", "read_to_labels_s"}
    _assert_fresh_memory(rec)
    cold = [c for c in bench.cases(False) if c.params.get("start") == "cold"]
    assert [c.name for c in cold] == ["scdc.pairwise_fit"]
    assert all("start" not in c.params for c in bench.cases(True))

