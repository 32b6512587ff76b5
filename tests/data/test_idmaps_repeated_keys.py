"""``repeated_keys`` against its definition, on every key width it handles differently."""

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.data import idmaps
from pyromodels.data.idmaps import repeated_keys


def _by_definition(*codes):
    seen, rows = set(), []
    for r, key in enumerate(zip(*(c.tolist() for c in codes))):
        if key in seen:
            rows.append(r)
        seen.add(key)
    return rows


# small codes (int32 keys; two columns: the C count), codes whose product needs int64, and
# three columns whose product overflows int64 (the path through torch.unique)
_HIGH = st.sampled_from([3, 40_000, 2**40])


@settings(max_examples=60, deadline=None, derandomize=True)
@given(high=_HIGH, columns=st.integers(2, 3), data=st.data())
def test_repeated_keys_matches_definition(high, columns, data):
    rows = data.draw(st.integers(0, 30))
    draw = st.lists(st.integers(0, high), min_size=rows, max_size=rows)
    codes = [torch.tensor(data.draw(draw), dtype=torch.long) for _ in range(columns)]
    if rows:  # the largest code makes the key's span what ``high`` asks for
        for c in codes:
            c[0] = high
    got = repeated_keys(*codes)
    assert got.dtype == torch.long
    assert got.tolist() == _by_definition(*codes)


def test_repeated_keys_reports_every_later_copy():
    item = torch.tensor([0, 1, 0, 2, 0, 1])
    worker = torch.tensor([5, 5, 5, 5, 5, 6])
    assert repeated_keys(item, worker).tolist() == [2, 4]
    assert repeated_keys(item[:0], worker[:0]).tolist() == []


def test_the_c_count_of_repeats_was_built_and_answers_sorted_and_shuffled_rows():
    passes = idmaps.c_table_passes()
    assert passes is not None, "pyromodels.data._ctable is missing: reinstall with a C compiler"
    count = passes.count_repeats
    g = torch.Generator().manual_seed(0)
    item = torch.randint(0, 500, (5000,), generator=g)
    worker = torch.randint(0, 40, (5000,), generator=g)
    expected = len(_by_definition(item, worker))
    assert expected > 0
    for order in (torch.argsort(item, stable=True), torch.randperm(5000, generator=g)):
        args = (item[order].numpy(), worker[order].numpy())
        assert count(500, 40, *args) == expected
        unique = torch.unique(item[order] * 40 + worker[order])
        assert count(500, 40, (unique // 40).numpy(), (unique % 40).numpy()) == 0
    with pytest.raises(ValueError, match="worker code outside 0 .. 39"):
        count(500, 40, item.numpy(), (worker + 1).numpy())
    with pytest.raises(ValueError, match="one length"):
        count(500, 40, item.numpy(), worker.numpy()[:-1])
    with pytest.raises(ValueError, match="one length"):
        count(500, 40, item.numpy().astype(np.int32)[:-1], worker.numpy()[:-1])


def test_a_table_without_repeats_is_answered_by_the_c_count_alone(monkeypatch):
    calls = []
    count = idmaps.c_table_passes().count_repeats
    spy = type("Spy", (), {"count_repeats": staticmethod(
        lambda *a: calls.append(count(*a)) or calls[-1])})
    monkeypatch.setattr(idmaps, "c_table_passes", lambda: spy)
    g = torch.Generator().manual_seed(1)
    perm = torch.randperm(3000, generator=g)  # 1,000 items with 3 workers each, shuffled
    item, worker = (torch.arange(3000) // 3)[perm], (torch.arange(3000) % 3)[perm]
    with monkeypatch.context() as patched:
        patched.setattr(torch, "sort", None)  # the listing path would fail
        assert repeated_keys(item, worker).tolist() == []
    assert calls == [0]
    same = torch.nonzero(item == item[7]).flatten()
    worker[same[1]] = worker[same[0]]  # one repeat: listed by sorting
    assert len(repeated_keys(item, worker)) == 1 and calls[-1] == 1


def test_the_c_dense_codes_rank_ids_and_refuse_ids_outside_the_range():
    dense_codes = idmaps.c_table_passes().dense_codes
    values = np.array([12, 10, 15, 12, 10])
    codes, present = np.empty(5, dtype=np.int64), np.empty(6, dtype=np.uint8)
    assert dense_codes(values, 10, codes, present) == 3
    assert codes.tolist() == [1, 0, 2, 1, 0] and present.tolist() == [1, 0, 1, 0, 0, 1]
    with pytest.raises(ValueError, match="outside lo .. lo \\+ 5"):
        dense_codes(values, 11, codes, present)
    with pytest.raises(ValueError, match="one length"):
        dense_codes(values, 10, codes[:4], present)
