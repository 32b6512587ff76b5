"""Sequences: offsets, padding and splitting against plain Python slicing; bad inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pyromodels.data import AnnotationTable, Sequences


@pytest.fixture
def seqs():
    gen = torch.Generator().manual_seed(0)
    data = torch.randn(12, 3, generator=gen, dtype=torch.float64)
    return Sequences(data, [4, 1, 7])


def test_offsets_ids_positions(seqs):
    assert seqs.num_sequences == 3 and seqs.total_length == 12 and seqs.max_length == 7
    assert seqs.offsets.tolist() == [0, 4, 5, 12]
    assert seqs.sequence_ids().tolist() == [0] * 4 + [1] + [2] * 7
    assert seqs.positions().tolist() == [0, 1, 2, 3, 0] + list(range(7))


def test_split_iter_pad_unpad_against_slicing(seqs):
    bounds = [(0, 4), (4, 5), (5, 12)]
    pieces = list(seqs.iter_sequences())
    assert len(pieces) == 3
    for piece, (a, b) in zip(pieces, bounds):
        assert torch.equal(piece, seqs.data[a:b])
    padded, mask = seqs.pad(fill=np.nan)
    assert padded.shape == (3, 7, 3) and mask.shape == (3, 7)
    for s, (a, b) in enumerate(bounds):
        assert torch.equal(padded[s, : b - a], seqs.data[a:b])
        assert torch.isnan(padded[s, b - a:]).all()
        assert mask[s].tolist() == [t < b - a for t in range(7)]
    assert torch.equal(seqs.unpad(padded), seqs.data)
    # any per-position tensor can be padded, e.g. posteriors
    post = torch.arange(12)
    p2, _ = seqs.pad(post)
    assert p2[2].tolist() == list(range(5, 12)) and p2[1].tolist() == [4] + [0] * 6


def test_sequences_over_an_annotation_table():
    table = AnnotationTable.from_arrays([0, 0, 1, 2, 2], [0, 1, 1, 0, 1], [1, 0, 2, 2, 2],
                                        num_items=3, num_workers=2, num_classes=3)
    seqs = Sequences(table, [2, 1])
    padded, mask = seqs.pad()
    # labels default to -1 where missing, padded cells too
    assert padded.tolist() == [[[1, 0], [-1, 2]], [[2, 2], [-1, -1]]]
    assert mask.tolist() == [[True, True], [True, False]]
    assert [p.shape[0] for p in seqs.split()] == [2, 1]
    assert seqs.to("cpu").data.num_labels == 5


@pytest.mark.parametrize(
    "data, lengths, error, match",
    [
        (torch.zeros(5), [2, 4], ValueError, "lengths must sum to the data length 5, got sum 6"),
        (torch.zeros(5), [5, 0], ValueError, "lengths must all be >= 1, found 0"),
        (torch.zeros(5), [2.5, 2.5], TypeError, "lengths must hold integer labels"),
        (np.array(["a", "b"]), [2], TypeError, "data must be a numeric array or an"),
        (torch.tensor([1.0, float("nan")]), [2], ValueError, "data must be finite"),
        (torch.tensor(3.0), [1], ValueError, "data must have at least one dimension"),
    ],
)
def test_bad_sequences(data, lengths, error, match):
    with pytest.raises(error, match=match):
        Sequences(data, lengths)


def test_bad_pad_inputs(seqs):
    with pytest.raises(ValueError, match=r"x must have 12 rows \(one per position\)"):
        seqs.pad(torch.zeros(11))
    with pytest.raises(ValueError, match=r"padded must have leading shape \(3, 7\)"):
        seqs.unpad(torch.zeros(3, 6))
