"""Tables I and II: our scores beside the paper's, with reasons; on small simulated tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pyromodels.core.seeding import derive_seed
from pyromodels.data import WorkerPopulation, simulate_networked_annotations, simulate_sequential_annotations
from pyromodels.experiments.crowd import paper_numbers as paper
from pyromodels.experiments.crowd.inputs.common import CrowdTask
from pyromodels.experiments.crowd.scores import score_task, single_best
from pyromodels.experiments.crowd.tables import (
    _NOTES,
    TOLERANCE,
    MethodSettings,
    networked_estimates,
    paper_table,
    reasons,
    sequential_estimates,
    task_options,
)

FAST = MethodSettings(mm_max_iter=50, em_max_iter=50, mrf_max_iter=10)


@pytest.fixture(scope="module")
def pos_like():
    # a sequential task under the name "pos", so that the paper's POS row is looked up
    seqs, truth = simulate_sequential_annotations([30] * 10,
                                                  WorkerPopulation(6, force_dominant=True), 3,
                                                  stickiness=0.4, seed=3)
    classes = [str(c) for c in seqs.data.classes]
    return CrowdTask("pos", seqs, truth["z"].long(), classes,
                     metric={"scheme": "macro", "average": "sequence", "classes": "all"})


@pytest.fixture(scope="module")
def cora_like():
    table, graph, truth = simulate_networked_annotations(300,
                                                         WorkerPopulation(5, force_dominant=True),
                                                         3, mean_degree=4.0, seed=3)
    return CrowdTask("cora", table, truth["z"].long(), [str(c) for c in table.classes],
                     graph=graph, metric={"scheme": "macro", "average": "pooled",
                                          "classes": "present"})


def test_table_i_rows_equal_direct_scores_and_carry_the_paper(pos_like):
    table, sizes = paper_table("I", ["pos"], FAST, seed=0, tasks={"pos": pos_like})
    assert list(table.index) == [("pos", m) for m in paper.TABLE_I_METHODS]
    assert sizes["pos"] == pos_like.summary()
    for metric in ("precision", "recall", "f_score"):
        np.testing.assert_array_equal(table[f"{metric} (paper)"].to_numpy(),
                                      [paper.TABLE_I["pos"]["scores"][metric][m]
                                       for m in paper.TABLE_I_METHODS])
    # each row is the task's own score of that method's labels (same seed derivation)
    est = sequential_estimates(pos_like.sequences, ("mv", "mv_alg1"), FAST,
                               seed=derive_seed(0, "pos"))
    for method, e in est.items():
        assert table.loc[("pos", method), "f_score"] == score_task(pos_like, e.labels).f_score
    best = single_best(pos_like).scores
    assert table.loc[("pos", "single_best"), "recall"] == best.recall
    # a reason exactly where some metric is more than TOLERANCE from the paper's
    for (_, method), row in table.iterrows():
        gap = max(abs(row[m] - row[f"{m} (paper)"]) for m in ("precision", "recall", "f_score"))
        assert bool(row["reason"]) == (gap > TOLERANCE), method
        if row["reason"]:
            assert "POS: the paper's taggers" in row["reason"]


def test_table_ii_graph_methods_beat_majority_vote(cora_like):
    table, _ = paper_table("II", ["cora"], FAST, seed=0, tasks={"cora": cora_like})
    assert list(table.index) == [("cora", m) for m in paper.TABLE_II_METHODS]
    assert list(table.columns) == ["f_score", "f_score (paper)", "accuracy", "seconds", "reason"]
    np.testing.assert_array_equal(table["f_score (paper)"].to_numpy(),
                                  [paper.TABLE_II["cora"]["f_score"][m]
                                   for m in paper.TABLE_II_METHODS])
    f = table["f_score"].droplevel("dataset")
    # 300 items on a graph of mean degree 4 whose edges mostly join items of one class: the
    # neighbours' labels fix most of majority vote's errors (margin: 2 binomial sds of a
    # difference of two accuracies on 300 items)
    assert f["alg4"] > f["mv"] + 2 * math.sqrt(2 * 0.25 / 300)
    assert f["mv_alg3"] > f["mv"] + 2 * math.sqrt(2 * 0.25 / 300)
    assert "different learners" in table.loc[("cora", "mv"), "reason"]
    assert np.isnan(table.loc[("cora", "single_best"), "seconds"])
    direct = networked_estimates(cora_like.table, cora_like.graph, ("mv",), FAST,
                                 seed=derive_seed(0, "cora"))["mv"]
    assert f["mv"] == score_task(cora_like, direct.labels).f_score


def test_every_note_resolves_to_one_paper_entry():
    for dataset, method in _NOTES:
        notes = reasons(dataset, method or "mv")
        assert notes and all(isinstance(n, str) and n for n in notes)
    ner = reasons("ner", "single_best", scored=68, paper_n=78_107)
    assert any(n.startswith("Table I, NER, single best") for n in ner)
    assert any("'*'" in n for n in ner) and ner[-1] == "we score 68 items, the paper's N is 78,107"
    assert not any("'*'" in n for n in reasons("cora", "single_best"))
    assert reasons("pubmed", "ds", scored=19_000, paper_n=19_717)[-1].startswith("different")


def test_task_options_and_bad_arguments():
    assert task_options("pos", "small") == {"scale": "small"}
    assert task_options("ner", "medium") == {"scale": "paper"}
    assert task_options("bioie", "medium") == {"scale": "small"}
    assert task_options("bioie", "paper") == {"scale": "paper"}
    assert task_options("cora", "paper") == {}
    with pytest.raises(ValueError, match="scale must be one of"):
        task_options("pos", "huge")
    with pytest.raises(ValueError, match="kind must be one of"):
        paper_table("III")
    with pytest.raises(ValueError, match="names must be one of"):
        paper_table("I", ["cora"])
    with pytest.raises(TypeError, match="names must be a sequence of names"):
        paper_table("II", "cora")
