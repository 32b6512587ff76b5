"""The benchmark harness: ``python -m benchmarks --quick`` writes valid records (speed is not tested)."""

from __future__ import annotations

import json
import re
import statistics
import subprocess
import sys
import types

import numpy as np
import pytest

REQUIRED = {"case", "label", "params", "device", "metric", "lower_is_better", "ours", "peers", "ratio",
            "agreement", "timing", "env", "load_average_1m", "timestamp"}
QUICK_LABELS = {
    "mixture.em_iteration[N=300,d=2,K=5,dtype=float64,iterations_per_call=2]",
    "mixture.gibbs_sweep[N=300,d=2,K=5,dtype=float64,iterations_per_call=2]",
    "mixture.component_log_density[N=300,d=2,K=5,dtype=float64]",
    "mixture.quickstart_gibbs[N=200,d=2,K=2,chains=2,sweeps_per_call=6]",
}


@pytest.fixture(scope="module")
def quick_run(run_quick_benchmarks):
    return run_quick_benchmarks("mixture.", timeout=120)


@pytest.fixture
def bench(import_benchmarks):
    """The harness and the command line of the ``benchmarks`` package."""
    harness, cli = import_benchmarks("harness", "__main__")
    return types.SimpleNamespace(harness=harness, cli=cli)


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_one_valid_record_per_case(quick_run):
    proc, out = quick_run
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert {r["label"] for r in records} == QUICK_LABELS
    assert len(records) == len(QUICK_LABELS)
    for rec in records:
        assert REQUIRED <= set(rec), REQUIRED - set(rec)
        assert rec["label"] in proc.stdout
        assert rec["device"] == "cpu"
        assert rec["metric"] in ("seconds", "seconds_per_iter")
        assert set(rec["ratio"]) == set(rec["peers"])
        for peer, fig in rec["peers"].items():
            assert rec["ratio"][peer] == fig / rec["ours"]
        assert set(rec["timing"]) == {"ours", *rec["peers"]}
        for who, t in rec["timing"].items():
            assert len(t["times_s"]) == t["repeats"] == 2
            assert t["median_s"] == statistics.median(t["times_s"])
            assert t["min_s"] == min(t["times_s"])
            figure = rec["ours"] if who == "ours" else rec["peers"][who]
            assert figure == t["median_s"] / t["iterations_per_call"]
            assert figure > 0
        for check in rec["agreement"].values():
            assert check["passed"] is True
            assert 0 <= check["max_abs_diff"] <= check["tolerance"]
        env = rec["env"]
        assert env["torch_threads"] == 1
        assert all(pool["threads"] == 1 for pool in env["threadpools"])
        assert set(env["versions"]) == {"torch", "pyro-ppl", "numpy", "scipy", "scikit-learn"}
        assert env["cpu_count"] >= 1


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_peers_and_checks_per_case(quick_run):
    _, out = quick_run
    by_case = {r["case"]: r for r in map(json.loads, out.read_text().splitlines())}
    em = by_case["mixture.em_iteration"]
    assert set(em["peers"]) == {"sklearn.GaussianMixture", "sklearn.BayesianGaussianMixture"}
    assert set(em["agreement"]) == {"responsibilities"}
    assert em["agreement"]["responsibilities"]["tolerance"] == 1e-10
    assert by_case["mixture.gibbs_sweep"]["peers"] == {}
    assert by_case["mixture.gibbs_sweep"]["agreement"] == {}
    quickstart = by_case["mixture.quickstart_gibbs"]
    assert set(quickstart["peers"]) == {"default_threads"}
    assert set(quickstart["agreement"]) == {"locs"}
    dens = by_case["mixture.component_log_density"]
    assert set(dens["peers"]) == {"scipy.stats.multivariate_normal"}
    assert dens["metric"] == "seconds"


