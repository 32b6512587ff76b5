"""The registered reproduction: the smoke demo on real data, the entry, the loader, the plots."""

from __future__ import annotations

import math
import os
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from pyromodels import registry
from pyromodels.cli import main
from pyromodels.crowd.ds.model import DawidSkene
from pyromodels.data import AnnotationTable
from pyromodels.experiments.crowd import paper_numbers as crowd_paper
from pyromodels.experiments.crowd import reproduction as crowd
from pyromodels.experiments.crowd.figures import plot_ours_vs_paper, plot_study
from pyromodels.experiments.crowd.synthetic import summarize

pytestmark = pytest.mark.filterwarnings("ignore:::crowdkit")

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"


@pytest.fixture(scope="module")
def smoke():
    with pytest.MonkeyPatch.context() as mp:
        if not os.environ.get("PYROMODELS_DATA"):
            mp.setenv("PYROMODELS_DATA", str(DATA))
        return crowd.demo(smoke=True, progress=False, seed=0)


def test_smoke_demo_has_every_table_and_figure(smoke):
    assert smoke.name == "crowd"
    assert set(smoke.tables) == {
        "Table I (sequential): ours vs the paper",
        "Table II (networked, F-score): ours vs the paper", "data sets: ours vs the paper",
        "synthetic sequential-N: mean and sd over 1 runs",
        "i.i.d. crowd sets: accuracy against gold"}
    # the paper's figures, then posterior plots of the Gibbs engine on a crowd set; the smoke
    # run has one Gibbs chain, and a rank plot (which compares chains) needs two
    assert len(smoke.figures) == 5 and all(isinstance(f, Figure) for f in smoke.figures.values())
    captions = " | ".join(smoke.figures)
    assert "confusion matrices of the busiest workers" in captions
    assert "1 chain(s)" in captions
    assert "trace plot" in captions and "rank plot" not in captions
    assert smoke.metrics["sizes"]["ner"]["N"] == 6721 and smoke.metrics["sizes"]["cora"]["K"] == 7
    assert smoke.metrics["seconds"]["total"] > 0
    assert "Not reproduced: Sentence Polarity and BU-BIL MRI" in smoke.summary


def test_smoke_real_data_scores_are_plausible(smoke):
    t1 = smoke.tables["Table I (sequential): ours vs the paper"].loc["ner"]
    assert list(t1.index) == list(crowd_paper.TABLE_I_METHODS)
    scores = t1[["precision", "recall", "f_score"]].to_numpy()
    assert np.isfinite(scores).all() and (scores > 0).all() and (scores <= 1).all()
    # Majority vote fits nothing, so on the same crowd labels it must land near the paper's
    # 0.79 / 0.59 / 0.68: about 800 gold entities in our 500 sentences give a binomial sd of
    # at most 0.018 per ratio; 0.06 is about 3.5 sd.
    for metric in ("precision", "recall", "f_score"):
        assert abs(t1.loc["mv", metric] - t1.loc["mv", f"{metric} (paper)"]) < 0.06, metric
    t2 = smoke.tables["Table II (networked, F-score): ours vs the paper"].loc["cora"]["f_score"]
    # the paper's claim on Cora: the graph methods beat the graph-agnostic ones (2,708 nodes:
    # a difference of two F-scores has sd below 0.02; the margin asked is 0.04)
    for graph_method in ("alg4", "mv_alg3"):
        assert t2[graph_method] > max(t2["mv"], t2["ds"]) + 0.04, graph_method
    iid = smoke.tables["i.i.d. crowd sets: accuracy against gold"].loc["rte"]
    # 800 gold items: accuracy sd about 0.011; Dawid-Skene's known gain on rte is about 0.03
    assert iid["ds_em"] > iid["mv"] + 0.011


def test_smoke_synthetic_panel_oracle_leads_and_all_beat_chance(smoke):
    summary = smoke.tables["synthetic sequential-N: mean and sd over 1 runs"]
    f = summary[("f_score", "mean")]
    for n in (200, 400):
        row = f.xs(n, level="x")
        # the oracle decodes with the true parameters; an estimate can beat it only by the
        # sampling noise of an F-score on n items (3 sds of a difference of two)
        assert row["oracle"] >= row["alg2_alg1"] - 3 * math.sqrt(2 * 0.25 / n)
        # K = 4 classes with near-uniform frequencies: random labels score about 0.25
        assert (row > 0.25 + 3 * math.sqrt(0.25 / n)).all()


