"""PairwiseAnnotations: id maps shared by i and j, round trips, bad inputs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

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
    out = pairs.to_frame("i", "j")  # the short column names are read, the defaults written
    assert list(pairs.to_frame().columns) == ["item_a", "item_b", "worker", "link"]
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


# ---------------------------------------------------------------- the user-facing DataFrame


@pytest.fixture
def long_df():
    """Judgements in the default columns, with a non-default row index (errors name it)."""
    return pd.DataFrame({
        "item_a": ["x1", "x2", "x3", "x1", "x4"],
        "item_b": ["x2", "x3", "x1", "x4", "x2"],
        "worker": [7, 7, 9, 9, 9],
        "link": [1, 0, 0, 1, 1],
    }, index=[10, 11, 12, 13, 14])


def test_dataframe_round_trip_with_items_and_custom_columns(long_df):
    feature_rows = ["x0", "x1", "x2", "x3", "x4", "x5"]  # x0 and x5 are never judged
    pairs = PairwiseAnnotations.from_dataframe(long_df, items=feature_rows, workers=[9, 7, 8])
    assert list(pairs.items) == feature_rows and list(pairs.workers) == [9, 7, 8]
    assert pairs.i_idx.tolist() == [1, 2, 3, 1, 4] and pairs.j_idx.tolist() == [2, 3, 1, 4, 2]
    assert pairs.counts_per_worker().tolist() == [3, 2, 0]
    back = pairs.to_frame()
    pd.testing.assert_frame_equal(back, long_df.reset_index(drop=True))
    again = PairwiseAnnotations.from_dataframe(back, items=pairs.items, workers=pairs.workers)
    for field in ("i_idx", "j_idx", "worker_idx", "link"):
        assert torch.equal(getattr(again, field), getattr(pairs, field))

    renamed = long_df.rename(columns={"item_a": "left", "item_b": "right", "worker": "annotator",
                                      "link": "same"})
    custom = PairwiseAnnotations.from_dataframe(renamed, "left", "right", "annotator", "same")
    pd.testing.assert_frame_equal(custom.to_frame("left", "right", "annotator", "same"),
                                  renamed.reset_index(drop=True))
    floats = long_df.assign(link=long_df["link"].astype(float))  # 1.0 and 0.0 are links
    assert PairwiseAnnotations.from_dataframe(floats).link.tolist() == [1, 0, 0, 1, 1]


@pytest.mark.parametrize("keep, rows", [("first", [0, 1, 2, 3]), ("last", [1, 2, 3, 4])])
def test_duplicates_keep_one_judgement_when_asked(long_df, keep, rows):
    # row 14 repeats row 10's pair (x1, x2) for worker 7, swapped and with the other link
    df = pd.concat([long_df, pd.DataFrame({"item_a": ["x2"], "item_b": ["x1"], "worker": [7],
                                           "link": [0]}, index=[15])]).iloc[[0, 1, 2, 3, 5]]
    pairs = PairwiseAnnotations.from_dataframe(df, duplicates=keep)
    assert pairs.to_frame().equals(df.iloc[rows].reset_index(drop=True))


@pytest.mark.parametrize(
    "change, match",
    [
        (lambda d: d.assign(item_b=["x2", "x3", "x3", "x4", "x2"]),
         r"^df\['item_a'\] and df\['item_b'\] must name two different items in every row: 1 "
         r"row\(s\) pair an item with itself, e.g. row 12 \(item 'x3'\)$"),
        (lambda d: d.assign(link=[1, 2, "yes", 0.5, 1]),
         r"^df\['link'\] must hold 0/1 links, found \[2, 'yes', 0\.5\] at row\(s\) \[11, 12, "
         r"13\] \(1 = must link, 0 = cannot link; booleans are read as 1/0\)$"),
        (lambda d: d.assign(link=[1, 0, np.nan, 1, 1]),
         r"^df\['link'\] has 1 missing value\(s\) \(NaN or None\) at row\(s\) 12; drop or fill "
         r"those rows first$"),
        (lambda d: d.assign(item_b=["x2", None, "x1", "x4", "x2"]),
         r"^df\['item_b'\] has 1 missing value\(s\) \(NaN or None\) at row\(s\) 11"),
        (lambda d: d.assign(worker=[7, 7, 9, 9, np.nan]), r"^df\['worker'\] has 1 missing value"),
        (lambda d: d.assign(item_a=["x1", "x2", "x3", "x1", "x1"], worker=[7, 7, 9, 9, 7]),
         r"^1 repeated \(pair, worker\) row\(s\): worker 7 judged the pair \('x1', 'x2'\) in "
         r"rows 10, 14 of df \(the order of item_a and item_b does not matter\)\. Drop the "
         r"repeats, or pass duplicates='first' or duplicates='last' to keep one judgement per "
         r"pair and worker$"),
    ],
)
def test_dataframe_errors_name_the_column_and_rows(long_df, change, match):
    with pytest.raises(ValueError, match=match):
        PairwiseAnnotations.from_dataframe(change(long_df))


def test_dataframe_argument_errors(long_df):
    with pytest.raises(ValueError, match=r"^df\['item_a'\] and df\['item_b'\] holds id\(s\) "
                                         r"not in items: 'x4'$"):
        PairwiseAnnotations.from_dataframe(long_df, items=["x1", "x2", "x3"])
    with pytest.raises(ValueError, match=r"^df\['worker'\] holds id\(s\) not in workers: 9$"):
        PairwiseAnnotations.from_dataframe(long_df, workers=[7])
    with pytest.raises(ValueError, match=r"^duplicates must be one of \['raise', 'first', "
                                         r"'last'\], got 'drop'$"):
        PairwiseAnnotations.from_dataframe(long_df, duplicates="drop")
    with pytest.raises(ValueError, match=r"^item_a and item_b must name different columns, got "
                                         r"'item_a' for both$"):
        PairwiseAnnotations.from_dataframe(long_df, item_b="item_a")
    with pytest.raises(ValueError, match=r"^worker and link must name different columns, got "
                                         r"'w' for both$"):
        PairwiseAnnotations.from_dataframe(long_df).to_frame(worker="w", link="w")
    with pytest.raises(ValueError, match=r"^df is missing column\(s\) \['item_b'\]; .* Name the "
                                         r"right columns with item_b=$"):
        PairwiseAnnotations.from_dataframe(long_df.drop(columns="item_b"))
