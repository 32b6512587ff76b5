r"""Real-data inputs of the ensemble paper's Table I (sequential) and Table II (networked).

Every builder returns a :class:`~pyromodels.experiments.crowd.inputs.common.CrowdTask`:

=============  ==================================  =====  ======  ========================
task           builder                             K      M       structure
=============  ==================================  =====  ======  ========================
pos            :func:`build_pos`                   12     10      3,914 sentences
ner            :func:`build_ner`                   9      47      5,985 sentences
bioie          :func:`build_bioie`                 2      120     4,740 abstracts
cora           :func:`build_planetoid`             7      10      citation graph
citeseer       :func:`build_planetoid`             6      10      citation graph
pubmed         :func:`build_planetoid`             3      10      citation graph
music_genre    :func:`build_music_genre`           10     44      3-NN feature graph
=============  ==================================  =====  ======  ========================

(sizes at ``scale="paper"``). :func:`build_task` builds any of them by name, and
:func:`~pyromodels.experiments.crowd.scores.score_task` scores predicted labels the
way the paper scored that task. The paper's own numbers are in
:mod:`pyromodels.experiments.crowd.paper_numbers`.

Example:
    >>> task = build_task("ner", scale="small")  # doctest: +SKIP
    >>> task.summary()["M"], task.summary()["K"]  # doctest: +SKIP
    (47, 9)
"""

from __future__ import annotations

import re
import time
from functools import partial

import numpy as np
import pandas as pd
import torch

from ....checks import check_in, check_int
from ....data import load_conll_ner_crowd, load_pico, spans_to_tokens
from ....data.text_sets import SpanAnnotations
from .common import CrowdTask, check_scale, restrict_sequences
from .graphs import build_music_genre, build_planetoid
from .pos import build_pos

__all__ = ["CrowdTask", "build_pos", "build_ner", "build_bioie", "build_planetoid",
           "build_music_genre", "build_task", "TASK_NAMES", "PICO_SPLITS",
           "SMALL_NER_SENTENCES", "top_annotators"]

PICO_SPLITS = ("train", "dev", "test", "acl17-test")
SMALL_NER_SENTENCES = 500
_TOKEN_PATTERN = r"\w+|[^\w\s]"  # the default of spans_to_tokens


def build_ner(scale: str = "small", path=None) -> CrowdTask:
    """The NER task of Table I: 47 workers' BIO tags on CoNLL-2003 sentences.

    Uses the 5,985 sentences (79,901 tokens) that at least one worker tagged; the paper
    reports 5,916 sentences and 78,107 words for the same release (its preprocessing is not
    described). Scored at the entity level (exact span and type, CoNLL style, pooled over the
    corpus) with F the harmonic mean of P and R: the paper's MV row (0.79 / 0.59 / 0.68)
    matches the strict entity-level scores that Nguyen et al. (2017) report for this data.

    Args:
        scale: ``"paper"``: every annotated sentence; ``"small"``: the first
            :data:`SMALL_NER_SENTENCES` of them (learners without a label there are dropped).
        path: the ``conll2003_ner_crowd`` folder (default ``$PYROMODELS_DATA``).
    """
    check_scale(scale)
    start = time.perf_counter()
    data = load_conll_ner_crowd(path=path, annotated_only=True)
    sequences, gold = data.sequences, data.gold
    if scale == "small":
        keep = np.arange(sequences.num_sequences) < SMALL_NER_SENTENCES
        sequences, gold = restrict_sequences(sequences, gold, keep)
    table = sequences.data
    notes = (f"{sequences.num_sequences} CoNLL-2003 sentences ({sequences.total_length} tokens) "
             f"tagged by {table.num_workers} MTurk workers (Rodrigues et al. 2014); a worker's "
             "tags are kept where they align with the gold tokens. Entity-level scoring.")
    return CrowdTask("ner", sequences, gold.long(), [str(c) for c in table.classes],
                     notes=notes, metric={"scheme": "entity", "average": "pooled"},
                     info={"seconds": time.perf_counter() - start, "scale": scale})


def top_annotators(data: SpanAnnotations, top_workers: int | None,
                   pattern: str = _TOKEN_PATTERN) -> pd.Index:
    """The ``top_workers`` workers with the most token labels (ties: smaller worker id first).

    A worker's label count is the number of tokens (``pattern`` matches) of the documents
    they annotated, which is what :func:`~pyromodels.data.spans_to_tokens` turns into rows.
    ``top_workers=None`` keeps every worker.
    """
    regex = re.compile(pattern)
    tokens = data.docs.map(lambda text: len(regex.findall(text)))
    counts = tokens.reindex(data.annotators["docid"]).groupby(
        data.annotators["worker"].to_numpy()).sum()
    order = sorted(counts.index, key=lambda w: (-int(counts[w]), str(w)))
    if top_workers is None:
        return pd.Index(order)
    top_workers = check_int(top_workers, "top_workers", minimum=1)
    return pd.Index(order[:top_workers])


