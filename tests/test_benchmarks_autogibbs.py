"""The automatic-Gibbs ESS/s benchmark: its quick run writes well-formed records, a refused
model and a missing peer are recorded with their reason, and the peers' programs run (speed is
not tested)."""

from __future__ import annotations

import json

import numpy as np
import pytest


@pytest.fixture
def ag(import_benchmarks):
    bench, runner, data = import_benchmarks("bench_autogibbs", "autogibbs_models.runner",
                                            "autogibbs_models.data")
    return bench, runner, data


def _runner_lines(capsys, runner, data, engine, model, mode="record", draws=8):
    from benchmarks.bench_autogibbs import _data_file

    path = _data_file(model, True)
    assert runner.main([engine, model, path, str(draws), str(draws), "0", mode]) == 0
    return {line["phase"]: line for line in map(json.loads, capsys.readouterr().out.splitlines())}


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_writes_a_record_with_ess_for_automatic_gibbs(run_quick_benchmarks, monkeypatch):
    monkeypatch.setenv("PYROMODELS_BENCH_ENGINES", "autogibbs")
    proc, out = run_quick_benchmarks("autogibbs.ess[model=changepoint", timeout=240)
    assert proc.returncode == 0, proc.stderr
    (rec,) = map(json.loads, out.read_text().splitlines())
    assert rec["case"] == "autogibbs.ess" and rec["params"]["model"] == "changepoint"
    assert rec["peers"] == {} and rec["ours"] > 0
    cell = rec["agreement"]["autogibbs"]
    assert cell["passed"] and cell["status"] == "ok", cell
    assert set(cell["ess"]) == {"l1", "l2", "E[tau]"}
    assert cell["min_ess"] == min(cell["ess"].values()) > 0
    assert cell["slowest"] in cell["ess"]
    assert cell["fit_s"] > 0 and cell["warm_fit_s"] > 0 and cell["compile_s"] >= 0
    assert cell["ess_per_s"] == pytest.approx(cell["min_ess"] / cell["fit_s"])


def test_a_model_the_plan_refuses_is_recorded_with_the_reason(ag, capsys, monkeypatch):
    _, runner, data = ag
    from benchmarks.autogibbs_models import pyro_programs

    def refuse(*args):  # what fit_gibbs raises for a site it has no update for
        raise ValueError("no automatic Gibbs update for 'tau'")

    monkeypatch.setattr(pyro_programs, "run_autogibbs", refuse)
    lines = _runner_lines(capsys, runner, data, "autogibbs", "eight_schools")
    assert lines["cold"] == {"phase": "cold", "status": "unsupported",
                             "reason": "ValueError: no automatic Gibbs update for 'tau'"}


def test_a_peer_that_crashes_is_an_error_not_a_refusal(ag, capsys, monkeypatch):
    _, runner, data = ag
    from benchmarks.autogibbs_models import pyro_programs

    def crash(*args):
        raise ValueError("bad shapes")

    monkeypatch.setattr(pyro_programs, "run_pyro_nuts", crash)
    lines = _runner_lines(capsys, runner, data, "pyro_nuts", "eight_schools")
    assert lines["cold"]["status"] == "error" and lines["cold"]["reason"] == "ValueError: bad shapes"


def test_a_missing_peer_is_recorded_as_skipped_without_a_process(ag, monkeypatch):
    bench, _, _ = ag
    monkeypatch.setitem(bench.ENGINE_NEEDS, "pymc", "no_such_package_for_the_benchmark")
    cell = bench.Cell("changepoint", "pymc", quick=True)
    monkeypatch.setattr(cell, "_run", lambda mode: pytest.fail("no process for a missing peer"))
    rec = cell.record()
    assert rec == {"status": "skipped", "reason": "no_such_package_for_the_benchmark not installed"}


def test_engines_setting_must_name_known_engines_and_include_ours(ag, monkeypatch):
    bench, _, _ = ag
    monkeypatch.setenv("PYROMODELS_BENCH_ENGINES", "pymc")
    with pytest.raises(ValueError, match="autogibbs"):
        bench.engines()
    monkeypatch.setenv("PYROMODELS_BENCH_ENGINES", "autogibbs,stan")
    with pytest.raises(ValueError, match="PYROMODELS_BENCH_ENGINES"):
        bench.engines()
    monkeypatch.setenv("PYROMODELS_BENCH_ENGINES", "pymc,autogibbs")
    assert bench.engines() == ("autogibbs", "pymc")


