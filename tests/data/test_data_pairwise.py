"""PairwiseAnnotations: id maps shared by i and j, round trips, bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from pyromodels.data import PairwiseAnnotations


@pytest.fixture
def df():
    return pd.DataFrame({
        "i": ["img3", "img1", "img2", "img1"],
        "j": ["img1", "img2", "img3", "img3"],
        "worker": ["u2", "u1", "u1", "u1"],
        "link": [1, 0, True, False],
    })


def test_round_trip_with_string_ids(df):
    pairs = PairwiseAnnotations.from_dataframe(df)
    assert list(pairs.items) == ["img1", "img2", "img3"]
    assert list(pairs.workers) == ["u1", "u2"] and pairs.worker_idx.tolist() == [1, 0, 0, 0]
    assert pairs.i_idx.tolist() == [2, 0, 1, 0] and pairs.j_idx.tolist() == [0, 1, 2, 2]
    assert pairs.link.tolist() == [1, 0, 1, 0]
    assert (pairs.num_items, pairs.num_workers, pairs.num_pairs) == (3, 2, 4)
    out = pairs.to_frame()
    pd.testing.assert_frame_equal(out, df.assign(link=df["link"].astype(int)), check_dtype=False)
    assert pairs.index_items(np.array([0.1, 0.2, 0.3]))["img3"] == 0.3
    assert pairs.index_workers(np.array([[1, 2], [3, 4]]), columns=["a", "b"]).loc["u2", "b"] == 4
    assert pairs.encode_workers(["u2"]).tolist() == [1]
    with pytest.raises(ValueError, match=r"not in the workers: 'u9'"):
        pairs.encode_workers(["u9"])


def test_from_arrays_and_to():
    pairs = PairwiseAnnotations.from_arrays([0, 1], [1, 3], [0, 0], [1, 0])
    assert (pairs.num_items, pairs.num_workers) == (4, 1)
    assert pairs.to("cpu").link.tolist() == [1, 0]


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.assign(link=[1, 2, 0, 0]), r"df\['link'\] must hold 0/1 links, found \[2\]"),
        (lambda d: d.assign(j=["img1", "img2", "img3", "img1"]),
         r"1 row\(s\) pair an item with itself, e.g. row 3 \(item 'img1'\)"),
        (lambda d: d.assign(worker=["u2", "u1", "u1", "u2"]),
         r"1 repeated \(pair, worker\) row\(s\): worker 'u2' judged the pair \('img1', 'img3'\)"),
        (lambda d: d.assign(i=["img3", None, "img2", "img1"]),
         r"df\['i'\] has 1 missing value\(s\)"),
        (lambda d: d.assign(link=[1, np.nan, 0, 0]), r"df\['link'\] has 1 missing value"),
        (lambda d: d.drop(columns="worker"), r"df is missing column\(s\) \['worker'\]"),
    ],
)
def test_bad_pairs(df, change, match):
    with pytest.raises(ValueError, match=match):
        PairwiseAnnotations.from_dataframe(change(df))


def test_bad_codes():
    with pytest.raises(ValueError, match=r"link must lie in \[0, 1\] for 2 classes, found 3"):
        PairwiseAnnotations.from_arrays([0], [1], [0], [3])
    with pytest.raises(ValueError, match=r"j_idx must lie in \[0, 2\] \(num_items=3\), found 4"):
        PairwiseAnnotations.from_arrays([0], [4], [0], [1], num_items=3)
    with pytest.raises(ValueError, match=r"must have the same length, got \[2, 2, 1, 2\]"):
        PairwiseAnnotations.from_arrays([0, 1], [1, 2], [0], [1, 0], num_workers=1)
