"""Properties of the long-table contracts (AnnotationTable, PairwiseAnnotations).

Random valid tables round-trip: the codes map back to the user's ids row for row, the id
indexes are the sorted distinct ids (or the lists given, in their order), and the summaries
count what the rows say. Random invalid ones raise ValueError or TypeError naming the
argument or column at fault, never anything else.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.data import AnnotationTable, PairwiseAnnotations

PROFILE = settings.get_profile("properties")

# one id type per column: small ints (the dense coding path), ints of any size (the hashing
# path), short strings, or pairs (the guide allows any hashable id)
ID_KINDS = {
    "small": st.integers(-20, 40),
    "wide": st.integers(-(2**62), 2**62),
    "text": st.text("abcxyz-_", min_size=1, max_size=4),
    "pair": st.tuples(st.integers(0, 3), st.sampled_from(["u", "v"])),
}


def unique_ids(kind: str, min_size: int, max_size: int):
    return st.lists(ID_KINDS[kind], min_size=min_size, max_size=max_size, unique=True)


@st.composite
def long_tables(draw, id_kinds=("small", "wide", "text", "pair")):
    """``(df, items, workers, classes)``: a long table over the drawn id lists, each (item,
    worker) pair at most once, rows in a random order."""
    items = draw(unique_ids(draw(st.sampled_from(id_kinds)), 1, 6))
    workers = draw(unique_ids(draw(st.sampled_from(id_kinds)), 1, 5))
    classes = draw(unique_ids(draw(st.sampled_from(("small", "text"))), 1, 4))
    pairs = [(i, w) for i in range(len(items)) for w in range(len(workers))]
    chosen = draw(st.lists(st.sampled_from(pairs), min_size=1, max_size=len(pairs), unique=True))
    labels = draw(st.lists(st.integers(0, len(classes) - 1), min_size=len(chosen),
                           max_size=len(chosen)))
    df = pd.DataFrame({
        "task": pd.Series([items[i] for i, _ in chosen], dtype=object),
        "worker": pd.Series([workers[w] for _, w in chosen], dtype=object),
        "label": pd.Series([classes[k] for k in labels], dtype=object),
    })
    for col in df.columns:  # plain int64 columns where the ids are ints, as users have them
        if all(isinstance(v, int) for v in df[col]):
            df[col] = df[col].astype(np.int64)
    return df, items, workers, classes


def as_list(index) -> list:
    return [tuple(v) if isinstance(v, tuple) else v for v in index.tolist()]


def rows_of(df: pd.DataFrame) -> list:
    return [tuple(r) for r in df.itertuples(index=False)]


@PROFILE
@given(long_tables())
def test_table_codes_map_back_to_the_rows(case):
    df, _, _, _ = case
    table = AnnotationTable.from_dataframe(df)
    assert table.num_labels == len(df)
    assert as_list(table.items) == sorted(set(df["task"]))
    assert as_list(table.workers) == sorted(set(df["worker"]))
    assert as_list(table.classes) == sorted(set(df["label"]))
    assert rows_of(table.to_frame()) == rows_of(df)  # same rows, same order


@PROFILE
@given(long_tables())
def test_table_summaries_count_the_rows(case):
    df, _, _, _ = case
    table = AnnotationTable.from_dataframe(df)
    items, workers, classes = as_list(table.items), as_list(table.workers), as_list(table.classes)
    per_item = df["task"].value_counts()
    assert table.counts_per_item().tolist() == [int(per_item[i]) for i in table.items]
    per_worker = df["worker"].value_counts()
    assert table.counts_per_worker().tolist() == [int(per_worker[w]) for w in table.workers]
    votes = np.zeros((len(items), len(classes)), dtype=np.int64)
    dense = np.full((len(items), len(workers)), -1, dtype=np.int64)
    for item, worker, label in rows_of(df):
        votes[items.index(item), classes.index(label)] += 1
        dense[items.index(item), workers.index(worker)] = classes.index(label)
    assert table.vote_counts().tolist() == votes.tolist()
    assert table.to_dense().tolist() == dense.tolist()


@PROFILE
@given(long_tables(id_kinds=("small", "text")), st.randoms(use_true_random=False))
def test_given_id_lists_fix_the_code_order_and_keep_unused_ids(case, rnd):
    df, items, workers, classes = case
    extra_items = [f"extra-{n}" for n in range(rnd.randint(0, 2))]
    items, workers, classes = list(items) + extra_items, list(workers), list(classes)
    for ids in (items, workers, classes):
        rnd.shuffle(ids)
    table = AnnotationTable.from_dataframe(df, classes=classes, items=items, workers=workers)
    assert as_list(table.items) == items
    assert as_list(table.workers) == workers
    assert as_list(table.classes) == classes
    assert rows_of(table.to_frame()) == rows_of(df)
    assert table.encode_items(df["task"]).tolist() == [items.index(v) for v in df["task"]]
    assert table.decode_classes(table.label_idx).tolist() == df["label"].tolist()
    unused = [n for n, item in enumerate(items) if item not in set(df["task"])]
    assert table.counts_per_item()[unused].tolist() == [0] * len(unused)


@st.composite
def code_arrays(draw):
    """``(item_idx, worker_idx, label_idx, sizes)`` with distinct (item, worker) pairs."""
    n, m, k = draw(st.integers(1, 6)), draw(st.integers(1, 5)), draw(st.integers(1, 4))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, m - 1)),
                          min_size=1, max_size=n * m, unique=True))
    labels = draw(st.lists(st.integers(0, k - 1), min_size=len(pairs), max_size=len(pairs)))
    return [p[0] for p in pairs], [p[1] for p in pairs], labels, (n, m, k)


@PROFILE
@given(code_arrays(), st.booleans())
def test_from_arrays_keeps_the_codes_and_sizes(case, give_sizes):
    it, wt, lt, (n, m, k) = case
    sizes = (n, m, k) if give_sizes else (max(it) + 1, max(wt) + 1, max(lt) + 1)
    table = (AnnotationTable.from_arrays(it, wt, lt, n, m, k) if give_sizes
             else AnnotationTable.from_arrays(it, wt, lt))
    assert (table.num_items, table.num_workers, table.num_classes) == sizes
    assert table.item_idx.tolist() == it and table.worker_idx.tolist() == wt
    assert table.label_idx.tolist() == lt
    assert rows_of(table.to_frame()) == list(zip(it, wt, lt))


# ------------------------------------------------------------------ invalid tables
@PROFILE
@given(long_tables(id_kinds=("small", "text")), st.sampled_from(["None", "NaN", "a list"]),
       st.data())
def test_a_missing_or_unhashable_id_is_an_error_naming_its_column(raises_naming, case, bad,
                                                                   data):
    df, _, _, _ = case
    col = data.draw(st.sampled_from(list(df.columns)))
    row = data.draw(st.integers(0, len(df) - 1))
    df = df.astype({col: object})
    value = {"None": None, "NaN": np.nan, "a list": [df.at[row, col]]}[bad]
    df.at[row, col] = value
    raises_naming(lambda: AnnotationTable.from_dataframe(df), f"df[{col!r}]")


@PROFILE
@given(long_tables(id_kinds=("small", "text")), st.data())
def test_ids_outside_the_given_lists_are_errors_naming_the_list(raises_naming, case, data):
    df, items, workers, classes = case
    arg, col, ids = data.draw(st.sampled_from(
        [("items", "task", items), ("workers", "worker", workers), ("classes", "label", classes)]))
    dropped = data.draw(st.sampled_from(sorted(set(df[col]), key=str)))
    rest = [v for v in ids if v != dropped] or ["only-other-id"]
    raises_naming(lambda: AnnotationTable.from_dataframe(df, **{arg: rest}), arg)


@PROFILE
@given(long_tables(), st.data())
def test_a_repeated_judgement_is_an_error_unless_allowed(raises_naming, case, data):
    df, _, _, _ = case
    row = data.draw(st.integers(0, len(df) - 1))
    twice = pd.concat([df, df.iloc[[row]]], ignore_index=True)
    raises_naming(lambda: AnnotationTable.from_dataframe(twice), "allow_repeats")
    table = AnnotationTable.from_dataframe(twice, allow_repeats=True)
    assert table.num_labels == len(df) + 1
    raises_naming(table.to_dense, "to_dense")


@PROFILE
@given(long_tables(id_kinds=("small",)), st.sampled_from(["item", "worker", "label"]),
       st.text("abc", min_size=1, max_size=3))
def test_a_wrong_column_name_is_an_error_naming_the_argument(raises_naming, case, arg, name):
    df, _, _, _ = case
    column = f"no-{name}"
    raises_naming(lambda: AnnotationTable.from_dataframe(df, **{arg: column}), arg)


@pytest.mark.parametrize("df", [None, [("a", "w", 1)], {"task": ["a"]}, np.zeros((2, 3))],
                         ids=["none", "list", "dict", "array"])
def test_a_table_that_is_not_a_dataframe_is_a_type_error(raises_naming, df):
    raises_naming(lambda: AnnotationTable.from_dataframe(df), "df")


BAD_CODES = st.one_of(
    st.lists(st.integers(-5, -1), min_size=1, max_size=3),  # negative
    st.lists(st.floats(0.1, 0.9), min_size=1, max_size=3),  # not integral
    st.just([[0, 1], [1, 0]]),                              # 2-D
    st.just([]),                                            # empty
    st.just(["a", "b"]),                                    # not numeric
    st.just([0.0, float("nan")]),                           # NaN
    st.just([True, False]),                                 # booleans
)


@PROFILE
@given(code_arrays(), st.sampled_from(["item_idx", "worker_idx", "label_idx"]), BAD_CODES)
def test_bad_codes_are_errors_naming_the_argument(raises_naming, case, arg, bad):
    it, wt, lt, _ = case
    codes = {"item_idx": it, "worker_idx": wt, "label_idx": lt, arg: bad}
    raises_naming(lambda: AnnotationTable.from_arrays(**codes), arg)


BAD_SIZES = st.one_of(st.integers(-3, 0), st.floats(1.0, 9.0), st.booleans(), st.just("3"))


@PROFILE
@given(code_arrays(), st.sampled_from(["num_items", "num_workers", "num_classes"]), BAD_SIZES)
def test_bad_sizes_are_errors_naming_the_argument(raises_naming, case, arg, bad):
    it, wt, lt, _ = case
    raises_naming(lambda: AnnotationTable.from_arrays(it, wt, lt, **{arg: bad}), arg)


@PROFILE
@given(code_arrays(), st.sampled_from(["num_items", "num_workers", "num_classes"]))
def test_sizes_below_the_largest_code_are_errors_naming_the_size(raises_naming, case, arg):
    it, wt, lt, _ = case
    largest = {"num_items": max(it), "num_workers": max(wt), "num_classes": max(lt)}[arg]
    raises_naming(lambda: AnnotationTable.from_arrays(it, wt, lt, **{arg: largest}), arg)


# ------------------------------------------------------------------ pairwise judgements
@st.composite
def pair_tables(draw):
    """A pairwise DataFrame: distinct (unordered pair, worker) keys, 0/1 links."""
    items = draw(unique_ids(draw(st.sampled_from(("small", "text"))), 2, 6))
    workers = draw(unique_ids("text", 1, 3))
    keys = [(a, b, w) for a in range(len(items)) for b in range(a + 1, len(items))
            for w in range(len(workers))]
    chosen = draw(st.lists(st.sampled_from(keys), min_size=1, max_size=min(len(keys), 12),
                           unique=True))
    flips = draw(st.lists(st.booleans(), min_size=len(chosen), max_size=len(chosen)))
    links = draw(st.lists(st.integers(0, 1), min_size=len(chosen), max_size=len(chosen)))
    rows = [((items[b], items[a]) if f else (items[a], items[b])) + (workers[w], link)
            for (a, b, w), f, link in zip(chosen, flips, links)]
    return pd.DataFrame(rows, columns=["i", "j", "worker", "link"])


@PROFILE
@given(pair_tables())
def test_pairwise_codes_map_back_to_the_rows(case):
    pairs = PairwiseAnnotations.from_dataframe(case)
    assert pairs.num_pairs == len(case)
    assert as_list(pairs.items) == sorted(set(case["i"]) | set(case["j"]))
    assert as_list(pairs.workers) == sorted(set(case["worker"]))
    assert rows_of(pairs.to_frame()) == rows_of(case)


@PROFILE
@given(pair_tables(), st.data())
def test_pairwise_bad_rows_are_errors_naming_the_column(raises_naming, case, data):
    row = data.draw(st.integers(0, len(case) - 1))
    bad = case.astype(object)
    kind = data.draw(st.sampled_from(["missing", "link", "self", "repeat"]))
    if kind == "missing":
        col = data.draw(st.sampled_from(["i", "j", "worker", "link"]))
        bad.loc[row, col] = None
        names = (f"df[{col!r}]", "df['i'] and df['j']")
    elif kind == "link":
        bad.loc[row, "link"] = data.draw(st.sampled_from([2, -1, 0.5, "yes"]))
        names = ("df['link']",)
    elif kind == "self":
        bad.loc[row, "j"] = bad.loc[row, "i"]
        names = ("i", "j")
    else:
        swapped = bad.iloc[[row]].rename(columns={"i": "j", "j": "i"})
        bad = pd.concat([bad, swapped], ignore_index=True)
        names = ("worker",)
    raises_naming(lambda: PairwiseAnnotations.from_dataframe(bad), *names)


@PROFILE
@given(pair_tables(), st.data())
def test_pairwise_duplicates_keep_the_chosen_judgement_of_each_pair(case, data):
    repeats = data.draw(st.lists(st.integers(0, len(case) - 1), min_size=1, max_size=4))
    rows = case.iloc[repeats].reset_index(drop=True)
    swap = np.array(data.draw(st.lists(st.booleans(), min_size=len(rows), max_size=len(rows))))
    extra = pd.DataFrame({  # the same (pair, worker), in either order, with any link
        "i": np.where(swap, rows["j"].to_numpy(), rows["i"].to_numpy()),
        "j": np.where(swap, rows["i"].to_numpy(), rows["j"].to_numpy()),
        "worker": rows["worker"].to_numpy(),
        "link": data.draw(st.lists(st.integers(0, 1), min_size=len(rows), max_size=len(rows))),
    })
    order = data.draw(st.permutations(range(len(case) + len(extra))))
    table = pd.concat([case, extra], ignore_index=True).iloc[list(order)]
    keep = data.draw(st.sampled_from(["first", "last"]))
    pairs = PairwiseAnnotations.from_dataframe(table, duplicates=keep)
    key = table.apply(lambda r: (frozenset((r["i"], r["j"])), r["worker"]), axis=1)
    expected = table[~key.duplicated(keep=keep)]
    assert rows_of(pairs.to_frame()) == rows_of(expected)


@PROFILE
@given(long_tables(id_kinds=("small", "text")), st.sampled_from(["task", "worker", "label"]))
def test_a_duplicated_column_name_is_an_error_naming_the_column(raises_naming, case, col):
    df, _, _, _ = case
    doubled = pd.concat([df, df[[col]]], axis=1)
    raises_naming(lambda: AnnotationTable.from_dataframe(doubled), col)
