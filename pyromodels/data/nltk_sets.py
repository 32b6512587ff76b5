"""Part-of-speech tagged corpora from an ``nltk_data`` folder, read without the nltk package.

The files are NLTK's own packages: ``corpora/treebank.zip`` (the 10 % Penn Treebank sample,
WSJ files wsj_0001-wsj_0199), ``corpora/brown.zip`` and ``taggers/universal_tagset.zip``
(Petrov, Das & McDonald's maps to 12 universal tags); the unpacked folders
(``corpora/treebank/`` ...) work too. The folder is searched at ``path`` (an ``nltk_data``
folder), then ``$PYROMODELS_DATA/nltk_data``, then each folder in ``$NLTK_DATA``. Both
corpora are licensed for non-commercial use only.

Why not ``nltk.corpus.reader``: nltk's ``BracketParseCorpusReader`` (treebank) and
``CategorizedTaggedCorpusReader`` (Brown) over the same zip files give the same sentences and
tags (the data tests check this where nltk is installed), but the loaders are part of the core
package, which must load these corpora without nltk (nltk is only in the ``experiments`` extra,
and a test pins that loading imports neither it nor mlxtend). The readers are also slower
here: about 6 times on the treebank (nltk builds a ``Tree`` per sentence) and 2 times on Brown.
The formats read are simple: the tags of the treebank are its pre-terminals ``(TAG word)``,
and Brown has one sentence of ``word/tag`` tokens per non-blank line.
"""

from __future__ import annotations

import re
import zipfile
from dataclasses import dataclass
from itertools import repeat
from operator import itemgetter
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from ..checks import check_in
from .paths import ENV_VAR, env_roots, locate
from .sequences import Sequences

__all__ = ["TaggedCorpus", "load_nltk_treebank", "load_nltk_brown", "load_universal_tagset_map",
           "UNIVERSAL_TAGS"]

UNIVERSAL_TAGS = ("ADJ", "ADP", "ADV", "CONJ", "DET", "NOUN", "NUM", "PRON", "PRT", "VERB",
                  ".", "X")
_PRETERMINAL = re.compile(r"\(([^\s()]+)\s+([^\s()]+)\)")


@dataclass(frozen=True, eq=False)
class TaggedCorpus:
    """Tagged sentences, one row per token.

    Attributes:
        tokens: DataFrame with columns ``fileid`` (categorical), ``sentence`` (running
            sentence number), ``position`` (within the sentence), ``word``, ``tag``
            (categorical over ``tagset``).
        sequences: ``Sequences`` of tag codes (long tensor ``(T,)``), one sequence per
            sentence.
        tagset: the tags (sorted); code ``k`` means ``tagset[k]``.
    """

    tokens: pd.DataFrame
    sequences: Sequences
    tagset: pd.Index

    def tagged_sents(self) -> list[list[tuple[str, str]]]:
        """Sentences as lists of ``(word, tag)`` pairs (NLTK's ``tagged_sents`` layout)."""
        pairs = list(zip(self.tokens["word"], self.tokens["tag"]))
        bounds = self.sequences.offsets.tolist()
        return [pairs[a:b] for a, b in zip(bounds[:-1], bounds[1:])]


def _locate_package(kind: str, name: str, path, what: str) -> Path:
    return locate(
        [f"{kind}/{name}.zip", f"{kind}/{name}"], path=path, subdir="nltk_data", what=what,
        how_to_get=(
            f"Pass path= an nltk_data folder, set {ENV_VAR} to a folder holding nltk_data/, or "
            f"set NLTK_DATA; the package can be fetched once with "
            f"`python -m nltk.downloader {name}` (needs `pip install nltk` and a network)."
        ),
        extra=[("$NLTK_DATA", env_roots("NLTK_DATA"))],
    )