def test_settings_variable_replaces_the_full_run_and_is_checked(ag, monkeypatch):
    bench, _, _ = ag
    monkeypatch.setenv(bench.SETTINGS_VAR, "500,300,150")
    assert bench.settings(False) == {"num_samples": 500, "warmup": 300, "cap_s": 150}
    assert bench.settings(True) == bench.SETTINGS[True]
    for bad in ("500,300", "500,0,150", "a,b,c"):
        monkeypatch.setenv(bench.SETTINGS_VAR, bad)
        with pytest.raises(ValueError, match=bench.SETTINGS_VAR):
            bench.settings(False)


def test_means_comparison_scales_by_the_monte_carlo_error(ag):
    bench, _, _ = ag
    ref = {"means": {"a": 0.0}, "sds": {"a": 1.0}, "ess": {"a": 100.0}}
    near = {"means": {"a": 0.1}, "sds": {"a": 1.0}, "ess": {"a": 100.0}}
    far = {"means": {"a": 1.0}, "sds": {"a": 1.0}, "ess": {"a": 100.0}}
    # se^2 = 1/100 on each side: z = diff / sqrt(0.02)
    assert bench.compare_means(near, ref)["mean_z_max"] == pytest.approx(0.1 / np.sqrt(0.02))
    assert bench.compare_means(near, ref)["means_agree"]
    assert not bench.compare_means(far, ref)["means_agree"]


def test_quantities_are_invariant_to_relabelling_the_mixture(ag):
    _, _, data = ag
    rng = np.random.default_rng(0)
    raw = {"w": rng.dirichlet(np.ones(3), size=5), "mu": rng.normal(size=(5, 3))}
    perm = [2, 0, 1]
    a = data.quantities("mixture", raw, {})
    b = data.quantities("mixture", {k: v[:, perm] for k, v in raw.items()}, {})
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_numpyro_runs_a_discrete_model_through_discrete_hmc_gibbs(ag, capsys):
    pytest.importorskip("numpyro")
    _, runner, data = ag
    lines = _runner_lines(capsys, runner, data, "numpyro", "changepoint", mode="timed")
    assert lines["cold"]["status"] == "ok" and lines["cold"]["fit_s"] > 0


def test_pymc_runs_a_continuous_model(ag, capsys):
    pytest.importorskip("pymc")
    _, runner, data = ag
    lines = _runner_lines(capsys, runner, data, "pymc", "eight_schools", mode="timed")
    assert lines["cold"]["status"] == "ok", lines


def test_numpyro_enumeration_cell_says_why_it_cannot_run(ag, capsys):
    pytest.importorskip("numpyro")
    _, runner, data = ag
    lines = _runner_lines(capsys, runner, data, "numpyro_enum", "eight_schools", mode="timed")
    assert lines["cold"]["status"] == "unsupported"
    assert "no discrete latent site" in lines["cold"]["reason"]
    try:
        import funsor  # noqa: F401
    except ModuleNotFoundError:
        lines = _runner_lines(capsys, runner, data, "numpyro_enum", "changepoint", mode="timed")
        assert lines["cold"] == {"phase": "cold", "status": "skipped", "reason": "funsor not installed"}


def test_summary_says_the_figures_or_why_the_cell_did_not_run(ag):
    bench, _, _ = ag
    ok = {"status": "ok", "reason": "", "ess_per_s": 2.5, "min_ess": 50.0, "slowest": "tau",
          "fit_s": 20.0, "compile_s": 4.0}
    assert bench.summary(ok) == "ESS/s 2.5 (min ESS 50 of tau, fit 20 s, compile 4 s)"
    refused = {"status": "unsupported", "reason": "ValueError: no automatic Gibbs update for 'tau'"}
    assert bench.summary(refused) == "unsupported: ValueError: no automatic Gibbs update for 'tau'"


def test_a_process_past_its_cap_is_recorded_as_timed_out(ag, monkeypatch):
    bench, _, _ = ag
    monkeypatch.setitem(bench.SETTINGS, True, {**bench.SETTINGS[True], "cap_s": 1})
    rec = bench.Cell("lda", "autogibbs", quick=True).record()
    assert rec["status"] == "timed out" and rec["reason"] == "timed out at 1 s"
    assert rec["process_s"] < 30


@pytest.mark.slow  # a long statistical or end-to-end check: make test-slow, .ci/run
def test_quick_run_times_the_plan_against_the_hand_written_sweeps(run_quick_benchmarks):
    proc, out = run_quick_benchmarks("autogibbs.hand_written", timeout=180)
    assert proc.returncode == 0, proc.stderr
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["params"]["model"] for r in records] == ["gaussian-mixture", "dawid-skene"]
    for rec in records:
        assert rec["metric"] == "seconds_per_iter" and rec["ours"] > 0
        assert set(rec["peers"]) == {"hand-written"} and rec["ratio"]["hand-written"] > 0
        assert rec["agreement"]["blocks"]["passed"], rec["agreement"]