def build_bioie(scale: str = "small", top_workers: int | None = 120, path=None) -> CrowdTask:
    """The Biomedical IE task of Table I: PICO "participants" spans as token labels.

    Token ``t`` of an abstract is 1 for a worker when one of the worker's spans overlaps it
    (:func:`~pyromodels.data.spans_to_tokens`). As in the paper only the ``top_workers``
    annotators with the most labels are kept. Abstracts left without any kept annotator are
    removed (counted in ``info``). Expert gold exists for the 191 ``acl17-test`` abstracts
    only: ``gold`` is ``-1`` on every other token, so scores are computed on those 191.

    The paper's "5,000 abstracts, 312 annotators" matches the union of the four PICO splits
    (4,740 abstracts, 312 workers). Its "N = 7,880,254 words" cannot count words (about 1.5
    million tokens here); it is of the order of the number of token *labels* (9.0 million
    for all 312 workers, 8.6 million for the top 120, with our tokenisation).

    Args:
        scale: ``"paper"``: all four splits; ``"small"``: ``acl17-test`` only.
        top_workers: annotators to keep (the paper: 120), or ``None`` for all.
        path: the ``pico_nguyen2017`` folder (default ``$PYROMODELS_DATA``).
    """
    check_scale(scale)
    start = time.perf_counter()
    splits = PICO_SPLITS if scale == "paper" else ("acl17-test",)
    parts, merged = _load_splits(splits, path)
    kept_workers = top_annotators(merged, top_workers)
    annotators = merged.annotators[merged.annotators["worker"].isin(kept_workers)]
    spans = merged.spans[merged.spans["worker"].isin(kept_workers)]
    has_worker = merged.docs.index.isin(annotators["docid"])
    docs = merged.docs[has_worker]
    data = spans_to_tokens(SpanAnnotations(merged.split, docs, annotators, spans, None))
    gold = torch.full((data.sequences.total_length,), -1, dtype=torch.long)
    expert = parts[-1] if splits[-1] == "acl17-test" else None
    dropped_gold = 0
    kept = expert.docs.index.isin(docs.index) if expert is not None else None
    if expert is not None:
        dropped_gold = int((~kept).sum())
    if expert is not None and kept.any():
        scored = spans_to_tokens(SpanAnnotations(
            expert.split, expert.docs[kept],
            annotators[annotators["docid"].isin(expert.docs.index)], spans.iloc[:0],
            expert.gold))
        where = data.tokens["docid"].isin(expert.docs.index[kept]).to_numpy()
        if not np.array_equal(data.tokens["start"].to_numpy()[where],
                              scored.tokens["start"].to_numpy()):
            raise ValueError("expert gold tokens do not line up with the crowd tokens")
        gold[torch.from_numpy(where.copy())] = scored.gold
    table = data.annotations
    notes = (f"{len(docs)} PICO abstracts ({'+'.join(splits)}), {data.sequences.total_length} "
             f"tokens, {table.num_workers} annotators (top {top_workers} by label count of "
             f"{merged.annotators['worker'].nunique()}), {table.num_labels} labels; "
             f"{int((gold >= 0).sum())} tokens have expert gold. Partial-match scoring "
             "per abstract (Nguyen et al. 2017), recall with #true-positive words.")
    info = {"seconds": time.perf_counter() - start, "scale": scale, "splits": splits,
            "dropped_documents": int((~has_worker).sum()),
            "dropped_gold_documents": dropped_gold, "top_workers": top_workers}
    return CrowdTask("bioie", data.sequences, gold, [str(c) for c in table.classes],
                     notes=notes, info=info,
                     metric={"scheme": "partial_match", "average": "sequence", "positive": 1})


def _load_splits(splits, path):
    parts = [load_pico(split, path=path) for split in splits]
    merged = SpanAnnotations(
        "+".join(splits), pd.concat([p.docs for p in parts]),
        pd.concat([p.annotators for p in parts], ignore_index=True),
        pd.concat([p.spans for p in parts], ignore_index=True), None,
    )
    return parts, merged


TASK_NAMES = ("pos", "ner", "bioie", "cora", "citeseer", "pubmed", "music_genre")
_BUILDERS = {
    "pos": build_pos, "ner": build_ner, "bioie": build_bioie,
    "cora": partial(build_planetoid, "cora"), "citeseer": partial(build_planetoid, "citeseer"),
    "pubmed": partial(build_planetoid, "pubmed"), "music_genre": build_music_genre,
}


def build_task(name: str, **kwargs) -> CrowdTask:
    """Build the task ``name`` (one of :data:`TASK_NAMES`) with its builder's keyword
    arguments."""
    check_in(name, "name", TASK_NAMES)
    return _BUILDERS[name](**kwargs)