def _read_members(package: Path, pattern: str, encoding: str = "ascii") -> dict[str, str]:
    """Text of the package members whose name (``<package>/<relative path>``) matches."""
    regex = re.compile(pattern)
    out = {}
    if package.is_file():
        with zipfile.ZipFile(package) as zf:
            for name in zf.namelist():
                if regex.fullmatch(name):
                    out[name] = zf.read(name).decode(encoding)
    else:
        for file in package.rglob("*"):
            name = f"{package.name}/{file.relative_to(package).as_posix()}"
            if file.is_file() and regex.fullmatch(name):
                out[name] = file.read_text(encoding=encoding)
    if not out:
        raise ValueError(f"{package} holds no file matching {pattern!r}")
    return dict(sorted(out.items()))


def load_universal_tagset_map(source: str, path=None) -> dict[str, str]:
    """The map from ``"en-ptb"`` or ``"en-brown"`` tags to the 12 universal tags.

    Tags absent from the map are mapped to ``"X"`` by the loaders below, as NLTK does (in the
    treebank this concerns only ``-NONE-``, the empty elements).
    """
    check_in(source, "source", ("en-ptb", "en-brown"))
    package = _locate_package("taggers", "universal_tagset", path, "universal tagset maps")
    text = _read_members(package, rf"universal_tagset/{source}\.map")
    mapping = {}
    for line in next(iter(text.values())).splitlines():
        if line.strip():
            fine, coarse = line.strip().split("\t")
            if coarse not in UNIVERSAL_TAGS:
                raise ValueError(f"{source}.map maps {fine!r} to unknown tag {coarse!r}")
            mapping[fine] = coarse
    return mapping


class _Flat:
    """Sentences gathered flat: file of each sentence, lengths, all words, all tags."""

    def __init__(self):
        self.files, self.lengths, self.words, self.tags = [], [], [], []

    def add(self, fileid: str, lengths: list[int], words: list[str], tags: list[str]) -> None:
        """Append one file: sentence lengths and the words and tags of all its sentences."""
        self.files.extend([fileid] * len(lengths))
        self.lengths.extend(lengths)
        self.words.extend(words)
        self.tags.extend(tags)


def _build(flat: _Flat, tagset: str, source: str, path, normalise=None) -> TaggedCorpus:
    """Assemble a corpus; ``normalise`` maps each raw tag (e.g. upper-casing)."""
    lengths = np.asarray(flat.lengths, dtype=np.int64)
    if int(lengths.sum()) != len(flat.words):
        raise ValueError("sentence lengths do not add up to the number of tokens")
    words = np.empty(len(flat.words), dtype=object)
    words[:] = flat.words
    codes, tags = pd.factorize(np.asarray(flat.tags, dtype=object), sort=True)
    mapping = None
    if normalise is not None:
        mapping = {t: normalise(t) for t in tags}
    if tagset == "universal":
        coarse = load_universal_tagset_map(source, path)
        before = mapping or {t: t for t in tags}
        mapping = {t: coarse.get(u, "X") for t, u in before.items()}
    if mapping is not None:  # recode through the distinct tags only
        recode, tags = pd.factorize(np.array([mapping[t] for t in tags], dtype=object), sort=True)
        codes = recode[codes]
    file_codes, files = pd.factorize(np.asarray(flat.files, dtype=object))
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]])
    tokens = pd.DataFrame({
        "fileid": pd.Categorical.from_codes(np.repeat(file_codes, lengths), categories=files),
        "sentence": np.repeat(np.arange(len(lengths)), lengths),
        "position": np.arange(len(words)) - np.repeat(starts, lengths),
        "word": pd.Series(words, dtype=object),
        "tag": pd.Categorical.from_codes(codes, categories=tags),
    })
    return TaggedCorpus(tokens, Sequences(torch.from_numpy(codes.astype(np.int64)), lengths),
                        pd.Index(tags))


