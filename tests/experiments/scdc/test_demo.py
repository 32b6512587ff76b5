"""The ``scdc`` entry of ``pyromodels demo``: the smoke demo's figures, tables and metrics,
the per-epoch pruning record, and the command line writing its report."""

from __future__ import annotations

import json
import math
from html import escape as html_escape

import numpy as np
import pytest
import torch
from matplotlib.figure import Figure

from pyromodels import registry
from pyromodels.cli import main
from pyromodels.conjugate import DirichletCategorical
from pyromodels.experiments.scdc import demo as scdc_demo
from pyromodels.experiments.scdc import paper_numbers, protocols
from pyromodels.experiments.scdc.demo_report import FIGURES, TABLES


@pytest.fixture(scope="module")
def smoke():
    return scdc_demo.demo(smoke=True, progress=False, seed=0)


def _numbers(value):
    """Every number in nested metrics."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _numbers(item)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _numbers(item)
    elif isinstance(value, int | float) and not isinstance(value, bool):
        yield value


def test_smoke_demo_has_its_figures_tables_and_metrics(smoke):
    assert smoke.name == "scdc"
    assert list(smoke.figures) == list(FIGURES)
    assert all(isinstance(f, Figure) for f in smoke.figures.values())
    assert list(smoke.tables) == list(TABLES)
    assert set(smoke.metrics) == {"seed", "bayes_fit_seed", "epochs", "pinwheel",
                                  "worker_weights", "pruning", "seconds"}
    assert set(smoke.metrics["pinwheel"]) == {"bayes-scdc with links",
                                              "bayes-scdc without links",
                                              "observed-bayes-scdc with links"}
    for scores in smoke.metrics["pinwheel"].values():
        assert 0 <= scores["acc"] <= 1 and 0 <= scores["nmi"] <= 1
        assert 1 <= scores["clusters"] <= scdc_demo.PINWHEEL_CLUSTERS


def test_smoke_metrics_are_finite(smoke):
    numbers = list(_numbers(smoke.metrics))
    assert len(numbers) > 50
    assert all(math.isfinite(v) for v in numbers)
    assert smoke.metrics["seconds"]["total"] > 0


def test_the_seeds_are_fixed_and_stated(smoke):
    assert smoke.metrics["seed"] == 0
    assert smoke.metrics["bayes_fit_seed"] == protocols.method_seed(0, "bayes-scdc")
    assert "seed 0" in smoke.summary and "vary with the seed" in smoke.summary


def test_pinwheel_table_sets_the_papers_numbers_beside_ours(smoke):
    table = smoke.tables["pinwheel (Fig. 2): ours vs the paper"]
    with_links = table.loc[("with links", "bayes-scdc")]
    paper = paper_numbers.PINWHEEL[("with links", "bayes-scdc")]
    assert with_links["acc (paper)"] == paper["acc"] and with_links["nmi (paper)"] == paper["nmi"]
    without = table.loc[("without links", "bayes-scdc")]
    assert without["clusters (paper)"] == 8
    assert without["acc"] == smoke.metrics["pinwheel"]["bayes-scdc without links"]["acc"]
    # the reference has no number in the paper
    assert np.isnan(table.loc[("with links", "observed-bayes-scdc"), "acc (paper)"])
    assert "96.6%" in smoke.summary and "95.6%" in smoke.summary


def test_weights_table_lists_the_five_workers_in_the_true_order(smoke):
    table = smoke.tables["worker weights (Fig. 3c): estimated and true"]
    assert list(table.index) == [1, 2, 3, 4, 5]
    assert list(table["alpha = beta"]) == list(protocols.FACE_ACCURACIES)
    np.testing.assert_allclose(table["true weight"], [5.89, 4.39, 3.47, 2.77, 2.20], atol=0.005)
    assert (np.diff(table["true weight"]) < 0).all()
    assert (table["Gibbs 5%"] <= table["Gibbs mean"]).all()
    assert (table["Gibbs mean"] <= table["Gibbs 95%"]).all()
    assert np.isfinite(table.to_numpy()).all()


def test_pruning_record_has_one_count_per_epoch_and_says_whether_it_rises(smoke):
    epochs = smoke.metrics["epochs"]
    assert epochs == scdc_demo.PLANS["smoke"].epochs
    per_epoch = smoke.tables["pruning: components with E[pi] >= 1% per epoch"]
    assert list(per_epoch.index) == list(range(1, epochs + 1))
    final = smoke.tables["pruning: E[pi] sorted at the end"]
    assert len(final) == scdc_demo.PINWHEEL_CLUSTERS
    for setting in ("with links", "without links"):
        record = smoke.metrics["pruning"][setting]
        counts = record["per_epoch"]
        assert len(counts) == epochs and counts == list(per_epoch[setting])
        falls = all(b <= a for a, b in zip(counts, counts[1:], strict=False))
        assert record["non_increasing"] is falls
        if not falls:
            assert "not monotone" in smoke.summary
        weights = np.asarray(record["final_expected_weights"])
        assert weights.sum() == pytest.approx(1.0) and (np.diff(weights) <= 0).all()
        # the last epoch's count is that of the final E[pi]
        assert counts[-1] == int((weights >= protocols.OCCUPIED_FRACTION).sum())


def test_pruning_record_keeps_the_last_step_of_each_epoch():
    record = scdc_demo.PruningRecord(fraction=0.1)

    def info(epoch, concentrations):
        conc = torch.tensor(concentrations, dtype=torch.float64)
        return {"epoch": epoch, "globals": {"weights": DirichletCategorical(conc)}}

    record(1, info(0, [1.0, 1.0, 1.0, 1.0]))       # every weight 0.25
    record(2, info(0, [10.0, 10.0, 1.0, 0.5]))     # 0.465, 0.465, 0.047, 0.023: two
    record(3, info(1, [10.0, 5.0, 4.0, 1.0]))      # 0.5, 0.25, 0.2, 0.05: three
    assert record.per_epoch == [2, 3]
    # the weight vectors kept are those of each epoch's last step, and the counts theirs
    assert np.allclose(record.weights_per_epoch, [[10 / 21.5, 10 / 21.5, 1 / 21.5, 0.5 / 21.5],
                                                  [0.5, 0.25, 0.2, 0.05]])
    assert record.per_epoch == (record.weights_per_epoch >= 0.1).sum(1).tolist()


def test_demo_arguments_are_checked():
    with pytest.raises(TypeError, match="smoke"):
        scdc_demo.demo(smoke="yes", progress=False)
    with pytest.raises(ValueError, match="seed"):
        scdc_demo.demo(smoke=True, progress=False, seed=-1)


def test_command_line_writes_the_smoke_report(tmp_path, capsys):
    registry.load_builtin()
    assert registry.get("scdc").demo is scdc_demo.demo
    out = tmp_path / "report"
    assert main(["demo", "--only", "scdc", "--smoke", "--out", str(out), "--no-progress"]) == 0
    html = (out / "index.html").read_text()
    assert "pyromodels demo (smoke)" in html
    for name in FIGURES:
        assert html_escape(name) in html
    metrics = json.loads((out / "metrics.json").read_text())
    assert "scdc" in metrics and "crowd" not in metrics
    assert len(metrics["scdc"]["pruning"]["with links"]["per_epoch"]) == 3


def test_the_full_demo_runs_the_papers_pinwheel_setting():
    from pyromodels.experiments.scdc.bayes_entry import bayes_settings

    plan = scdc_demo.PLANS["demo"]
    assert plan.bayes()["epochs"] == 60 and bayes_settings(plan.epochs)["warmup_epochs"] == 40
    assert plan.bayes()["lr"] == 0.01 and scdc_demo.PINWHEEL_CLUSTERS == 15
    x, z, pairs = protocols.pinwheel_data(True, 0)
    assert x.shape == (500, 2) and np.bincount(z).tolist() == [100] * 5
    assert pairs.num_workers == 20 and pairs.num_pairs == 20 * 49
    # the smoke plan is the same protocol, shorter
    smoke = scdc_demo.PLANS["smoke"]
    assert smoke.epochs < plan.epochs and smoke.face_points < plan.face_points