def test_only_runs_the_matching_cases(bench, tmp_path, capsys):
    out = tmp_path / "only.jsonl"
    assert bench.cli.main(["--quick", "--only", "mixture.gibbs_sweep", "--out", str(out)]) == 0
    (line,) = out.read_text().splitlines()
    assert json.loads(line)["case"] == "mixture.gibbs_sweep"
    assert "mixture.gibbs_sweep[" in capsys.readouterr().out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--only", "no-such-case"], "--only 'no-such-case' matches no case"),
        (["--device", "meta"], r"device type must be one of \['cpu', 'cuda'\], got 'meta'"),
        (["--threads", "0"], "--threads must be an integer >= 1, got 0"),
    ],
)
def test_bad_arguments_exit_2_with_a_message(bench, tmp_path, capsys, argv, message):
    with pytest.raises(SystemExit) as exc:
        bench.cli.main(["--quick", "--out", str(tmp_path / "x.jsonl"), *argv])
    assert exc.value.code == 2
    assert re.search(message, capsys.readouterr().err)


def test_failed_check_is_recorded_and_exits_1(bench, tmp_path, monkeypatch):
    h = bench.harness
    calls = []
    failing = h.Case(
        "fake.fail", {"n": 1}, ours=lambda: calls.append("ours"), peers={"peer": lambda: calls.append("p")},
        check=lambda: {"values": h.agreement([0.0, 1.0], [0.0, 1.5], 0.1, "a constant")},
        warmup=2, repeats=3,
    )
    module = types.SimpleNamespace(__name__="fake", cases=lambda quick: [failing])
    monkeypatch.setattr(bench.cli, "discover", lambda: [module])
    out = tmp_path / "fail.jsonl"
    assert bench.cli.main(["--out", str(out)]) == 1
    rec = json.loads(out.read_text())
    assert rec["agreement"]["values"] == {
        "against": "a constant", "max_abs_diff": 0.5, "tolerance": 0.1, "passed": False
    }
    assert calls.count("ours") == calls.count("p") == 5  # warm-up 2 + repeats 3 each


def test_time_call_median_and_per_iteration_figure(bench, monkeypatch):
    h = bench.harness
    ticks = iter([0.0, 1.0, 10.0, 13.0, 20.0, 22.0])  # three timed calls of 1, 3 and 2 seconds
    monkeypatch.setattr(h.time, "perf_counter", lambda: next(ticks))
    t = h.time_call(lambda: None, warmup=1, repeats=3)
    assert (t["median_s"], t["min_s"], t["times_s"]) == (2.0, 1.0, [1.0, 3.0, 2.0])


def test_agreement_measures_max_abs_diff(bench):
    rec = bench.harness.agreement(np.array([[1.0, 2.0]]), [[1.0, 2.0 + 3e-11]], 1e-10, "ref")
    assert rec["passed"] is True
    assert rec["max_abs_diff"] == pytest.approx(3e-11, rel=1e-4)
    shape_message = r"ours and reference must have the same shape, got \(2,\) and \(3,\)"
    with pytest.raises(ValueError, match=shape_message):
        bench.harness.agreement([1.0, 2.0], [1.0, 2.0, 3.0], 1e-10, "ref")
    with pytest.raises(ValueError, match="reference must be finite to compare"):
        bench.harness.agreement([1.0], [float("nan")], 1e-10, "ref")
    with pytest.raises(ValueError, match="tolerance must be a number >= 0, got -1"):
        bench.harness.agreement([1.0], [1.0], -1, "ref")


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"metric": "joules"}, ValueError, r"metric must be one of \['seconds', 'seconds_per_iter'\]"),
        ({"iterations": 3}, ValueError, "iterations must be 1 for metric 'seconds', got 3"),
        ({"metric": "seconds_per_iter", "iterations": 0}, ValueError, "iterations must be an integer >= 1"),
        ({"warmup": 0}, ValueError, "warmup must be an integer >= 1, got 0"),
        ({"repeats": 2.0}, TypeError, "repeats must be an integer, got float"),
        ({"peers": {"p": 3}}, TypeError, r"peers\['p'\] must be a zero-argument callable, got int"),
        ({"peers": {"ours": print}}, ValueError, "peers keys must be non-empty strings other than 'ours'"),
        ({"params": {"x": object()}}, TypeError, "params must be JSON-serialisable"),
        ({"check": 1}, TypeError, "check must be None or a zero-argument callable, got int"),
    ],
)
def test_case_rejects_bad_arguments(bench, kwargs, error, message):
    args = {"name": "demo", "params": {"n": 1}, "ours": print, **kwargs}
    with pytest.raises(error, match=message):
        bench.harness.Case(**args)


