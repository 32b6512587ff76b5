"""The tutorials' shared set-up: sizes that shrink in smoke mode, figures shown then closed."""

import matplotlib.pyplot as plt
import pandas as pd
import pytest
from matplotlib.figure import Figure

from pyromodels.notebook import show, sizes, start_session


def test_sizes_switches_between_the_full_and_the_smoke_value():
    assert sizes(False)(2000, 20) == 2000
    assert sizes(True)(2000, 20) == 20


def test_sizes_takes_a_bool_only():
    # "0" or 1 from an environment variable would read as "on": the caller decides
    with pytest.raises(TypeError, match="smoke_test must be a bool"):
        sizes("0")


def test_show_closes_a_pyplot_figure_and_accepts_a_bare_one():
    fig, _ = plt.subplots()
    show(fig)
    assert not plt.fignum_exists(fig.number)
    show(Figure())  # not managed by pyplot: outside IPython there is nothing to display


def test_show_rejects_what_is_not_a_figure():
    fig, ax = plt.subplots()
    with pytest.raises(TypeError, match="fig must be a matplotlib Figure, got Axes"):
        show(ax)
    plt.close(fig)


def test_start_session_sets_the_table_width_and_prints_the_versions(capsys):
    with pd.option_context("display.width", 80, "display.max_columns", 20):
        start_session(max_columns=7)
        assert pd.get_option("display.width") == 120 and pd.get_option("display.max_columns") == 7
    assert capsys.readouterr().out.startswith("pyromodels ")
    with pytest.raises(ValueError, match="max_columns must be a positive int or None"):
        start_session(max_columns=0)
