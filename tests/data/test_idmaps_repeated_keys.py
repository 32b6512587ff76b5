"""``repeated_keys`` against its definition, on every key width it handles differently."""

import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from pyromodels.data.idmaps import repeated_keys


def _by_definition(*codes):
    seen, rows = set(), []
    for r, key in enumerate(zip(*(c.tolist() for c in codes))):
        if key in seen:
            rows.append(r)
        seen.add(key)
    return rows


# small codes (int32 keys), codes whose product needs int64, and three columns whose product
# overflows int64 (the path through torch.unique)
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
