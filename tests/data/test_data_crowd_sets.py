"""Vendored crowd sets and animals against the shared originals and their documented statistics."""

from __future__ import annotations

import gzip

import numpy as np
import pandas as pd
import pytest
import scipy.io
import torch

from pyromodels.data import (
    AnnotationTable,
    list_crowd_datasets,
    load_animals,
    load_crowd,
    load_ducks_species,
)
from pyromodels.data.paths import files_dir

# name: (items, workers, labels, gold rows, classes, MV ties split (4 d.p.), tied gold items)
# -- the figures of each set's PROVENANCE.md in the shared data folder
CROWD_STATS = {
    "rte": (800, 164, 8000, 800, [0, 1], 0.8969, 65),
    "temp": (462, 76, 4620, 462, [1, 2], 0.9361, 17),
    "bluebirds": (108, 39, 4212, 108, [0, 1], 0.7593, 0),
    "ducks": (240, 53, 9600, 240, [0, 1], 0.6875, 6),
    "dog": (807, 109, 8070, 807, [0, 1, 2, 3], 0.8222, 50),
    "web": (2665, 177, 15567, 2653, [1, 2, 3, 4, 5], 0.7307, 567),
    "product": (8315, 176, 24945, 8315, [0, 1], 0.8966, 0),
    "adult": (11040, 825, 92721, 1517, ["G", "P", "R", "X"], 0.7598, 11),
    "face": (584, 27, 5242, 584, [0, 1, 2, 3], 0.6367, 28),
    "music_genre": (700, 44, 2945, 700, ["blues", "classical", "country", "disco", "hiphop",
                                         "jazz", "metal", "pop", "reggae", "rock"], 0.7042, 188),
}
# the 3-decimal majority-vote figures of the shared data README
README_MV = {"rte": 0.897, "temp": 0.936, "bluebirds": 0.759, "ducks": 0.688, "dog": 0.822,
             "web": 0.731, "product": 0.897, "adult": 0.760, "face": 0.637, "music_genre": 0.704}


def test_list_crowd_datasets():
    assert set(list_crowd_datasets()) == set(CROWD_STATS)


@pytest.mark.parametrize("name", sorted(CROWD_STATS))
def test_crowd_set_statistics_and_majority_vote(name, majority_vote):
    items, workers, labels, gold_rows, classes, mv, tied = CROWD_STATS[name]
    answers, gold = load_crowd(name)
    assert list(answers.columns) == ["task", "worker", "label"]
    assert answers.shape == (labels, 3)
    assert answers["task"].nunique() == items
    assert answers["worker"].nunique() == workers
    assert sorted(answers["label"].unique().tolist()) == classes
    assert gold.shape == (gold_rows,) and gold.name == "label" and gold.index.name == "task"
    assert gold.index.is_unique
    assert set(gold.unique().tolist()) <= set(classes)
    acc, n_tied = majority_vote(answers["task"], answers["label"], gold)
    assert abs(acc - mv) <= 5e-5  # the provenance figure is rounded to 4 decimals
    assert abs(acc - README_MV[name]) <= 5e-4
    assert n_tied == tied


@pytest.mark.parametrize("name", sorted(CROWD_STATS))
def test_vendored_copies_equal_shared_originals(name, shared_data):
    for stem in ("answers", "gold"):
        shared = shared_data / name / f"{stem}.csv"
        original = shared.read_bytes() if shared.exists() else gzip.decompress(
            (shared_data / name / f"{stem}.csv.gz").read_bytes())
        vendored = gzip.decompress((files_dir() / "crowd" / name / f"{stem}.csv.gz").read_bytes())
        assert vendored == original


def test_vendored_folder_is_small():
    total = sum(p.stat().st_size for p in files_dir().rglob("*") if p.is_file())
    assert total < 3 * 1024**2


def test_label_leaks_documented_in_data():
    # the leaks the docstring warns about are really there
    answers, gold = load_crowd("product")
    assert (gold.index.str.rsplit("_", n=1).str[-1].astype(int) == gold).all()
    answers, gold = load_crowd("music_genre")
    assert (gold.index.str.split(".").str[0] == gold).all()


