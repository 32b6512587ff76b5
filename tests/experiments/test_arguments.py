"""The argument checks every experiment's demo and reproduce entry points share."""

import pytest

from pyromodels.experiments.arguments import demo_arguments, reproduction_arguments


def test_demo_arguments_pick_the_settings_and_the_run_options():
    assert demo_arguments(True, False, 0, size="demo") == ("smoke", {"progress": False, "seed": 0})
    assert demo_arguments(False, True, 7, size="demo") == ("demo", {"progress": True, "seed": 7})


def test_reproduction_arguments_keep_the_scale():
    got = reproduction_arguments("paper", False, 2, scales=("small", "paper"))
    assert got == ("paper", {"progress": False, "seed": 2})


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: demo_arguments(1, False, 0, size="small"), TypeError, "smoke must be a bool"),
        (lambda: demo_arguments(False, "no", 0, size="small"), TypeError,
         "progress must be a bool"),
        (lambda: demo_arguments(False, False, -1, size="small"), ValueError,
         "seed must be an integer >= 0"),
        (lambda: reproduction_arguments("paper", False, 0, scales=("small", "medium")), ValueError,
         r"scale must be one of \['small', 'medium'\], got 'paper'"),
        (lambda: reproduction_arguments("small", None, 0, scales=("small",)), TypeError,
         "progress must be a bool"),
        (lambda: reproduction_arguments("small", False, 1.0, scales=("small",)), TypeError,
         "seed must be an integer"),
    ],
)
def test_bad_arguments_are_named(call, error, match):
    with pytest.raises(error, match=match):
        call()
