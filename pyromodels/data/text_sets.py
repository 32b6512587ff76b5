"""Crowd labels on text: CoNLL-2003 NER crowd tags and PICO participant spans.

Both are read from where the user keeps them (``path`` or ``$PYROMODELS_DATA``); the Reuters
text of CoNLL-2003 is for research and testing only and is not shipped with the package.
Token-level data come back as :class:`CrowdTokenData`: the tokens of all sequences
concatenated, an :class:`~pyromodels.data.annotations.AnnotationTable` whose items are the
tokens in that order, and a :class:`~pyromodels.data.sequences.Sequences` giving sentence /
document boundaries.
"""

from __future__ import annotations

import gzip
import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..checks import check_in
from .annotations import AnnotationTable
from .paths import ENV_VAR, locate
from .sequences import Sequences

__all__ = ["CrowdTokenData", "SpanAnnotations", "NER_TAGS", "load_conll_ner_crowd",
           "load_pico", "spans_to_tokens"]

NER_TAGS = ("O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC", "B-MISC", "I-MISC")
_PICO_SPLITS = ("train", "dev", "test", "acl17-test")


@dataclass(frozen=True, eq=False)
class CrowdTokenData:
    """Crowd labels on the tokens of many sequences.

    Attributes:
        annotations: AnnotationTable whose item ``t`` is token ``t`` of the concatenation.
        sequences: ``Sequences(annotations, lengths)``: one sequence per sentence / document.
        gold: long tensor ``(T,)`` of class codes (in ``annotations.classes``), or ``None``.
        tokens: DataFrame with one row per token: ``sequence``, ``position``, ``token`` and
            the source's own columns (sentence / document ids, character offsets, gold tag).
    """

    annotations: AnnotationTable
    sequences: Sequences
    gold: torch.Tensor | None
    tokens: pd.DataFrame


def _token_data(tokens: pd.DataFrame, rows: pd.DataFrame, classes, lengths, gold):
    table = AnnotationTable.from_dataframe(
        rows, item="item", worker="worker", label="label", classes=list(classes),
        items=pd.RangeIndex(len(tokens)),
    )
    gold_codes = None if gold is None else table.encode_classes(gold)
    return CrowdTokenData(table, Sequences(table, lengths), gold_codes, tokens)