def test_registered_entry():
    registry.load_builtin()
    entry = registry.get("crowd")
    assert entry is crowd.ENTRY
    assert entry.engines == ("em", "gibbs", "svi", "nuts") == DawidSkene.engines
    assert entry.scales == ("small", "medium", "paper")
    assert isinstance(entry.factory(), DawidSkene)
    assert "Traganitis & Giannakis" in entry.paper
    with pytest.raises(ValueError, match="scale must be one of"):
        crowd.reproduce(scale="huge", progress=False, seed=0)
    with pytest.raises(TypeError, match="smoke must be a bool"):
        crowd.demo(smoke="yes", progress=False, seed=0)
    with pytest.raises(ValueError, match="seed must be an integer >= 0"):
        crowd.demo(smoke=True, progress=False, seed=-1)


def test_loader_reads_csv_and_names_bad_files(tmp_path):
    good = tmp_path / "labels.csv"
    pd.DataFrame({"task": ["a", "a", "b", "b", "b"], "worker": ["u", "v", "u", "v", "u"],
                  "label": ["x", "y", "y", "y", "y"], "note": list("12345")}).to_csv(
        good, index=False)
    table = crowd.loader(str(good))
    assert isinstance(table, AnnotationTable)
    assert (table.num_items, table.num_workers, table.num_labels) == (2, 2, 5)
    assert table.vote_counts().tolist() == [[1, 1], [0, 3]]  # the repeated (b, u) row is kept
    default = crowd.loader(None)
    assert (default.num_items, default.num_workers, default.num_labels) == (108, 39, 4212)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="empty.csv is empty: expected a CSV with columns"):
        crowd.loader(str(tmp_path / "empty.csv"))
    pd.DataFrame({"task": [1], "annotator": ["u"], "label": [0]}).to_csv(
        tmp_path / "cols.csv", index=False)
    with pytest.raises(ValueError, match="cols.csv: .*worker"):
        crowd.loader(str(tmp_path / "cols.csv"))
    with pytest.raises(TypeError, match="path must be a str or Path"):
        crowd.read_annotations(3)


def test_plots_draw_one_errorbar_per_method_with_values():
    frame = pd.DataFrame({"x": [1, 1, 2, 2, 1, 2], "run": [0, 1, 0, 1, 0, 0],
                          "method": ["a", "a", "a", "a", "b", "b"],
                          "f_score": [0.5, 0.7, 0.6, 0.8, 0.4, 0.5],
                          "confusion_error": [0.2, 0.3, 0.1, 0.1, np.nan, np.nan],
                          "transition_error": [np.nan] * 6, "seconds": [0.0] * 6})
    fig = plot_study(summarize(frame), ("f_score", "confusion_error"), xlabel="N")
    left, right = fig.axes
    assert len(left.containers) == 2 and len(right.containers) == 1  # b has no confusion
    # a method keeps its colour in every panel
    assert left.containers[0].lines[0].get_color() == right.containers[0].lines[0].get_color()
    np.testing.assert_allclose(left.containers[0].lines[0].get_ydata(), [0.6, 0.7])
    with pytest.raises(TypeError, match="summary must be the DataFrame"):
        plot_study(frame)
    with pytest.raises(ValueError, match="metrics must be one of"):
        plot_study(summarize(frame), ("accuracy",))
    table = pd.DataFrame({"f_score": [0.7, 0.6], "f_score (paper)": [0.64, np.nan]},
                         index=pd.MultiIndex.from_tuples([("cora", "alg4"), ("cora", "mm")],
                                                         names=["dataset", "method"]))
    ax = plot_ours_vs_paper(table).axes[0]
    assert "1 entries" in ax.get_title()
    with pytest.raises(ValueError, match="'recall \\(paper\\)'"):
        plot_ours_vs_paper(table, "recall")


@pytest.mark.slow
@pytest.mark.reproduction
def test_cli_reproduce_small(tmp_path):
    # about two minutes: every table on subsets and every figure with two runs
    assert main(["reproduce", "crowd", "--scale", "small", "--out", str(tmp_path),
                 "--no-progress"]) == 0
    assert (tmp_path / "index.html").is_file() and (tmp_path / "metrics.json").is_file()