def test_ducks_species_and_derived_gold():
    species = load_ducks_species()
    _, gold = load_crowd("ducks")
    assert species.shape == (240, 3)
    duck = species["species_name"].isin(["Mallard", "American Black Duck"]).astype(int)
    pd.testing.assert_series_equal(duck.sort_index(), gold.sort_index(), check_names=False)


@pytest.mark.parametrize("name", ["bluebirds", "music_genre", "web"])
def test_crowd_sets_build_tables_and_vote_counts_match_pandas(name):
    answers, _ = load_crowd(name)
    table = AnnotationTable.from_dataframe(answers)
    assert table.num_labels == len(answers)
    oracle = pd.crosstab(answers["task"], answers["label"]).reindex(
        index=table.items, columns=table.classes, fill_value=0)
    assert torch.equal(table.vote_counts(), torch.tensor(oracle.to_numpy()))
    # rows keep their order, ids come back as the user's own
    pd.testing.assert_frame_equal(table.to_frame(), answers, check_dtype=False)


def test_adult_repeats_need_allow_repeats():
    answers, _ = load_crowd("adult")
    with pytest.raises(ValueError, match=r"2922 repeated \(item, worker\) row\(s\)"):
        AnnotationTable.from_dataframe(answers)
    table = AnnotationTable.from_dataframe(answers, allow_repeats=True)
    assert (table.num_items, table.num_workers, table.num_labels) == (11040, 825, 92721)
    with pytest.raises(ValueError, match="at most one label per"):
        table.to_dense()


def test_unknown_crowd_set():
    with pytest.raises(ValueError, match=r"name must be one of \['rte'"):
        load_crowd("imagenet")


EXPECTED_ANIMALS = {
    "Elephant", "Rhino", "Horse", "Cow", "Camel", "Giraffe", "Gorilla", "Chimp", "Mouse",
    "Squirrel", "Tiger", "Cat", "Dog", "Wolf", "Lion", "Seal", "Dolphin", "Robin", "Eagle",
    "Chicken", "Salmon", "Trout", "Bee", "Iguana", "Alligator", "Butterfly", "Ant", "Finch",
    "Penguin", "Cockroach", "Whale", "Ostrich", "Deer",
}


def test_animals_match_the_mat_file_and_statistics(shared_data):
    animals = load_animals()
    assert animals.shape == (33, 102)
    assert set(animals.index) == EXPECTED_ANIMALS
    assert list(animals.index[6:8]) == ["Chimp", "Gorilla"]  # differs from the BHMC table
    mat = scipy.io.loadmat(shared_data / "animals" / "animals.mat")
    np.testing.assert_array_equal(animals.to_numpy(), mat["data"].astype(np.int64))
    assert list(animals.index) == [str(c[0][0]) for c in mat["names"]]
    assert list(animals.columns) == [str(c[0][0]) for c in mat["features"]]
    values = animals.to_numpy()
    assert set(np.unique(values)) == {0, 1}
    assert round(values.mean(), 3) == 0.307
    assert (values.min(0) != values.max(0)).all()  # no constant column
    assert not animals.duplicated().any()
    assert animals.T.duplicated().sum() == 11


def test_vendored_animals_equal_shared_files(shared_data):
    src = shared_data / "animals"
    dst = files_dir() / "animals"
    assert gzip.decompress((dst / "animals_data.csv.gz").read_bytes()) == (
        src / "animals_data.csv").read_bytes()
    for name in ("animal_names.txt", "feature_names.txt"):
        assert (dst / name).read_bytes() == (src / name).read_bytes()


def test_missing_vendored_file_says_reinstall(monkeypatch, tmp_path):
    import pyromodels.data.paths as paths

    monkeypatch.setattr(paths, "files_dir", lambda: tmp_path)
    with pytest.raises(FileNotFoundError, match=(
            r"vendored data file .*crowd/rte/answers.csv.gz is missing: the pyromodels "
            r"installation is incomplete; reinstall the package")):
        load_crowd("rte")


def test_unset_data_folder_is_reported(monkeypatch):
    from pyromodels.data import load_planetoid

    monkeypatch.delenv("PYROMODELS_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match=r"in \$PYROMODELS_DATA/pubmed \(not set\)\."):
        load_planetoid("pubmed")
