"""The report page reads top-down: figures first, long notes once, metrics as tables, strict JSON."""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from pyromodels.report import DemoResult, metrics_tables, write_report  # noqa: E402

LONG_REASON = " ".join(["the paper's learners and seeds are not published"] * 8)


def _result(metrics=None, tables=None) -> DemoResult:
    fig, ax = plt.subplots(figsize=(2, 1.5))
    ax.plot([0, 1], [1, 0])
    return DemoResult(name="r", summary="S.", metrics=metrics or {"em": {"ll": -1.0}},
                      tables=tables or {"t": pd.DataFrame({"a": [1.0]})}, figures={"f": fig})


def test_metrics_json_is_strict_json(tmp_path):
    result = _result({"nuts": {"rhat": float("nan"), "ess": float("inf"), "lp": -3.0}})
    write_report([result], tmp_path, "t")
    text = (tmp_path / "metrics.json").read_text(encoding="utf-8")
    assert "NaN" not in text and "Infinity" not in text

    def reject(constant):
        raise ValueError(f"non-standard JSON constant {constant}")

    metrics = json.loads(text, parse_constant=reject)
    assert set(metrics.pop("_report")) == {"run_id", "files", "metrics"}  # the run record (test_atomic.py)
    assert metrics == {"r": {"nuts": {"rhat": None, "ess": None, "lp": -3.0}}}


def test_figures_come_before_tables_and_metrics(tmp_path):
    html = write_report([_result()], tmp_path, "t").read_text(encoding="utf-8")
    section = html[html.index('<section id="r">'):]
    assert section.index("<img") < section.index("<table")
    assert section.index("<h3>Figures</h3>") < section.index("<h3>Tables</h3>")


def test_reason_note_is_written_once_per_table(tmp_path):
    table = pd.DataFrame({"f_score": [0.5, 0.6, 0.7, 0.8],
                          "reason": [LONG_REASON, LONG_REASON, "", "size differs"]},
                         index=["a", "b", "c", "d"])
    html = write_report([_result(tables={"Table I": table})], tmp_path, "t").read_text(
        encoding="utf-8")
    assert html.count(LONG_REASON.replace("'", "&#x27;")) == 1
    assert html.count("size differs") == 1
    # the rows point at their note by number
    assert html.count("<td>[1]</td>") == 2 and html.count("<td>[2]</td>") == 1


def test_nested_metrics_become_one_table_per_group():
    metrics = {"table_i": {"ner": {"mv": {"precision": 0.5, "f_score": 0.4},
                                   "ds": {"precision": 0.6, "f_score": 0.55}},
                           "pos": {"mv": {"precision": 0.7, "f_score": 0.65}}},
               "seconds": {"table_I": 1.5, "total": 3.0},
               "scale": "small"}
    tables = metrics_tables(metrics)
    assert list(tables) == ["table_i", "seconds", "other"]
    assert list(tables["table_i"].index) == ["ner / mv", "ner / ds", "pos / mv"]
    assert list(tables["table_i"].columns) == ["precision", "f_score"]
    assert tables["table_i"].loc["ner / ds", "f_score"] == "0.55"
    assert tables["seconds"]["value"].to_dict() == {"table_I": "1.5", "total": "3"}
    assert tables["other"].loc["scale", "value"] == "small"


def test_page_shows_metric_tables_not_one_row_per_number(tmp_path):
    metrics = {"table_i": {d: {m: {"p": 0.5, "r": 0.5, "f": 0.5} for m in "abcde"}
                           for d in ("x", "y", "z")}}
    html = write_report([_result(metrics)], tmp_path, "t").read_text(encoding="utf-8")
    assert "x / a / p" not in html  # the flat list would have 45 such rows
    assert "<td>x / a</td>" in html or ">x / a</th>" in html


def test_joined_reasons_share_their_notes(tmp_path):
    first, second, third = "Data differ.", "Learners differ.", "Sizes differ."
    table = pd.DataFrame({"f": [0.1, 0.2, 0.3],
                          "reason": [f"{first}; {second}", f"{first}; {third}", first]})
    html = write_report([_result(tables={"T": table})], tmp_path, "t").read_text(
        encoding="utf-8")
    for note in (first, second, third):
        assert html.count(note) == 1
    assert "<td>[1, 2]</td>" in html and "<td>[1, 3]</td>" in html and "<td>[1]</td>" in html