def _read_jsonl(path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def load_conll_ner_crowd(path=None, annotated_only: bool = True) -> CrowdTokenData:
    """CoNLL-2003 NER crowd labels (Rodrigues, Pereira, Ribeiro 2014), token level.

    47 Mechanical Turk workers tagged sentences of 399 Reuters articles with BIO tags over
    PER, LOC, ORG, MISC (9 classes, :data:`NER_TAGS`). A worker's tags are kept for a sentence
    only when they align token by token with the gold sentence. With
    ``annotated_only=True`` the 5,985 sentences (79,901 tokens) that have at least one
    worker are returned; otherwise all 6,253 gold sentences (82,958 tokens).

    Reads ``conll2003_ner_crowd/sentences_aligned.jsonl.gz`` from ``path`` (that folder, or
    the file) or ``$PYROMODELS_DATA``. Licence: the text is Reuters RCV1 (research use).

    Returns:
        :class:`CrowdTokenData` with ``tokens`` columns ``sequence``, ``position``,
        ``split`` (val / test), ``doc``, ``sent``, ``token``, ``gold`` (tag).

    Example:
        >>> data = load_conll_ner_crowd()  # doctest: +SKIP
        >>> data.annotations.num_workers, data.sequences.num_sequences  # doctest: +SKIP
        (47, 5985)
    """
    file = "sentences_aligned.jsonl.gz"
    found = locate(
        [file], path=path, subdir="conll2003_ner_crowd", what="CoNLL-2003 NER crowd labels",
        how_to_get=(
            f"Set {ENV_VAR} to a folder holding conll2003_ner_crowd/{file} (JSON lines "
            '{"split", "doc", "sent", "tokens", "gold", "annotations": {worker: tags}} built '
            "from the Rodrigues et al. 2014 release), or pass path= that folder."
        ),
    )
    tok_cols = {k: [] for k in ("sequence", "position", "split", "doc", "sent", "token", "gold")}
    items, workers, labels, lengths = [], [], [], []
    for record in _read_jsonl(found):
        if annotated_only and not record["annotations"]:
            continue
        n, start, seq = len(record["tokens"]), len(tok_cols["token"]), len(lengths)
        if len(record["gold"]) != n:
            raise ValueError(f"{found}: sentence {record['doc']}/{record['sent']} has "
                             f"{n} tokens but {len(record['gold'])} gold tags")
        for worker, tags in record["annotations"].items():
            if len(tags) != n:
                raise ValueError(f"{found}: worker {worker} has {len(tags)} tags for the "
                                 f"{n} tokens of sentence {record['doc']}/{record['sent']}")
            items.extend(range(start, start + n))
            workers.extend([worker] * n)
            labels.extend(tags)
        tok_cols["sequence"].extend([seq] * n)
        tok_cols["position"].extend(range(n))
        for key in ("split", "doc", "sent"):
            tok_cols[key].extend([record[key]] * n)
        tok_cols["token"].extend(record["tokens"])
        tok_cols["gold"].extend(record["gold"])
        lengths.append(n)
    tokens = pd.DataFrame(tok_cols)
    rows = pd.DataFrame({"item": items, "worker": workers, "label": labels})
    return _token_data(tokens, rows, NER_TAGS, lengths, tokens["gold"])


@dataclass(frozen=True, eq=False)
class SpanAnnotations:
    """Character spans marked by crowd workers (and optionally an expert) in documents.

    Attributes:
        split: the split's name.
        docs: Series ``docid -> text`` of the split's documents, in file order.
        annotators: DataFrame ``docid, worker``: one row per (document, worker) annotation,
            including annotations with no span.
        spans: DataFrame ``docid, worker, start, end``: character offsets (code points) into
            the text, ``end`` exclusive.
        gold: DataFrame ``docid, start, end`` of expert spans, or ``None``; when given, every
            document has expert judgement (a document without a row has no gold span).
    """

    split: str
    docs: pd.Series
    annotators: pd.DataFrame
    spans: pd.DataFrame
    gold: pd.DataFrame | None


def load_pico(split: str = "acl17-test", path=None) -> SpanAnnotations:
    """PICO "Participants" spans from the crowd (Nguyen et al. 2017) on PubMed RCT abstracts.

    ==========  =====  =======  ===========  ======  =====
    split       docs   workers  annotations  spans   gold
    ==========  =====  =======  ===========  ======  =====
    train       3,549  309      21,267       58,969  no
    dev         500    197      3,046        8,399   no
    test        500    208      2,951        8,238   no
    acl17-test  191    91       1,165        3,312   yes
    ==========  =====  =======  ===========  ======  =====

    Reads ``pico_nguyen2017/annotations/<split>/*.json.gz`` and ``docs.jsonl.gz`` from
    ``path`` (the ``pico_nguyen2017`` folder) or ``$PYROMODELS_DATA``. Use
    :func:`spans_to_tokens` for token-level labels.
    """
    check_in(split, "split", _PICO_SPLITS)
    how = (f"Set {ENV_VAR} to a folder holding pico_nguyen2017/ (annotations/<split>/"
           "PICO-annos-*.json.gz and docs.jsonl.gz from the PICO-data release of Nguyen et al. "
           "2017), or pass path= that folder.")

    def find(name):
        return locate([name], path=path, subdir="pico_nguyen2017", what=f"PICO file {name}",
                      how_to_get=how)

    crowd = _read_jsonl(find(f"annotations/{split}/PICO-annos-crowdsourcing.json.gz"))
    order = [r["docid"] for r in crowd]
    texts, wanted = {}, set(order)
    for record in _read_jsonl(find("docs.jsonl.gz")):
        if record["docid"] in wanted:
            texts[record["docid"]] = record["text"]
    missing = [d for d in order if d not in texts]
    if missing:
        raise ValueError(f"docs.jsonl.gz lacks the text of {len(missing)} document(s), "
                         f"e.g. {missing[:3]}")
    docs = pd.Series([texts[d] for d in order], index=pd.Index(order, name="docid"), name="text")
    annotators = [(r["docid"], w) for r in crowd for w in r["Participants"]]
    spans = [(r["docid"], w, s, e) for r in crowd for w, ss in r["Participants"].items()
             for s, e in ss]
    gold = None
    if split == "acl17-test":
        expert = _read_jsonl(find(f"annotations/{split}/PICO-annos-professional.json.gz"))
        gold = [(r["docid"], s, e) for r in expert for ss in r["Participants"].values()
                for s, e in ss]
        gold = pd.DataFrame(gold, columns=["docid", "start", "end"])
        _check_offsets(gold, docs, "gold")
    spans = pd.DataFrame(spans, columns=["docid", "worker", "start", "end"])
    _check_offsets(spans, docs, "spans")
    return SpanAnnotations(split, docs, pd.DataFrame(annotators, columns=["docid", "worker"]),
                           spans, gold)


def _check_offsets(spans: pd.DataFrame, docs: pd.Series, name: str) -> None:
    length = docs.str.len().reindex(spans["docid"]).to_numpy()
    bad = ~((spans["start"].to_numpy() >= 0) & (spans["start"].to_numpy() < spans["end"])
            & (spans["end"].to_numpy() <= length))
    if bad.any():
        raise ValueError(f"{name} has {int(bad.sum())} span(s) outside their document, e.g. "
                         f"{spans[bad].iloc[0].to_dict()}")


def spans_to_tokens(data: SpanAnnotations, pattern: str = r"\w+|[^\w\s]") -> CrowdTokenData:
    r"""Token-level binary labels from spans: 1 when the token overlaps a marked span.

    Each document is tokenised with the regular expression ``pattern``; token :math:`[a, b)`
    is positive for a worker when one of the worker's spans :math:`[s, e)` overlaps it
    (:math:`a < e` and :math:`s < b`). Every (document, worker) annotation labels every token
    of its document (with 0 where no span falls), so classes are ``[0, 1]``.

    Returns:
        :class:`CrowdTokenData` with one sequence per document; ``tokens`` has columns
        ``sequence``, ``position``, ``docid``, ``start``, ``end``, ``token``; ``gold`` is set
        when ``data.gold`` is.
    """
    if not isinstance(data, SpanAnnotations):
        raise TypeError(f"data must be SpanAnnotations, got {type(data).__name__}")
    regex = re.compile(pattern)
    spans_of = _group_spans(data.spans, ["docid", "worker"])
    gold_of = {} if data.gold is None else _group_spans(data.gold, ["docid"])
    workers_by_doc = data.annotators.groupby("docid", sort=False)["worker"].agg(list).to_dict()
    tok_cols = {k: [] for k in ("sequence", "position", "docid", "start", "end", "token")}
    items, workers, labels, gold, lengths = [], [], [], [], []
    offset = 0
    for seq, (docid, text) in enumerate(data.docs.items()):
        found = [(m.start(), m.end(), m.group()) for m in regex.finditer(text)]
        if not found:
            raise ValueError(f"document {docid!r} has no token matching {pattern!r}")
        a = np.array([f[0] for f in found])
        b = np.array([f[1] for f in found])
        n = len(found)
        for key, value in (("sequence", np.full(n, seq)), ("position", np.arange(n)),
                           ("docid", np.full(n, docid, dtype=object)), ("start", a),
                           ("end", b), ("token", np.array([f[2] for f in found], dtype=object))):
            tok_cols[key].append(value)
        for worker in workers_by_doc.get(docid, []):
            items.append(np.arange(offset, offset + n))
            workers.append(np.full(n, worker, dtype=object))
            labels.append(_overlap(a, b, spans_of.get((docid, worker))))
        if data.gold is not None:
            gold.append(_overlap(a, b, gold_of.get((docid,))))
        lengths.append(n)
        offset += n
    rows = pd.DataFrame({"item": np.concatenate(items), "worker": np.concatenate(workers),
                         "label": np.concatenate(labels)})
    tokens = pd.DataFrame({k: np.concatenate(v) for k, v in tok_cols.items()})
    gold_labels = None if data.gold is None else np.concatenate(gold)
    return _token_data(tokens, rows, [0, 1], lengths, gold_labels)


def _group_spans(spans: pd.DataFrame, keys: list[str]) -> dict[tuple, np.ndarray]:
    """``{key tuple: (k, 2) array of (start, end)}`` for the rows of each key."""
    bounds = spans[["start", "end"]].to_numpy()
    groups = spans.groupby(keys, sort=False).indices
    return {(k if isinstance(k, tuple) else (k,)): bounds[rows] for k, rows in groups.items()}


def _overlap(a: np.ndarray, b: np.ndarray, spans: np.ndarray | None) -> np.ndarray:
    if spans is None or len(spans) == 0:
        return np.zeros(len(a), dtype=np.int64)
    s, e = spans[None, :, 0], spans[None, :, 1]
    return ((a[:, None] < e) & (s < b[:, None])).any(axis=1).astype(np.int64)
