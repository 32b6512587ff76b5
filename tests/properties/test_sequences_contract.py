"""Properties of the ragged-sequence contract (Sequences).

Random lengths and data round-trip: padding then unpadding gives the data back, the pieces
concatenate to it, and every position knows its sequence and its place in it. Invalid lengths,
data or padded blocks raise ValueError or TypeError naming the argument.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.data import AnnotationTable, Sequences

PROFILE = settings.get_profile("properties")

LENGTHS = st.lists(st.integers(1, 6), min_size=1, max_size=6)


@st.composite
def sequences(draw):
    """``(lengths, data)``: data ``(sum(lengths), *trailing)`` of a random dtype."""
    lengths = draw(LENGTHS)
    trailing = tuple(draw(st.lists(st.integers(1, 3), max_size=2)))
    total = sum(lengths)
    dtype = draw(st.sampled_from([torch.float64, torch.float32, torch.long]))
    gen = torch.Generator().manual_seed(draw(st.integers(0, 2**16)))
    data = torch.randint(-9, 10, (total, *trailing), generator=gen).to(dtype)
    return lengths, data


@PROFILE
@given(sequences(), st.sampled_from(["list", "numpy", "tensor"]))
def test_pad_unpad_and_split_give_the_data_back(case, kind):
    lengths, data = case
    given_lengths = {"list": lengths, "numpy": np.asarray(lengths),
                     "tensor": torch.tensor(lengths)}[kind]
    seqs = Sequences(data, given_lengths)
    assert seqs.lengths.tolist() == lengths and seqs.lengths.dtype == torch.long
    assert (seqs.num_sequences, seqs.total_length, seqs.max_length) == (
        len(lengths), sum(lengths), max(lengths))
    assert seqs.offsets.tolist() == [0, *np.cumsum(lengths).tolist()]
    padded, mask = seqs.pad(fill=7)
    assert padded.shape == (len(lengths), max(lengths), *data.shape[1:])
    assert mask.sum(1).tolist() == lengths
    assert bool((padded[~mask] == 7).all())
    assert torch.equal(seqs.unpad(padded), data)
    pieces = seqs.split()
    assert [len(p) for p in pieces] == lengths and torch.equal(torch.cat(pieces), data)
    expected_seq = [s for s, n in enumerate(lengths) for _ in range(n)]
    expected_pos = [t for n in lengths for t in range(n)]
    assert seqs.sequence_ids().tolist() == expected_seq
    assert seqs.positions().tolist() == expected_pos
    # position t of sequence s is row offsets[s] + t of the data
    for s, start in enumerate(seqs.offsets[:-1].tolist()):
        assert torch.equal(padded[s, :lengths[s]], data[start:start + lengths[s]])


@PROFILE
@given(LENGTHS, st.integers(1, 3), st.data())
def test_a_table_of_positions_pads_to_its_label_matrix(lengths, num_workers, data):
    total = sum(lengths)
    rows = [(t, w) for t in range(total) for w in range(num_workers)]
    chosen = data.draw(st.lists(st.sampled_from(rows), min_size=1, max_size=len(rows),
                                unique=True))
    labels = data.draw(st.lists(st.integers(0, 2), min_size=len(chosen), max_size=len(chosen)))
    table = AnnotationTable.from_arrays([r[0] for r in chosen], [r[1] for r in chosen], labels,
                                        num_items=total, num_workers=num_workers, num_classes=3)
    seqs = Sequences(table, lengths)
    dense = table.to_dense(fill=-1)
    assert torch.equal(seqs.values(), dense)
    padded, mask = seqs.pad()
    assert padded.shape == (len(lengths), max(lengths), num_workers)
    assert bool((padded[~mask] == -1).all())
    assert torch.equal(seqs.unpad(padded), dense)


# ------------------------------------------------------------------ invalid input
@PROFILE
@given(sequences(), st.data())
def test_lengths_that_do_not_cover_the_data_are_errors_naming_lengths(raises_naming, case, data):
    lengths, values = case
    kind = data.draw(st.sampled_from(["sum", "zero", "negative", "float", "2d", "empty",
                                      "text", "bool", "nan"]))
    if kind == "sum":
        delta = data.draw(st.sampled_from([-1, 1, 5]))
        bad = lengths[:-1] + [lengths[-1] + delta] if lengths[-1] + delta >= 1 else lengths + [3]
    elif kind == "zero":
        bad = lengths + [0]
    elif kind == "negative":
        bad = [lengths[0] + 2, -2] + lengths[1:]
    elif kind == "float":
        bad = [n + 0.5 for n in lengths]
    elif kind == "2d":
        bad = [lengths]
    elif kind == "empty":
        bad = []
    elif kind == "text":
        bad = [str(n) for n in lengths]
    elif kind == "bool":
        bad = [True] * len(lengths)
    else:
        bad = [float("nan")] + lengths
    raises_naming(lambda: Sequences(values, bad), "lengths")


BAD_DATA = st.sampled_from(["nan", "inf", "scalar", "text", "object", "ragged"])


@PROFILE
@given(LENGTHS, BAD_DATA, st.data())
def test_bad_data_is_an_error_naming_data(raises_naming, lengths, kind, data):
    total = sum(lengths)
    row = data.draw(st.integers(0, total - 1))
    values = np.zeros(total)
    if kind in ("nan", "inf"):
        values[row] = np.nan if kind == "nan" else -np.inf
    elif kind == "scalar":
        values = np.float64(total)
    elif kind == "text":
        values = np.array(["x"] * total)
    elif kind == "object":
        values = np.array([{"x": 1}] * total, dtype=object)
    else:
        values = [[0.0] * (1 + t % 2) for t in range(max(total, 2))]
    raises_naming(lambda: Sequences(values, lengths), "data")


@PROFILE
@given(sequences(), st.data())
def test_pieces_of_the_wrong_size_are_errors_naming_the_argument(raises_naming, case, data):
    lengths, values = case
    seqs = Sequences(values, lengths)
    extra = data.draw(st.sampled_from([-1, 1]))
    wrong_rows = torch.zeros(max(sum(lengths) + extra, 0), 2)
    method = data.draw(st.sampled_from(["pad", "split"]))
    raises_naming(lambda: getattr(seqs, method)(wrong_rows), "x")
    padded, _ = seqs.pad()
    cut = data.draw(st.sampled_from(["sequences", "positions", "flat"]))
    bad = {"sequences": padded[1:] if len(lengths) > 1 else padded[:, :0],
           "positions": torch.cat([padded, padded[:, :1]], dim=1),
           "flat": padded.reshape(-1)}[cut]
    raises_naming(lambda: seqs.unpad(bad), "padded")


@PROFILE
@given(LENGTHS)
def test_a_table_with_another_item_count_is_an_error_naming_lengths(raises_naming, lengths):
    total = sum(lengths)
    table = AnnotationTable.from_dataframe(
        pd.DataFrame({"task": range(total + 1), "worker": 0, "label": 0}))
    raises_naming(lambda: Sequences(table, lengths), "lengths")


@PROFILE
@given(sequences(), st.data())
def test_non_numeric_pieces_and_fills_are_type_errors_naming_the_argument(raises_naming, case,
                                                                         data):
    lengths, values = case
    seqs = Sequences(values, lengths)
    junk = data.draw(st.sampled_from(["text", "object", "ragged"]))
    rows = {"text": ["a"] * seqs.total_length, "object": [None] * seqs.total_length,
            "ragged": [[0] * (1 + t % 2) for t in range(seqs.total_length)] + [[0, 0]]}[junk]
    method = data.draw(st.sampled_from(["pad", "split"]))
    raises_naming(lambda: getattr(seqs, method)(rows), "x")
    raises_naming(lambda: seqs.unpad(rows), "padded")
    fill = data.draw(st.sampled_from(["0", None, [0], True]))
    if fill is not None:
        raises_naming(lambda: seqs.pad(fill=fill), "fill")


@PROFILE
@given(LENGTHS)
def test_lengths_summing_past_the_integer_range_are_reported_with_their_true_sum(
        raises_naming, lengths):
    huge = lengths + [2**62, 2**62]
    err = raises_naming(lambda: Sequences(torch.zeros(sum(lengths)), huge), "lengths")
    assert str(err).endswith(f"got sum {sum(huge)}")
