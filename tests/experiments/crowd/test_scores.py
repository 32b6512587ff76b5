"""The paper's scores: per-sequence macro (vs scikit-learn), entity chunks and partial matches
(vs hand counts), and the oracle-selected single best learner."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch
from sklearn.metrics import f1_score, precision_score, recall_score

from pyromodels.data import AnnotationTable, Sequences
from pyromodels.experiments.crowd.inputs.common import CrowdTask, dense_table
from pyromodels.experiments.crowd.scores import (
    entity_chunks,
    score_task,
    sequence_scores,
    single_best,
    worker_scores,
)
from pyromodels.metrics import macro_f1

BIO = ["O", "B-PER", "I-PER", "B-LOC", "I-LOC"]


def _random_sequences(seed, k=5, num=12):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 9, size=num)
    n = int(lengths.sum())
    gold = rng.integers(0, k, size=n)
    pred = np.where(rng.random(n) < 0.6, gold, rng.integers(0, k, size=n))
    return Sequences(torch.zeros(n), lengths), torch.from_numpy(gold), torch.from_numpy(pred)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_sequence_macro_all_classes_matches_sklearn(seed):
    seqs, gold, pred = _random_sequences(seed)
    got = sequence_scores(pred, gold, seqs, "macro", average="sequence", classes="all",
                          num_classes=5)
    kw = {"labels": list(range(5)), "average": "macro", "zero_division": 0}
    pieces = list(zip(seqs.split(gold), seqs.split(pred)))
    assert got.f_score == pytest.approx(np.mean([f1_score(g, p, **kw) for g, p in pieces]),
                                        abs=1e-12)
    assert got.precision == pytest.approx(
        np.mean([precision_score(g, p, **kw) for g, p in pieces]), abs=1e-12)
    assert got.recall == pytest.approx(np.mean([recall_score(g, p, **kw) for g, p in pieces]),
                                       abs=1e-12)
    assert got.num_sequences == seqs.num_sequences and got.num_items == len(gold)
    assert got.accuracy == pytest.approx(float((gold == pred).double().mean()), abs=1e-12)


@pytest.mark.parametrize("seed", [3, 4])
def test_sequence_macro_present_classes_matches_macro_f1(seed):
    seqs, gold, pred = _random_sequences(seed)
    got = sequence_scores(pred, gold, seqs, classes="present", num_classes=5)
    pieces = list(zip(seqs.split(gold), seqs.split(pred)))
    assert got.f_score == pytest.approx(np.mean([macro_f1(g, p) for g, p in pieces]),
                                        abs=1e-12)
    union = [sorted(set(g.tolist()) | set(p.tolist())) for g, p in pieces]
    expected = np.mean([precision_score(g, p, labels=u, average="macro", zero_division=0)
                        for (g, p), u in zip(pieces, union)])
    assert got.precision == pytest.approx(expected, abs=1e-12)


def test_pooled_macro_matches_sklearn_and_ignores_boundaries():
    seqs, gold, pred = _random_sequences(5)
    pooled = sequence_scores(pred, gold, seqs, average="pooled", num_classes=5)
    assert pooled.f_score == pytest.approx(
        f1_score(gold, pred, labels=list(range(5)), average="macro", zero_division=0), abs=1e-12)
    alone = sequence_scores(pred, gold, None, average="sequence", num_classes=5)
    assert alone.f_score == pytest.approx(pooled.f_score, abs=1e-12)
    assert alone.num_sequences == 1


def test_unknown_gold_and_mask_equal_explicit_subsets():
    seqs, gold, pred = _random_sequences(6)
    gold = gold.clone()
    gold[::4] = -1
    mask = torch.arange(len(gold)) % 3 != 0
    got = sequence_scores(pred, gold, seqs, num_classes=5, mask=mask)
    keep = (gold >= 0) & mask
    ids = seqs.sequence_ids()[keep]
    lengths = torch.unique_consecutive(ids, return_counts=True)[1]
    sub = Sequences(torch.zeros(int(keep.sum())), lengths)
    expected = sequence_scores(pred[keep], gold[keep], sub, num_classes=5)
    assert got == expected


def test_entity_scores_by_hand():
    # gold chunks: PER[0:2], LOC[3], PER[5] (an I- after O opens a chunk), LOC[6:8]
    gold = [1, 2, 0, 3, 0, 2, 3, 4]
    # pred chunks: PER[0:2] ok, LOC[3] ok, none at 5, PER[6] and LOC[7] (B-PER I-LOC splits)
    pred = [1, 2, 0, 3, 0, 0, 1, 4]
    chunks = entity_chunks(np.array(gold), np.zeros(8, dtype=np.int64), BIO)
    assert chunks.tolist() == [[0, 1, 0], [3, 3, 1], [5, 5, 0], [6, 7, 1]]
    s = sequence_scores(pred, gold, None, "entity", average="pooled", num_classes=5,
                        class_names=BIO)
    assert (s.precision, s.recall) == (pytest.approx(2 / 4), pytest.approx(2 / 4))
    assert s.f_score == pytest.approx(0.5)
    # a chunk never runs across a sequence boundary (joined, pred would be one PER[0:3])
    seqs = Sequences(torch.zeros(4), [2, 2])
    s = sequence_scores([1, 2, 2, 0], [1, 2, 1, 0], seqs, "entity", average="pooled",
                        num_classes=5, class_names=BIO)
    assert (s.precision, s.recall) == (1.0, 1.0)
    # averaged over sentences: sentence 2 predicts no chunk (its precision is 0/0, left out)
    # and misses its gold chunk (recall 0)
    gold, pred = [1, 2, 1, 0], [1, 2, 0, 0]
    s = sequence_scores(pred, gold, seqs, "entity", average="sequence", num_classes=5,
                        class_names=BIO)
    assert (s.precision, s.recall) == (1.0, 0.5)
    s = sequence_scores(pred, gold, seqs, "entity", average="pooled", num_classes=5,
                        class_names=BIO)
    assert (s.precision, s.recall) == (1.0, 0.5)
    assert s.f_score == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="class_names must be BIO tags"):
        sequence_scores([0, 1], [0, 1], None, "entity", num_classes=2, class_names=["O", "X"])


def _chunks_by_loop(tags, lengths):
    """CoNLL chunking written as the plain left-to-right loop."""
    out, pos = [], 0
    for length in lengths:
        current = None
        for t in range(pos, pos + length):
            name = BIO[tags[t]]
            if name == "O":
                if current:
                    out.append(tuple(current))
                current = None
                continue
            prefix, kind = name.split("-")
            if prefix == "B" or current is None or current[2] != kind:
                if current:
                    out.append(tuple(current))
                current = [t, t, kind]
            else:
                current[1] = t
        if current:
            out.append(tuple(current))
        pos += length
    return out


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_entity_chunks_match_a_plain_loop(seed):
    rng = np.random.default_rng(seed)
    lengths = rng.integers(1, 12, size=15)
    tags = rng.integers(0, 5, size=int(lengths.sum()))
    seq = np.repeat(np.arange(15), lengths)
    got = [(a, b, ["PER", "LOC"][c]) for a, b, c in entity_chunks(tags, seq, BIO).tolist()]
    assert got == _chunks_by_loop(tags, lengths)


def test_partial_match_by_hand():
    seqs = Sequences(torch.zeros(9), [4, 3, 2])
    gold = [1, 1, 1, 0, 0, 1, 0, 0, 0]
    pred = [0, 1, 1, 1, 0, 1, 1, 0, 0]
    # per sequence: (tp, predicted, gold) = (2, 3, 3), (1, 2, 1), (0, 0, 0)
    s = sequence_scores(pred, gold, seqs, "partial_match", num_classes=2)
    p, r = (2 / 3 + 1 / 2) / 2, (2 / 3 + 1) / 2
    assert (s.precision, s.recall) == (pytest.approx(p), pytest.approx(r))
    assert s.f_score == pytest.approx(2 * p * r / (p + r))
    pooled = sequence_scores(pred, gold, seqs, "partial_match", average="pooled",
                             num_classes=2)
    assert (pooled.precision, pooled.recall) == (pytest.approx(3 / 5), pytest.approx(3 / 4))
    literal = sequence_scores(pred, gold, seqs, "partial_match", num_classes=2,
                              paper_literal=True)
    assert literal.recall == pytest.approx((3 / 3 + 2 / 1) / 2)  # 1.5: not a recall
    assert literal.precision == s.precision


def test_bad_inputs():
    with pytest.raises(ValueError, match="scheme must be one of"):
        sequence_scores([0], [0], scheme="micro")
    with pytest.raises(ValueError, match="pred and gold must have the same length"):
        sequence_scores([0, 1], [0], num_classes=2)
    with pytest.raises(ValueError, match="pred must hold a class code"):
        sequence_scores([-1, 1], [0, 1], num_classes=2)
    with pytest.raises(ValueError, match=r"gold must hold codes in \[-1, 1\]"):
        sequence_scores([0, 1], [0, 2], num_classes=2)
    with pytest.raises(ValueError, match="paper_literal applies only"):
        sequence_scores([0, 1], [0, 1], paper_literal=True)
    with pytest.raises(ValueError, match="no item is scored"):
        sequence_scores([0, 1], [-1, -1], num_classes=2)
    with pytest.raises(TypeError, match="pred must be a 1-D array of integer class codes"):
        sequence_scores([0.5, 1.0], [0, 1], num_classes=2)
    with pytest.raises(ValueError, match="sequences must be Sequences over the 2 items"):
        sequence_scores([0, 1], [0, 1], Sequences(torch.zeros(3), [3]), num_classes=2)


def _toy_task():
    """Three workers on 8 items in two sequences; gold unknown on item 7."""
    responses = np.array([[0, 0, 1], [1, 1, -1], [0, 1, -1], [1, 1, -1],
                          [0, 0, 0], [1, 0, 1], [0, 0, 0], [1, 1, 1]])
    table = dense_table(responses, ["a", "b", "c"], ["0", "1"])
    gold = torch.tensor([0, 1, 0, 1, 0, 1, 0, -1])
    return CrowdTask("toy", Sequences(table, [4, 4]), gold, ["0", "1"],
                     metric={"scheme": "macro", "average": "pooled", "classes": "present"})


def test_worker_scores_and_single_best():
    task = _toy_task()
    table = worker_scores(task)
    # a: perfect on 7 scored items; b: 5 of 7; c: items 0, 4, 5, 6 -> 3 of 4 right
    assert table["num_items"].tolist() == [7, 7, 4]
    assert table["accuracy"].tolist() == pytest.approx([1.0, 5 / 7, 3 / 4])
    assert table.loc["b", "f_score"] == pytest.approx(
        f1_score([0, 1, 0, 1, 0, 1, 0], [0, 1, 1, 1, 0, 0, 0], average="macro"))
    best = single_best(task)
    assert best.worker == "a" and best.scores.f_score == 1.0 and best.scores.num_items == 7
    with pytest.raises(ValueError, match="no learner labelled at least min_items=8"):
        single_best(task, min_items=8)


def test_single_best_breaks_ties_by_coverage():
    # both workers perfect; "late" labelled more items, so it wins despite coming second
    frame = pd.DataFrame({"task": [0, 1, 0, 1, 2, 3], "worker": ["early"] * 2 + ["late"] * 4,
                          "label": [0, 1, 0, 1, 0, 1]})
    table = AnnotationTable.from_dataframe(frame, items=pd.RangeIndex(4))
    task = CrowdTask("tie", table, torch.tensor([0, 1, 0, 1]), ["0", "1"],
                     metric={"scheme": "macro", "average": "pooled", "classes": "present"})
    assert single_best(task).worker == "late"
    assert score_task(task, torch.tensor([0, 1, 1, 1])).accuracy == 0.75
