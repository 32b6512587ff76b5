"""Plots a reader can read: labelled axes, histograms for discrete statistics, legends off the data."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from matplotlib.patches import Polygon  # noqa: E402

from pyromodels.core import Posterior  # noqa: E402
from pyromodels.diagnostics import plot_energy, plot_loss, plot_trace  # noqa: E402
from pyromodels.diagnostics.plots import is_discrete  # noqa: E402


def _post(method="gibbs"):
    g = torch.Generator().manual_seed(1)
    z = torch.randint(0, 3, (2, 80, 40), generator=g)
    stats = {"lp": torch.randn(2, 80, generator=g, dtype=torch.float64)}
    if method == "nuts":
        stats["energy"] = torch.randn(2, 80, generator=g, dtype=torch.float64)
    return Posterior(samples={"z": z}, method=method, sample_stats=stats)


def test_discrete_statistic_is_a_histogram_and_lp_a_density():
    fig = plot_trace(_post())
    by_title = {}
    for ax in fig.axes:
        by_title.setdefault(ax.get_title(), []).append(ax)
    fraction_density = by_title["largest_cluster_fraction"][0]
    # step histograms are drawn as patches, a density as lines
    assert [p for p in fraction_density.patches if isinstance(p, Polygon)]
    assert not fraction_density.get_lines()
    assert by_title["lp"][0].get_lines()
    assert fraction_density.get_ylabel() == "frequency"
    assert by_title["lp"][0].get_ylabel() == "density"
    for ax in fig.axes:
        assert ax.get_xlabel() and ax.get_ylabel()


def test_is_discrete():
    assert is_discrete(np.arange(10).reshape(2, 5))
    assert is_discrete(np.tile([0.5, 0.525, 0.55], (2, 20)))
    assert not is_discrete(np.random.default_rng(0).normal(size=(2, 50)))


def _legend_right_of_axes(ax) -> bool:
    fig = ax.figure
    fig.canvas.draw()
    legend = ax.get_legend().get_window_extent()
    return legend.x0 >= ax.get_window_extent().x1 - 1


def test_energy_plot_is_labelled_with_its_legend_beside_the_data():
    fig = plot_energy(_post("nuts"))
    (ax,) = fig.axes
    assert ax.get_xlabel() and ax.get_ylabel()
    assert any("BFMI" in t.get_text() for t in ax.get_legend().get_texts())
    assert _legend_right_of_axes(ax)


def test_restart_legend_does_not_cover_the_objective():
    post = Posterior(samples={"mu": torch.zeros(1, 1)}, method="em",
                     losses=torch.tensor([[3.0, 2.0, 1.0], [4.0, 2.5, 1.5]]))
    assert _legend_right_of_axes(plot_loss(post).axes[0])


def test_importing_the_plots_hides_arviz_refactor_notice(tmp_path):
    import os
    import subprocess
    import sys

    # ArviZ prints its notice once a day, remembered in the user's cache: use an empty one
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path), "PYTHONWARNINGS": "default"}
    run = subprocess.run([sys.executable, "-c", "import pyromodels.diagnostics"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert run.returncode == 0, run.stderr
    assert "undergoing a major refactor" not in run.stderr
