"""k-means++ seeding: D^2 sampling never repeats a row while distinct ones remain, and draws
in proportion to the squared distance."""

from __future__ import annotations

import torch

from pyromodels.core.kmeanspp import kmeanspp_indices


def test_distinct_rows_are_never_repeated_while_any_remain():
    x = torch.tensor([[0.0, 0.0], [0.0, 0.0], [1.0, 0.0], [5.0, 5.0], [5.0, 5.0]])
    for seed in range(50):
        idx = kmeanspp_indices(x, 3, torch.Generator().manual_seed(seed))
        assert len({tuple(r) for r in x[idx].tolist()}) == 3  # the three distinct rows


def test_more_centres_than_distinct_rows_repeat_rows():
    x = torch.zeros(4, 2)
    idx = kmeanspp_indices(x, 3, torch.Generator().manual_seed(0))
    assert idx.shape == (3,) and bool((idx >= 0).all() and (idx < 4).all())


def test_second_centre_is_drawn_in_proportion_to_squared_distance():
    # from row 0 at 0 the other rows lie at squared distances 1 and 9: P = 0.1 and 0.9
    x = torch.tensor([[0.0], [1.0], [3.0]])
    n, far = 0, 0
    for seed in range(4000):
        idx = kmeanspp_indices(x, 2, torch.Generator().manual_seed(seed))
        if int(idx[0]) == 0:
            n += 1
            far += int(idx[1]) == 2
    p = far / n
    # binomial standard error sqrt(0.09 / n) with n about 1333: 5 of them is about 0.04
    assert abs(p - 0.9) < 5 * (0.09 / n) ** 0.5
