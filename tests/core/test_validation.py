import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.core.validation import (
    as_float_tensor,
    as_label_tensor,
    check_int,
    check_positive,
    check_probability,
    check_same_length,
)


def test_float_tensor_accepts_numpy_pandas_and_keeps_values():
    arr = np.arange(6.0).reshape(3, 2)
    t = as_float_tensor(pd.DataFrame(arr), "x", ndim=2)
    assert t.dtype == torch.float64 and torch.equal(t, torch.as_tensor(arr))


@pytest.mark.parametrize(
    "x, kwargs, err, match",
    [
        (np.ones(3), {"ndim": 2}, ValueError, r"x must be 2-dimensional, got shape \(3,\)"),
        (np.array([1.0, np.nan]), {}, ValueError, "x must be finite: found 1 NaN"),
        (np.array([1.0, np.inf]), {}, ValueError, "x must be finite"),
        (np.zeros((0, 2)), {}, ValueError, "x must not be empty"),
        (np.array(["a", "b"]), {}, TypeError, "x must be numeric"),
        (np.array([True, False]), {}, TypeError, "x must hold real numbers"),
    ],
)
def test_float_tensor_errors(x, kwargs, err, match):
    with pytest.raises(err, match=match):
        as_float_tensor(x, "x", **kwargs)


def test_label_tensor_accepts_integral_floats_and_checks_range():
    t = as_label_tensor([0.0, 2.0, 1.0], "y", num_classes=3)
    assert t.dtype == torch.long and t.tolist() == [0, 2, 1]
    with pytest.raises(ValueError, match=r"y must lie in \[0, 1\] for 2 classes, found 2"):
        as_label_tensor([0, 2], "y", num_classes=2)
    with pytest.raises(ValueError, match="non-negative integer labels, found -1"):
        as_label_tensor([0, -1], "y")
    with pytest.raises(TypeError, match="non-integral values"):
        as_label_tensor([0.5, 1.0], "y")
    with pytest.raises(ValueError, match="finite integer labels"):
        as_label_tensor([np.nan, 1.0], "y")


def test_scalar_checks():
    assert check_int(np.int64(3), "k", minimum=1) == 3
    with pytest.raises(TypeError, match="k must be an integer, got bool"):
        check_int(True, "k")
    with pytest.raises(TypeError, match="k must be an integer, got float"):
        check_int(3.0, "k")
    with pytest.raises(ValueError, match="k must be an integer >= 1, got 0"):
        check_int(0, "k", minimum=1)
    with pytest.raises(ValueError, match="a must be > 0"):
        check_positive(0.0, "a")
    with pytest.raises(ValueError, match="a must be finite"):
        check_positive(float("inf"), "a")
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\]"):
        check_probability(1.5, "p")
    with pytest.raises(ValueError, match="a and b must have the same length, got 2 and 3"):
        check_same_length("a", [1, 2], "b", [1, 2, 3])
