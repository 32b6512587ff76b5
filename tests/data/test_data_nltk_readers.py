"""The NLTK corpus loaders against nltk's own corpus readers on the shared files.

The loaders read the files by hand (see :mod:`pyromodels.data.nltk_sets` for why); where the
nltk package is installed, its readers over the same zip files must give the same sentences and
tags, in both the corpus tagset and the universal one.
"""

from __future__ import annotations

import pytest

from pyromodels.data import load_nltk_brown, load_nltk_treebank

nltk = pytest.importorskip("nltk")
from nltk.corpus.reader import (  # noqa: E402 - after the skip
    BracketParseCorpusReader,
    CategorizedTaggedCorpusReader,
)
from nltk.data import ZipFilePathPointer  # noqa: E402

TREEBANK_FILES = [f"wsj_{i:04d}.mrg" for i in (1, 2, 3, 50, 99, 100, 150, 199)]
BROWN_FILES = ["ca01", "cb12", "cg22", "cj05", "cr09"]


@pytest.fixture
def nltk_data(use_shared_data, monkeypatch):
    """The shared ``nltk_data`` folder, the only place nltk may look (it never downloads)."""
    folder = use_shared_data / "nltk_data"
    monkeypatch.setattr(nltk.data, "path", [str(folder)])
    return folder


def _reader_sents(reader, fileids, tagset=None):
    return [list(sent) for sent in reader.tagged_sents(fileids, tagset=tagset)]


@pytest.mark.parametrize("tagset", ["ptb", "universal"])
def test_treebank_equals_nltk_bracket_parse_reader(nltk_data, tagset):
    reader = BracketParseCorpusReader(
        ZipFilePathPointer(str(nltk_data / "corpora" / "treebank.zip"), "treebank/combined/"),
        r"wsj_.*\.mrg", tagset="wsj",
    )
    assert len(reader.fileids()) == 199
    ours = load_nltk_treebank(tagset=tagset, fileids=TREEBANK_FILES).tagged_sents()
    expected = _reader_sents(reader, TREEBANK_FILES, None if tagset == "ptb" else "universal")
    assert len(ours) == len(expected) == 94
    assert ours == expected


@pytest.mark.parametrize("tagset", ["brown", "universal"])
def test_brown_equals_nltk_categorized_tagged_reader(nltk_data, tagset):
    reader = CategorizedTaggedCorpusReader(
        ZipFilePathPointer(str(nltk_data / "corpora" / "brown.zip"), "brown/"),
        r"c[a-z]\d\d", cat_file="cats.txt", tagset="brown", encoding="ascii",
    )
    assert len(reader.fileids()) == 500
    ours = load_nltk_brown(tagset=tagset, fileids=BROWN_FILES).tagged_sents()
    expected = _reader_sents(reader, BROWN_FILES, None if tagset == "brown" else "universal")
    assert len(ours) == len(expected) > 200
    assert ours == expected
