"""The BHMC report's figures: the data coloured by cluster, every line named in a legend."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
import torch  # noqa: E402
from matplotlib.colors import to_rgba  # noqa: E402

from pyromodels.experiments.bhmc.figures import (  # noqa: E402
    plot_chain_traces,
    plot_data_by_cluster,
    plot_traces,
    principal_components,
)


def _legend_texts(ax) -> list[str]:
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_data_scatter_colours_each_cluster_of_each_level():
    rng = np.random.default_rng(0)
    x = np.vstack([rng.normal(c, 0.1, size=(5, 4)) for c in (0.0, 3.0, 6.0)])
    # root 0; level 1: nodes 1 (first 10 points), 2; leaves 3, 4, 5
    paths = np.array([[0, 1, 3]] * 5 + [[0, 1, 4]] * 5 + [[0, 2, 5]] * 5)
    fig = plot_data_by_cluster(x, paths)
    top, leaves = fig.axes[:2]
    assert _legend_texts(top) == ["node 1 (10)", "node 2 (5)"]
    assert _legend_texts(leaves) == ["node 3 (5)", "node 4 (5)", "node 5 (5)"]
    # one scatter per cluster, holding its points, each in its own colour
    sizes = [len(c.get_offsets()) for c in leaves.collections]
    colours = {tuple(to_rgba(c.get_facecolor()[0])) for c in leaves.collections}
    assert sizes == [5, 5, 5] and len(colours) == 3
    assert "principal component 1" in top.get_xlabel()
    with pytest.raises(ValueError, match="paths must be"):
        plot_data_by_cluster(x, paths[:3])


def test_principal_components_follow_the_spread():
    x = np.array([[0.0, 0.0, 1.0], [2.0, 0.0, 1.0], [4.0, 0.0, 1.0], [6.0, 0.1, 1.0]])
    coords, share = principal_components(x)
    assert share[0] > 0.99
    np.testing.assert_allclose(np.abs(coords[:, 0]), np.abs(x[:, 0] - 3.0), atol=0.01)


def test_chain_traces_name_every_chain_and_statistic():
    params = {"cdl_trace": torch.randn(3, 10), "rcdl_trace": torch.randn(3, 10),
              "num_samples": 6}
    ax = plot_chain_traces(params).axes[0]
    assert _legend_texts(ax) == ["chain 0", "chain 1", "chain 2", "CDL", "RCDL"]
    assert len(ax.get_lines()) == 6  # 3 chains x 2 statistics
    colours = [line.get_color() for line in ax.get_lines()]
    assert colours[:3] == ["C0", "C1", "C2"] and colours[3:] == colours[:3]
    bhmc = plot_chain_traces({"cdl_trace": torch.randn(2, 5), "num_samples": 5}).axes[0]
    assert _legend_texts(bhmc) == ["chain 0", "chain 1", "CDL"]


def test_reproduction_traces_name_every_chain():
    frame = pd.DataFrame([{"C": 1.0, "eps0": 1.0, "chain": c, "iteration": i,
                           "cdl": float(i), "rcdl": float(i) - 1}
                          for c in range(2) for i in range(4)])
    ax = plot_traces(frame, "t").axes[0]
    assert _legend_texts(ax) == ["chain 0", "chain 1", "CDL", "RCDL"]
    assert len(ax.get_lines()) == 4


def test_fit_report_shows_the_data_by_cluster_and_defines_cdl(tmp_path):
    from pyromodels.cli import main
    from pyromodels.experiments.bhmc.data import planted_hierarchy

    data = tmp_path / "points.csv"
    np.savetxt(data, planted_hierarchy(n_per_leaf=2).x.numpy(), delimiter=",")
    out = tmp_path / "report"
    assert main(["fit", "bhmc", "--method", "gibbs", "--data", str(data), "--out", str(out),
                 "--num-warmup", "1", "--num-samples", "3", "--num-chains", "1",
                 "--no-progress"]) == 0
    page = (out / "index.html").read_text()
    assert "data coloured by cluster of the best tree" in page
    assert "<dt>CDL</dt><dd>complete-data log-likelihood" in page
    assert "rank plot (uniform bars" not in page  # one chain: no rank plot
