"""AnnotationTable: id maps, round trips with the user's ids, summaries and every bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.data import AnnotationTable


@pytest.fixture
def df():
    return pd.DataFrame({
        "task": ["t2", "t1", "t1", "t3", "t2"],
        "worker": ["bob", "alice", "bob", "alice", "carol"],
        "label": ["dog", "cat", "dog", "bird", "dog"],
    })


def test_codes_follow_sorted_ids_and_round_trip(df):
    table = AnnotationTable.from_dataframe(df)
    assert list(table.items) == ["t1", "t2", "t3"]
    assert list(table.workers) == ["alice", "bob", "carol"]
    assert list(table.classes) == ["bird", "cat", "dog"]
    assert table.item_idx.dtype == torch.long
    assert table.item_idx.tolist() == [1, 0, 0, 2, 1]
    assert table.worker_idx.tolist() == [1, 0, 1, 0, 2]
    assert table.label_idx.tolist() == [2, 1, 2, 0, 2]
    assert (table.num_items, table.num_workers, table.num_classes, len(table)) == (3, 3, 3, 5)
    pd.testing.assert_frame_equal(table.to_frame(), df, check_dtype=False)


def test_custom_column_names_and_fixed_orders(df):
    renamed = df.rename(columns={"task": "doc", "worker": "who", "label": "y"})
    table = AnnotationTable.from_dataframe(
        renamed, item="doc", worker="who", label="y", classes=["dog", "cat", "bird", "fish"],
        items=["t3", "t2", "t1", "t0"],
    )
    assert list(table.classes) == ["dog", "cat", "bird", "fish"]
    assert table.label_idx.tolist() == [0, 1, 0, 2, 0]
    # t0 is kept without labels, fish without votes
    assert table.counts_per_item().tolist() == [1, 2, 2, 0]
    assert table.vote_counts()[:, 3].tolist() == [0, 0, 0, 0]
    out = table.to_frame(item="doc", worker="who", label="y")
    pd.testing.assert_frame_equal(out, renamed, check_dtype=False)


def test_results_indexed_by_user_ids(df):
    table = AnnotationTable.from_dataframe(df)
    post = torch.tensor([[0.1, 0.2, 0.7], [0.0, 0.0, 1.0], [0.8, 0.1, 0.1]], dtype=torch.float64)
    frame = table.index_items(post)
    assert list(frame.index) == ["t1", "t2", "t3"] and list(frame.columns) == ["bird", "cat", "dog"]
    assert frame.loc["t3", "bird"] == 0.8
    hard = table.index_items(post.argmax(1), decode=True)
    assert hard.to_dict() == {"t1": "dog", "t2": "dog", "t3": "bird"}
    acc = table.index_workers(np.array([0.5, 0.6, 0.7]))
    assert acc.to_dict() == {"alice": 0.5, "bob": 0.6, "carol": 0.7}
    conf = torch.arange(27, dtype=torch.float64).reshape(3, 3, 3)
    cf = table.index_workers(conf)
    assert cf.index.names == ["worker", "true"]
    assert cf.loc[("carol", "cat"), "dog"] == conf[2, 1, 2].item()
    wide = table.index_items(np.zeros((3, 2)), columns=["a", "b"])
    assert list(wide.columns) == ["a", "b"]


def test_encode_ids_and_unknown_ids(df):
    table = AnnotationTable.from_dataframe(df)
    assert table.encode_workers(["carol", "alice"]).tolist() == [2, 0]
    assert table.encode_items(["t3"]).tolist() == [2]
    assert table.encode_classes(["cat"]).tolist() == [1]
    with pytest.raises(ValueError, match=r"ids holds id\(s\) not in the table's workers: 'dave'"):
        table.encode_workers(["alice", "dave"])
    with pytest.raises(ValueError, match=r"not in the table's classes: 'fish'"):
        table.encode_classes(["fish"])


def test_to_dense_and_counts_match_brute_force(df):
    table = AnnotationTable.from_dataframe(df)
    dense = table.to_dense()
    expected = -np.ones((3, 3), dtype=np.int64)
    for row in df.itertuples():
        i = list(table.items).index(row.task)
        w = list(table.workers).index(row.worker)
        expected[i, w] = list(table.classes).index(row.label)
    np.testing.assert_array_equal(dense.numpy(), expected)
    assert table.to_dense(fill=-7).min().item() == -7
    assert table.counts_per_item().tolist() == [2, 2, 1]
    assert table.counts_per_worker().tolist() == [2, 2, 1]
    votes = table.vote_counts()
    for i in range(3):
        for k in range(3):
            assert votes[i, k].item() == int((expected[i] == k).sum())


def test_from_arrays_sizes_and_to():
    table = AnnotationTable.from_arrays([0, 1, 1], [0, 0, 2], [1, 0, 1])
    assert (table.num_items, table.num_workers, table.num_classes) == (2, 3, 2)
    assert isinstance(table.items, pd.RangeIndex)
    big = AnnotationTable.from_arrays(np.array([0, 1]), [0, 0], [1, 0], num_items=5,
                                      num_workers=2, num_classes=4)
    assert big.counts_per_item().tolist() == [1, 1, 0, 0, 0]
    moved = big.to("cpu")
    assert moved is not big and torch.equal(moved.label_idx, big.label_idx)
    assert moved.device == torch.device("cpu")


def test_allow_repeats_keeps_every_row():
    df = pd.DataFrame({"task": [1, 1, 1], "worker": ["a", "a", "b"], "label": [0, 1, 1]})
    with pytest.raises(ValueError, match=r"1 repeated \(item, worker\) row\(s\).*\(1, 'a'\)"):
        AnnotationTable.from_dataframe(df)
    table = AnnotationTable.from_dataframe(df, allow_repeats=True)
    assert table.vote_counts().tolist() == [[1, 2]]
    with pytest.raises(ValueError, match="to_dense needs at most one label per"):
        table.to_dense()


@pytest.mark.parametrize(
    "change, error, match",
    [
        (lambda d: d.drop(columns="task"), ValueError, r"df is missing column\(s\) \['task'\]"),
        (lambda d: d.iloc[:0], ValueError, "df must not be empty"),
        (lambda d: d.assign(label=["dog", None, "cat", "cat", "dog"]), ValueError,
         r"df\['label'\] has 1 missing value\(s\) \(NaN or None\) at row\(s\) 1"),
        (lambda d: d.assign(worker=[np.nan, "a", "b", "c", "d"]), ValueError,
         r"df\['worker'\] has 1 missing value"),
        (lambda d: pd.concat([d, d.iloc[:1]], ignore_index=True), ValueError,
         r"1 repeated \(item, worker\) row\(s\)"),
    ],
)
def test_bad_dataframes(df, change, error, match):
    with pytest.raises(error, match=match):
        AnnotationTable.from_dataframe(change(df))


def test_bad_arguments(df):
    with pytest.raises(TypeError, match="df must be a pandas DataFrame, got dict"):
        AnnotationTable.from_dataframe(df.to_dict())
    with pytest.raises(ValueError, match=r"df\['label'\] holds id\(s\) not in classes: 'bird'"):
        AnnotationTable.from_dataframe(df, classes=["cat", "dog"])
    with pytest.raises(ValueError, match=r"classes must hold unique ids; repeated: 'cat'"):
        AnnotationTable.from_dataframe(df, classes=["cat", "dog", "bird", "cat"])
    with pytest.raises(ValueError, match="fill must not be a class code in"):
        AnnotationTable.from_dataframe(df).to_dense(fill=0)
    with pytest.raises(ValueError, match=r"values must have 3 rows \(one per id\)"):
        AnnotationTable.from_dataframe(df).index_items(np.zeros(4))
    with pytest.raises(ValueError, match=r"values must have shape \(3, 3, 3\)"):
        AnnotationTable.from_dataframe(df).index_workers(np.zeros((3, 2, 2)))


def test_bad_codes():
    with pytest.raises(ValueError, match=r"item_idx must lie in \[0, 1\] \(num_items=2\), found 2"):
        AnnotationTable.from_arrays([0, 2], [0, 0], [0, 0], num_items=2)
    with pytest.raises(ValueError, match="worker_idx must be non-negative integer labels"):
        AnnotationTable.from_arrays([0, 1], [-1, 0], [0, 0])
    with pytest.raises(TypeError, match="label_idx must hold integer labels"):
        AnnotationTable.from_arrays([0, 1], [0, 0], [0.5, 1.0])
    with pytest.raises(ValueError, match="must have the same length, got 2, 2 and 3"):
        AnnotationTable.from_arrays([0, 1], [0, 0], [0, 1, 1])
    with pytest.raises(ValueError, match="item_idx must not be empty"):
        AnnotationTable.from_arrays([], [], [])
    with pytest.raises(ValueError, match="num_classes must be an integer >= 1"):
        AnnotationTable.from_arrays([0], [0], [0], num_classes=0)


def test_item_is_a_synonym_of_the_task_column(df):
    renamed = df.rename(columns={"task": "item"})
    table = AnnotationTable.from_dataframe(renamed)
    reference = AnnotationTable.from_dataframe(df)
    assert list(table.items) == list(reference.items)
    assert table.item_idx.tolist() == reference.item_idx.tolist()
    # a column named explicitly is never replaced, and "task" wins over "item"
    with pytest.raises(ValueError, match=r"missing column\(s\) \['question'\]"):
        AnnotationTable.from_dataframe(renamed, item="question")
    both = df.assign(item=["x"] * 5)
    assert list(AnnotationTable.from_dataframe(both).items) == ["t1", "t2", "t3"]


def test_the_facade_reads_an_item_column(df):
    from pyromodels.crowd.estimators import DawidSkeneEstimator

    labels = DawidSkeneEstimator(n_iter=5).fit_predict(df.rename(columns={"task": "item"}))
    assert sorted(labels.index) == ["t1", "t2", "t3"]


def test_crowd_files_read_answers_gold_and_sequences(tmp_path):
    from pyromodels.data.crowd_files import (
        CrowdColumns,
        order_by_sequence,
        read_answers,
        read_gold,
    )

    path = tmp_path / "a.csv"
    pd.DataFrame({"q": [1, 2], "who": ["u", "v"], "y": [0, 1], "s": ["b", "a"],
                  "pos": [0, 0]}).to_csv(path, index=False)
    answers = read_answers(path, CrowdColumns("q", "who", "y"))
    assert answers.columns.tolist() == ["task", "worker", "label"]
    with pytest.raises(ValueError, match=r"no column\(s\) \['task', 'worker', 'label'\]"):
        read_answers(path)
    tasks, lengths = order_by_sequence(answers, pd.Series(["b", "a"]), pd.Series([0, 0]))
    assert tasks.tolist() == [2, 1] and lengths == [1, 1]
    with pytest.raises(ValueError, match="two tasks share position 0 of sequence 'a'"):
        order_by_sequence(answers, pd.Series(["a", "a"]), pd.Series([0, 0]))
    gold = tmp_path / "g.csv"
    gold.write_text("item,label\n1,0\n1,1\n")
    with pytest.raises(ValueError, match=r"gold lists task\(s\) \[1\] more than once"):
        read_gold(gold)
    (tmp_path / "empty.csv").write_text("")
    with pytest.raises(ValueError, match="the file is empty"):
        read_gold(tmp_path / "empty.csv")


@pytest.mark.parametrize(
    "header, first, rejected",
    [(["", "x"], [0, 1, 2], True), (["Unnamed: 0", "x"], [5, 1, 2], True),
     (["index", "x"], [0, 1, 2], True), (["index", "x"], [0.5, 1, 2], False),
     (["a", "x"], [0, 1, 2], False), (None, [0, 1, 2], False)],
)
def test_saved_index_columns_are_recognised(header, first, rejected):
    from pyromodels.data.index_columns import check_no_index_column

    if rejected:
        with pytest.raises(ValueError, match=r"f.csv: its first column .* saved pandas index"):
            check_no_index_column(header, first, "f.csv")
    else:
        check_no_index_column(header, first, "f.csv")


def test_label_statistics_in_one_c_pass_equal_the_three_scatters(monkeypatch):
    from pyromodels.data import annotations

    g = torch.Generator().manual_seed(3)
    table = AnnotationTable.from_arrays(torch.randint(0, 40, (300,), generator=g),
                                        torch.randint(0, 9, (300,), generator=g),
                                        torch.randint(0, 4, (300,), generator=g),
                                        num_items=45, num_workers=10, num_classes=5,
                                        allow_repeats=True)
    per_item, per_worker, pairs = table.label_statistics()
    assert annotations.c_table_passes() is not None  # the C pass ran
    monkeypatch.setattr(annotations, "c_table_passes", lambda: None)
    scattered = table.label_statistics()
    for got, want in zip((per_item, per_worker, pairs), scattered, strict=True):
        assert got.dtype == want.dtype and torch.equal(got, want)
    assert torch.equal(per_item, table.counts_per_item())
    assert pairs.shape == (5, 10) and not bool(pairs[4].any())  # class 4 never given
    assert pairs.sum() == len({(int(k), int(m)) for k, m in zip(table.label_idx,
                                                                 table.worker_idx)})


def test_the_c_label_statistics_refuse_codes_out_of_range():
    from pyromodels.data.idmaps import c_table_passes

    codes = np.array([0, 1, 2])
    out = np.empty(3, dtype=np.int64), np.empty(3, dtype=np.int64), np.empty((3, 3), np.uint8)
    with pytest.raises(ValueError, match="outside"):
        c_table_passes().label_statistics(3, 3, 3, codes, codes, codes + 1, *out)
    with pytest.raises(ValueError, match="one length"):
        c_table_passes().label_statistics(3, 3, 3, codes, codes, codes[:2], *out)
