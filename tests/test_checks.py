import numpy as np
import pandas as pd
import pytest
import torch

from pyromodels.checks import (
    as_float_tensor,
    as_label_tensor,
    check_int,
    check_positive,
    check_probability,
    check_same_length,
    check_stochastic,
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


def test_stochastic_accepts_probabilities_and_keeps_their_values():
    rows = [[0.9, 0.1], [0.25, 0.75]]
    t = check_stochastic(rows, "a", shape=(2, 2))
    assert t.dtype == torch.float64 and torch.equal(t, torch.tensor(rows, dtype=torch.float64))
    x32 = torch.tensor(rows, dtype=torch.float32)
    assert check_stochastic(x32, "a", ndim=2).dtype == torch.float32
    t = check_stochastic(x32, "a", ndim=2, dtype=torch.float64, device="cpu")
    assert t.dtype == torch.float64 and torch.equal(t, x32.double())
    joint = np.array([[0.5, 0.25], [0.0, 0.25]])
    assert torch.equal(check_stochastic(joint, "j", axis_sum="total"), torch.as_tensor(joint))
    # a float64 third sums to one within 1e-16; it is checked before the cast to float32
    third = torch.full((3,), 1.0, dtype=torch.float64) / 3
    assert check_stochastic(third, "p", dtype=torch.float32).dtype == torch.float32


def test_stochastic_tolerance_follows_the_input_dtype():
    eps32 = torch.finfo(torch.float32).eps
    # [1/3] * 3 rounded to float32 sums to 1 + 3e-8: within float32 rounding (16 * 3 * eps32
    # = 5.7e-6), but the same numbers given as float64 are 3e-8 > 1e-8 off
    third32 = torch.full((3,), 1.0, dtype=torch.float32) / 3
    assert torch.equal(check_stochastic(third32, "p"), third32)
    assert check_stochastic(third32.numpy(), "p").dtype == torch.float32
    with pytest.raises(ValueError, match=r"p must sum to 1, got sum 1\.00000003 \(off by 2\.98e"):
        check_stochastic(third32.double(), "p")
    for dtype, tol in ((torch.float64, 1e-8), (torch.float32, 16 * 2 * eps32)):
        ok = torch.tensor([0.5, 0.5 + 0.9 * tol], dtype=dtype)
        assert torch.equal(check_stochastic(ok, "p"), ok)
        with pytest.raises(ValueError, match=f"tolerance {tol:.3g}"):
            check_stochastic(torch.tensor([0.5, 0.5 + 1.1 * tol], dtype=dtype), "p")
    # atol replaces the 1e-8 floor only: float32 keeps its own rounding slack
    off = torch.tensor([[0.5, 0.5 + 1e-7]], dtype=torch.float64)
    assert torch.equal(check_stochastic(off, "p", atol=1e-6), off)
    assert torch.equal(check_stochastic(third32, "p", atol=1e-12), third32)


@pytest.mark.parametrize(
    "x, kwargs, err, match",
    [
        ([[0.5, 0.5]], {"shape": (2, 2)}, ValueError, r"p must have shape \(2, 2\), got \(1, 2\)"),
        ([0.5, 0.5], {"ndim": 2}, ValueError, r"p must be 2-dimensional, got shape \(2,\)"),
        ([[0.5, 0.5], [1.1, -0.1]], {}, ValueError,
         r"p must be non-negative, found p\[1, 1\] = -0\.1"),
        ([[0.5, 0.5], [0.2, 0.75], [0.5, 0.4]], {}, ValueError,
         r"p must have rows summing to 1 \(last axis\); row p\[2\] sums to 0\.9 \(off by 0\.1, "),
        ([[[1.0, 0.0]], [[0.6, 0.6]]], {}, ValueError, r"row p\[1, 0\] sums to 1\.2 \(off by 0\.2"),
        ([0.6, 0.6], {}, ValueError,
         r"p must sum to 1, got sum 1\.2 \(off by 0\.2, tolerance 1e-08\)"),
        ([[0.5, 0.5], [0.5, 0.5]], {"axis_sum": "total"}, ValueError,
         r"p must have entries summing to 1 in total, got sum 2 \(off by 1,"),
        ([0.5, np.nan], {}, ValueError, "p must be finite: found 1 NaN"),
        ([0.5, 0.5], {"axis_sum": "columns"}, ValueError, "axis_sum must be one of"),
        ([0.5, 0.5], {"atol": 0.0}, ValueError, "atol must be > 0"),
        ([0.5, 0.5], {"dtype": torch.long}, TypeError, "dtype must be a floating torch.dtype"),
        (["a", "b"], {}, TypeError, "p must be numeric"),
    ],
)
def test_stochastic_errors(x, kwargs, err, match):
    with pytest.raises(err, match=match):
        check_stochastic(x, "p", **kwargs)


def test_check_bool_rejects_truthy_non_bools():
    from pyromodels.checks import check_bool

    assert check_bool(False, "smoke") is False
    with pytest.raises(TypeError, match="smoke must be a bool, got int 1"):
        check_bool(1, "smoke")


def test_numeric_tensor_keeps_dtype_and_values_and_rejects_text():
    from pyromodels.checks import as_numeric_tensor

    t = torch.tensor([1.0, float("-inf")])
    assert as_numeric_tensor(t, "x") is t  # a tensor passes through untouched
    ints = as_numeric_tensor(pd.Series([3, -1]), "x")
    assert ints.dtype == torch.int64 and ints.tolist() == [3, -1]
    frozen = np.array([0.5, 2.0], dtype=np.float32)
    frozen.flags.writeable = False
    out = as_numeric_tensor(frozen, "x")
    out[0] = 9.0  # a read-only array is copied, so writing to the tensor leaves it alone
    assert out.dtype == torch.float32 and frozen[0] == 0.5
    with pytest.raises(TypeError, match="x must be numeric, got an array of dtype <U1"):
        as_numeric_tensor(["a", "b"], "x")
    with pytest.raises(TypeError, match="x must be numeric, got an array of dtype object"):
        as_numeric_tensor([{"a": 1}], "x")


@pytest.mark.parametrize(
    "values, bad",
    [
        ([1e308, 1e308, -1.0], 0),  # finite values whose sum overflows are accepted
        ([np.inf, -np.inf, 1.0], 2),  # the sum is NaN
        ([np.inf, 1e308, 1.0], 1),  # the sum is infinite
        ([np.nan, 1.0], 1),
    ],
)
def test_finiteness_is_decided_per_element_not_by_the_sum(values, bad):
    x = np.array(values)
    if bad == 0:
        assert torch.equal(as_float_tensor(x, "x"), torch.as_tensor(x))
    else:
        with pytest.raises(ValueError, match=f"x must be finite: found {bad} NaN or infinite"):
            as_float_tensor(x, "x")
