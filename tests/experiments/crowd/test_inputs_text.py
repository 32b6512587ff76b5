"""Table I text tasks: CoNLL NER crowd tags and PICO spans, and whole-sequence subsets."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.data import AnnotationTable, Graph, Sequences, load_pico, spans_to_tokens
from pyromodels.data.text_sets import NER_TAGS
from pyromodels.experiments.crowd.inputs.builders import (
    SMALL_NER_SENTENCES,
    TASK_NAMES,
    build_bioie,
    build_ner,
    build_task,
    top_annotators,
)
from pyromodels.experiments.crowd.inputs.common import CrowdTask, restrict_sequences
from pyromodels.experiments.crowd.scores import entity_chunks, score_task

DATA = Path(__file__).resolve().parents[3].parent / "shared" / "data"
NER = DATA / "conll2003_ner_crowd"
PICO = DATA / "pico_nguyen2017"


@pytest.fixture(scope="module")
def ner_paper():
    return build_ner(scale="paper", path=NER)


def test_ner_paper_scale_sizes(ner_paper):
    # the release's annotated sentences (the paper reports 5,916 sentences / 78,107 words)
    assert ner_paper.summary() == {"name": "ner", "N": 79_901, "M": 47, "K": 9,
                                   "labels": ner_paper.table.num_labels, "scored": 79_901,
                                   "sequences": 5_985}
    assert ner_paper.classes == list(NER_TAGS)
    assert ner_paper.metric == {"scheme": "entity", "average": "pooled"}


def test_ner_small_is_the_first_sentences(ner_paper):
    small = build_ner(scale="small", path=NER)
    n = SMALL_NER_SENTENCES
    lengths = ner_paper.sequences.lengths[:n]
    assert small.sequences.lengths.tolist() == lengths.tolist()
    total = int(lengths.sum())
    assert torch.equal(small.gold, ner_paper.gold[:total])
    full = ner_paper.table.to_frame()
    expected = full[full["task"] < total]
    assert sorted(map(tuple, small.table.to_frame().to_numpy().tolist())) == sorted(
        map(tuple, expected.to_numpy().tolist()))
    # learners without a label in the subset are dropped, the others keep their order
    assert list(small.table.workers) == [w for w in ner_paper.table.workers
                                         if w in set(expected["worker"])]


def test_restrict_sequences_by_hand():
    # three sequences (2, 1, 2 items); worker "b" labels only the middle one
    table = AnnotationTable.from_dataframe(pd.DataFrame({
        "task": [0, 1, 2, 3, 4, 0, 2], "worker": ["a"] * 5 + ["c", "b"],
        "label": [0, 1, 1, 0, 1, 1, 0]}), items=pd.RangeIndex(5))
    seqs = Sequences(table, [2, 1, 2])
    sub, gold = restrict_sequences(seqs, torch.tensor([0, 1, -1, 1, 0]), [True, False, True])
    assert sub.lengths.tolist() == [2, 2] and gold.tolist() == [0, 1, 1, 0]
    assert list(sub.data.workers) == ["a", "c"]
    assert sub.data.to_dense().tolist() == [[0, 1], [1, -1], [0, -1], [1, -1]]
    with pytest.raises(ValueError, match=r"keep must have shape \(3,\)"):
        restrict_sequences(seqs, gold, [True, False])
    with pytest.raises(ValueError, match="keep must select at least one sequence"):
        restrict_sequences(seqs, gold, [False, False, False])


@pytest.fixture(scope="module")
def bioie_small():
    return build_bioie(scale="small", path=PICO)


def test_bioie_small_is_the_expert_split(bioie_small):
    raw = load_pico("acl17-test", path=PICO)
    tokens = spans_to_tokens(raw)
    assert bioie_small.summary() == {"name": "bioie", "N": 56_934, "M": 91, "K": 2,
                                     "labels": tokens.annotations.num_labels,
                                     "scored": 56_934, "sequences": 191}
    assert torch.equal(bioie_small.gold, tokens.gold)
    assert bioie_small.classes == ["0", "1"]
    assert bioie_small.info["dropped_documents"] == 0
    assert bioie_small.metric == {"scheme": "partial_match", "average": "sequence",
                                  "positive": 1}


def test_bioie_keeps_the_workers_with_most_labels(bioie_small):
    task = build_bioie(scale="small", top_workers=10, path=PICO)
    counts = pd.Series(bioie_small.table.counts_per_worker().numpy(),
                       index=bioie_small.table.workers)
    ranked = sorted(counts.index, key=lambda w: (-counts[w], str(w)))
    assert set(task.table.workers) == set(ranked[:10])
    assert list(top_annotators(load_pico("acl17-test", path=PICO), 10)) == ranked[:10]
    # judgements of the kept workers are unchanged; documents without them are removed
    dropped = task.info["dropped_documents"]
    assert dropped == 191 - task.sequences.num_sequences and dropped > 0
    assert int((task.gold >= 0).sum()) == task.num_items
    assert task.table.num_labels == int(counts[ranked[:10]].sum())


def test_gold_as_prediction_scores_one(ner_paper, bioie_small):
    for task in (ner_paper, bioie_small):
        scores = score_task(task, task.gold)
        assert (scores.precision, scores.recall, scores.f_score) == (1.0, 1.0, 1.0)
    # NER: every gold chunk opens with B-X, or with I-X where the release's sentence split
    # cut an entity (48 such sentence starts)
    names = np.asarray(ner_paper.classes)[ner_paper.gold.numpy()]
    seq = ner_paper.sequences.sequence_ids().numpy()
    chunks = entity_chunks(ner_paper.gold.numpy(), seq, ner_paper.classes)
    first = np.r_[True, seq[1:] != seq[:-1]]
    cut = first & np.char.startswith(names.astype(str), "I-")
    assert len(chunks) == int(np.char.startswith(names.astype(str), "B-").sum()) + int(cut.sum())
    assert int(cut.sum()) == 48


def test_crowd_task_checks_its_parts(bioie_small):
    table = bioie_small.table
    with pytest.raises(TypeError, match="gold must be a 1-D long tensor"):
        CrowdTask("x", table, bioie_small.gold.double(), ["0", "1"])
    with pytest.raises(ValueError, match=r"gold must hold codes in \[-1, 1\]"):
        CrowdTask("x", table, bioie_small.gold + 1, ["0", "1"])
    with pytest.raises(ValueError, match=r"classes must be the table's class names \[0, 1\]"):
        CrowdTask("x", table, bioie_small.gold, ["O", "P"])
    with pytest.raises(ValueError, match="graph has 2 nodes but the table has 56934 items"):
        CrowdTask("x", table, bioie_small.gold, ["0", "1"], graph=Graph.from_edges([[0, 1]], 2))
    with pytest.raises(TypeError, match="eval_mask must be a bool tensor"):
        CrowdTask("x", table, bioie_small.gold, ["0", "1"], eval_mask=torch.ones(3))
    with pytest.raises(TypeError, match="sequences_or_table must be Sequences or an"):
        CrowdTask("x", torch.ones(3), bioie_small.gold, ["0", "1"])


def test_build_task_dispatches():
    assert TASK_NAMES == ("pos", "ner", "bioie", "cora", "citeseer", "pubmed", "music_genre")
    assert build_task("ner", scale="small", path=NER).num_classes == 9
    with pytest.raises(ValueError, match="name must be one of"):
        build_task("sentence_polarity")


@pytest.mark.slow
@pytest.mark.reproduction
def test_bioie_paper_scale():
    task = build_bioie(scale="paper", path=PICO)
    assert task.summary()["M"] == 120 and task.summary()["sequences"] == 4740
    assert int((task.gold >= 0).sum()) == 56_934
