"""Fixtures for the data tests: where the shared real data sets live, and a majority-vote
oracle written with pandas only."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest


def _shared_data_dir() -> Path:
    # tests/data/conftest.py -> repository root -> its sibling "shared/data"
    return Path(__file__).resolve().parents[2].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """Folder of the shared real data sets, laid out as ``<dataset>/<file>``."""
    return _shared_data_dir()


@pytest.fixture
def use_shared_data(monkeypatch, shared_data) -> Path:
    """Point ``PYROMODELS_DATA`` and ``NLTK_DATA`` at the shared data sets."""
    monkeypatch.setenv("PYROMODELS_DATA", str(shared_data))
    monkeypatch.setenv("NLTK_DATA", str(shared_data / "nltk_data"))
    return shared_data


@pytest.fixture
def no_data_env(monkeypatch, tmp_path) -> Path:
    """An empty ``PYROMODELS_DATA`` folder and no ``NLTK_DATA``."""
    monkeypatch.setenv("PYROMODELS_DATA", str(tmp_path))
    monkeypatch.delenv("NLTK_DATA", raising=False)
    return tmp_path


def _majority_vote_ties_split(items, labels, gold: pd.Series) -> tuple[float, int]:
    """Majority-vote accuracy on the gold items, an item tied between k labels getting 1/k
    credit when gold is among them; also the number of tied gold items."""
    votes = pd.DataFrame({"item": np.asarray(items), "label": np.asarray(labels)})
    counts = votes.groupby(["item", "label"]).size().unstack(fill_value=0)
    counts = counts.loc[counts.index.intersection(gold.index)]
    top = counts.eq(counts.max(axis=1), axis=0).to_numpy()
    col = counts.columns.get_indexer(gold.loc[counts.index])
    hit = np.where(col >= 0, top[np.arange(len(col)), np.maximum(col, 0)], False)
    n_top = top.sum(axis=1)
    return float(np.mean(hit / n_top)), int((n_top > 1).sum())


@pytest.fixture
def majority_vote():
    """``f(items, labels, gold) -> (accuracy with ties split, number of tied items)``."""
    return _majority_vote_ties_split