def test_discovery_and_duplicate_labels(bench):
    h = bench.harness
    mods = h.discover()
    assert [m.__name__ for m in mods] == [
        "benchmarks.bench_autogibbs",
        "benchmarks.bench_autogibbs_hand",
        "benchmarks.bench_bayes_scdc",
        "benchmarks.bench_bhmc",
        "benchmarks.bench_bnp_dp",
        "benchmarks.bench_bnp_fit",
        "benchmarks.bench_callables",
        "benchmarks.bench_crowd_ds",
        "benchmarks.bench_crowd_hmm",
        "benchmarks.bench_dask_ds",
        "benchmarks.bench_ddpm_mcem",
        "benchmarks.bench_ds_partial_fit",
        "benchmarks.bench_inference_data",
        "benchmarks.bench_ltvae",
        "benchmarks.bench_parallel_runs",
        "benchmarks.bench_reference_mixture",
        "benchmarks.bench_scdc",
        "benchmarks.bench_scdc_pairwise",
        "benchmarks.bench_trees",
    ]
    case = h.Case("demo", {"n": 1}, ours=print)
    dup = types.SimpleNamespace(__name__="dup", cases=lambda quick: [case, case])
    with pytest.raises(ValueError, match=r"case labels must be unique, found duplicates \['demo\[n=1\]'\]"):
        h.collect_cases([dup], quick=True, device=h.bench_device("cpu"))


@pytest.mark.skipif(sys.platform != "linux", reason="VmHWM and clear_refs are Linux's")
def test_a_fresh_process_reports_its_own_peak_memory_not_its_parents(import_benchmarks):
    # a process started by subprocess inherits its parent's peak as a floor of ru_maxrss
    (fresh,) = import_benchmarks("fresh_process")
    held = np.ones(2**25)  # 256 MiB resident in this process
    code = fresh.PEAK_RSS_SOURCE + "\nprint(peak_rss_mib())\n"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert held.nbytes == 2**28 and fresh.peak_rss_mib() >= 256
    assert 1 < float(done.stdout) < 128  # an interpreter that imported nothing large


@pytest.mark.skipif(sys.platform != "linux", reason="VmHWM and clear_refs are Linux's")
def test_memory_figures_separate_the_fit_from_what_came_before(import_benchmarks, fresh_python):
    (fresh,) = import_benchmarks("fresh_process")
    code = fresh.PEAK_RSS_SOURCE + (
        "\nimport json\nimport numpy as np\n"
        "start = np.ones(2**25); del start\n"  # 256 MiB before the fit, then freed
        "before, reset = peak_rss_mib(), reset_peak_rss()\n"
        "fit = np.ones(2**23); del fit\n"  # 64 MiB during the fit
        "print(json.dumps(memory_figures(before, reset)))\n")
    figures = json.loads(fresh_python(code))
    assert set(figures) == set(fresh.MEMORY_KEYS)
    assert figures["peak_rss_before_fit_mib"] >= 256
    assert 64 <= figures["fit_peak_rss_mib"] < 200  # the fit's 64 MiB on the resident base
    assert figures["peak_rss_mib"] == figures["peak_rss_before_fit_mib"]


