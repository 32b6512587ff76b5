"""Plots return figures with the expected axes and draw the data they are given."""

from dataclasses import replace

import matplotlib.pyplot as plt
import numpy as np
import pytest
import torch

from pyromodels.core import Posterior
from pyromodels.diagnostics import (
    label_invariant_stats,
    plot_coclustering,
    plot_energy,
    plot_loss,
    plot_rank,
    plot_trace,
)


def test_plot_trace_defaults_to_label_invariant_statistics(toy):
    # every draw of the toy occupies both clusters: a constant statistic is left out
    assert bool((label_invariant_stats(toy)["occupied_clusters"] == 2).all())
    fig = plot_trace(toy)
    assert isinstance(fig, plt.Figure)
    assert len(fig.axes) == 4  # two varying statistics, a density and a trace each
    assert {ax.get_title() for ax in fig.axes} == {"lp", "largest_cluster_fraction"}
    # collapse every tenth draw into one cluster: the occupied-cluster count now varies
    z = toy.samples["z"].clone()
    z[:, ::10] = 0
    varied = replace(toy, samples={**toy.samples, "z": z})
    fig = plot_trace(varied)
    titles = {ax.get_title() for ax in fig.axes}
    assert titles == {"lp", "occupied_clusters", "largest_cluster_fraction"}
    # The trace panel of the occupied-cluster count draws exactly the computed statistic.
    stats = label_invariant_stats(varied)
    trace_ax = [ax for ax in fig.axes if ax.get_title() == "occupied_clusters"][1]
    lines = [line.get_ydata() for line in trace_ax.get_lines()]
    np.testing.assert_array_equal(
        np.sort(np.concatenate(lines)), np.sort(stats["occupied_clusters"].numpy().ravel())
    )


def test_plot_trace_of_named_sites(toy):
    fig = plot_trace(toy, var_names=["locs", "weights"])
    assert len(fig.axes) == 4  # vector sites are compacted into one row each
    with pytest.raises(ValueError, match=r"var_names \['mu'\] are not among the plottable"):
        plot_trace(toy, var_names=["mu"])


def test_plot_trace_needs_var_names_without_label_site():
    post = Posterior(samples={"mu": torch.zeros(2, 10)}, method="nuts")
    with pytest.raises(ValueError, match="var_names is needed"):
        plot_trace(post)
    with_lp = Posterior(
        samples={"mu": torch.zeros(2, 10)},
        method="nuts",
        sample_stats={"lp": torch.randn(2, 10, generator=torch.Generator().manual_seed(0))},
    )
    assert len(plot_trace(with_lp).axes) == 2


def test_plot_rank(toy):
    fig = plot_rank(toy, var_names=["lp", "largest_cluster_fraction"])
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 2


def test_plot_energy(make_toy):
    post = make_toy(chains=2, draws=200)
    with pytest.raises(ValueError, match="no 'energy' entry"):
        plot_energy(post)
    rng = np.random.default_rng(3)
    post.sample_stats["energy"] = torch.from_numpy(rng.standard_normal((2, 200)).cumsum(-1))
    fig = plot_energy(post)
    assert isinstance(fig, plt.Figure) and len(fig.axes) == 1


def test_plot_coclustering_orders_rows_and_columns():
    rng = np.random.default_rng(4)
    c = rng.random((5, 5))
    c = (c + c.T) / 2
    order = [4, 2, 0, 1, 3]
    fig = plot_coclustering(torch.from_numpy(c), order=order)
    assert len(fig.axes) == 2  # heat map and colour bar
    image = fig.axes[0].get_images()[0]
    np.testing.assert_array_equal(image.get_array(), c[np.ix_(order, order)])
    assert image.get_clim() == (0.0, 1.0)
    with pytest.raises(ValueError, match="order must be a permutation of 0 .. 4"):
        plot_coclustering(c, order=[0, 0, 1, 2, 3])
    with pytest.raises(ValueError, match=r"matrix must be square \(N, N\)"):
        plot_coclustering(c[:, :3])
    with pytest.raises(ValueError, match=r"matrix must hold probabilities in \[0, 1\]"):
        plot_coclustering(c + 1.0)


def test_plot_loss_one_line_per_restart():
    losses = torch.tensor([[3.0, 2.0, 1.5, float("nan")], [4.0, 2.5, 2.0, 1.9]])
    post = Posterior(samples={"mu": torch.zeros(1, 1)}, method="em", losses=losses)
    fig = plot_loss(post)
    ax = fig.axes[0]
    assert len(fig.axes) == 1 and len(ax.get_lines()) == 2
    np.testing.assert_array_equal(ax.get_lines()[1].get_ydata(), losses[1].numpy())
    assert ax.get_ylabel() == "EM objective"
    svi = Posterior(samples={"mu": torch.zeros(1, 5)}, method="svi", losses=torch.arange(10.0))
    assert plot_loss(svi).axes[0].get_ylabel() == "negative ELBO"
    with pytest.raises(ValueError, match="posterior.losses is None"):
        plot_loss(Posterior(samples={"mu": torch.zeros(1, 5)}, method="nuts"))