def _select(texts: dict[str, str], fileids, corpus: str) -> dict[str, str]:
    by_id = {name.rsplit("/", 1)[-1]: text for name, text in texts.items()}
    if fileids is None:
        return by_id
    unknown = [f for f in fileids if f not in by_id]
    if unknown:
        raise ValueError(f"fileids holds names that are not {corpus} files: {unknown[:5]}")
    return {f: by_id[f] for f in fileids}


def load_nltk_treebank(path=None, tagset: str = "ptb", fileids=None) -> TaggedCorpus:
    """The NLTK 10 % Penn Treebank sample: 199 files, 3,914 sentences, 100,676 tokens.

    Tags are read from the parse trees (``combined/*.mrg``) as NLTK's
    ``treebank.tagged_sents()`` does, empty elements (tag ``-NONE-``, 6,592 tokens)
    included.

    Args:
        path: ``nltk_data`` folder (see the module docstring for the search order).
        tagset: ``"ptb"`` (46 tags) or ``"universal"`` (12 tags; ``-NONE-`` -> ``X``).
        fileids: optional list of file names (``"wsj_0001.mrg"`` ...) to read.

    Example:
        >>> corpus = load_nltk_treebank(tagset="universal")  # doctest: +SKIP
        >>> corpus.tagged_sents()[0][:2]  # doctest: +SKIP
        [('Pierre', 'NOUN'), ('Vinken', 'NOUN')]
    """
    check_in(tagset, "tagset", ("ptb", "universal"))
    package = _locate_package("corpora", "treebank", path, "Penn Treebank sample (NLTK)")
    texts = _select(_read_members(package, r"treebank/combined/wsj_\d+\.mrg"), fileids,
                    "treebank")
    flat = _Flat()
    for fileid, text in texts.items():
        for tree in _top_level_trees(text, fileid):
            pairs = _PRETERMINAL.findall(tree)
            flat.add(fileid, [len(pairs)], [w for _, w in pairs], [t for t, _ in pairs])
    return _build(flat, tagset, "en-ptb", path)


def _top_level_trees(text: str, fileid: str) -> list[str]:
    trees, depth, start = [], 0, None
    for m in re.finditer(r"[()]", text):
        if m.group() == "(":
            if depth == 0:
                start = m.start()
            depth += 1
        else:
            depth -= 1
            if depth < 0:
                raise ValueError(f"{fileid}: unbalanced ')' at character {m.start()}")
            if depth == 0:
                trees.append(text[start:m.end()])
    if depth:
        raise ValueError(f"{fileid}: unbalanced '(' at the end of the file")
    return trees


def load_nltk_brown(path=None, tagset: str = "brown", fileids=None) -> TaggedCorpus:
    """The Brown corpus: 500 files, 57,340 sentences, 1,161,192 tokens.

    Each non-blank line of a file is a sentence of ``word/tag`` tokens; the word is split
    from the tag at the last ``/`` and the tag is upper-cased, as NLTK does (472 distinct
    tags such as ``NN-TL`` or ``PPSS+BEM``).

    Args:
        path: ``nltk_data`` folder.
        tagset: ``"brown"`` or ``"universal"`` (12 tags).
        fileids: optional list of file names (``"ca01"`` ...) to read.
    """
    check_in(tagset, "tagset", ("brown", "universal"))
    package = _locate_package("corpora", "brown", path, "Brown corpus (NLTK)")
    texts = _select(_read_members(package, r"brown/c[a-z]\d\d"), fileids, "Brown")
    flat = _Flat()
    for fileid, text in texts.items():
        tokens = text.split()
        parts = list(map(str.rpartition, tokens, repeat("/")))
        if not all(map(itemgetter(1), parts)):
            bad = next(t for t, p in zip(tokens, parts) if not p[1])
            raise ValueError(f"{fileid}: token {bad!r} is not of the form word/tag")
        lengths = [n for n in map(len, map(str.split, text.splitlines())) if n]
        flat.add(fileid, lengths, list(map(itemgetter(0), parts)),
                 list(map(itemgetter(2), parts)))
    return _build(flat, tagset, "en-brown", path, normalise=str.upper)
