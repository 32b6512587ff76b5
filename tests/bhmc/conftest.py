"""Helpers shared by the BHMC sampler tests."""

import pytest

from pyromodels.bnp import NEW


def _realised_candidate(tree, n):
    """The candidate of ``path_conditional_log_probs`` that datum ``n``'s path realises: its
    path down to the deepest node that other data also pass through, then NEW markers."""
    path = list(tree.path(n))
    for lv in range(len(path) - 1, -1, -1):
        if lv == 0 or tree.count(path[lv]) > 1:
            return tuple(path[:lv + 1] + [NEW] * (len(path) - 1 - lv))
    raise AssertionError("the root is shared by every datum")


@pytest.fixture
def realised_candidate():
    """``candidate(tree, n)``: the path candidate that datum ``n`` sits in (see above)."""
    return _realised_candidate