def test_fresh_record_takes_the_memory_figures_out_of_the_phases(import_benchmarks):
    (fresh,) = import_benchmarks("fresh_process")
    runs = [({"fit_s": 1.0, "peak_rss_mib": 10.0, "peak_rss_before_fit_mib": 5.0,
              "fit_peak_rss_mib": 10.0}, [1, 2]),
            ({"fit_s": 3.0, "peak_rss_mib": 12.0, "peak_rss_before_fit_mib": 6.0,
              "fit_peak_rss_mib": None}, [1, 2])]
    rec = fresh.fresh_record(runs, [1, 3], "ref")
    assert rec["phases"] == {"fit_s": 2.0}
    assert (rec["peak_rss_mib"], rec["peak_rss_before_fit_mib"]) == (12.0, 6.0)
    assert rec["fit_peak_rss_mib"] is None
    assert rec["passed"] is False and rec["max_abs_diff"] == 1.0
    with pytest.raises(ValueError, match=r"must print .* missing \['fit_peak_rss_mib'\]"):
        fresh.fresh_record([({"fit_s": 1.0, "peak_rss_mib": 1.0,
                              "peak_rss_before_fit_mib": 1.0}, [1])], [1], "ref")


TREES_LABEL = ("trees.message_passing[N=2000,latent_nodes=10,J=20,pouches=11,dtype=float64,"
               "pyro_outputs=log_likelihood,start=warm]")


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_times_the_tree_message_passing_against_pyro(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("trees.", timeout=120)
    assert proc.returncode == 0, proc.stderr
    (rec,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert REQUIRED <= set(rec)
    assert rec["label"] == TREES_LABEL and rec["device"] == "cpu"
    assert set(rec["peers"]) == {"pyro.TraceEnum_ELBO"}
    assert set(rec["agreement"]) == {"log_likelihood", "node_marginals", "edge_marginals"}
    assert all(check["passed"] for check in rec["agreement"].values()), rec["agreement"]
    # the relative tolerance of the summed log-likelihood is 10 N eps
    assert rec["agreement"]["log_likelihood"]["tolerance"] == 10 * 2_000 * np.finfo(float).eps
    assert all(len(t["times_s"]) == 2 for t in rec["timing"].values())


def test_the_tree_benchmarks_structure_is_three_levels_of_ten_nodes(import_benchmarks):
    (bench,) = import_benchmarks("bench_trees")
    tree = bench.bench_tree()
    assert tree.num_latents == 10 and tree.num_coordinates == 20
    assert set(tree.cardinalities) == {2, 3, 4}
    assert {len(block) for block in tree.pouches} == {1, 2, 3}
    depth = [0] * tree.num_latents
    for j in tree.order[1:]:
        depth[j] = depth[tree.parents[j]] + 1
    assert max(depth) == 2
    # every latent node without latent children carries a pouch (none is left dangling)
    assert all(tree.leaves[j] for j in range(tree.num_latents) if not tree.children[j])


def test_the_tree_log_likelihood_check_catches_a_disagreement(import_benchmarks, monkeypatch):
    (bench,) = import_benchmarks("bench_trees")
    assert bench._check(500, "cpu")()["log_likelihood"]["passed"] is True
    true_pyro = bench._pyro
    monkeypatch.setattr(bench, "_pyro", lambda n: true_pyro(n) * (1 + 1e-9))
    rec = bench._check(500, "cpu")()["log_likelihood"]
    assert rec["passed"] is False and rec["max_abs_diff"] > rec["tolerance"]


def test_a_fresh_tree_process_gives_the_in_process_pass(import_benchmarks, monkeypatch):
    bench, fresh = import_benchmarks("bench_trees", "fresh_process")
    monkeypatch.setattr(bench, "COLD_PHASE_RUNS", 1)
    rec = bench._cold_check(500, "cpu")()["cold_posterior"]
    assert rec["passed"] is True
    assert set(rec["phases"]) == {"import_s", "read_s", "build_s", "pass_s",
                                  "read_to_posterior_s"}
    assert set(fresh.MEMORY_KEYS) <= set(rec)
    assert rec["peak_rss_before_fit_mib"] > 50  # it imported torch
    cold = [c for c in bench.cases(False) if c.params["start"] == "cold"]
    assert [c.name for c in cold] == ["trees.message_passing"]
    assert all(c.params["start"] == "warm" for c in bench.cases(True))
