"""The crowd report's figures: legends that list every method beside the data, worker heat maps."""

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import torch  # noqa: E402

from pyromodels.core import Posterior  # noqa: E402
from pyromodels.experiments.crowd.figures import plot_study, plot_worker_confusions  # noqa: E402
from pyromodels.experiments.crowd.synthetic import summarize  # noqa: E402


def test_study_legend_lists_every_method_beside_the_panels():
    frame = pd.DataFrame({"x": [1, 1, 2, 2, 1, 2], "run": [0, 1, 0, 1, 0, 0],
                          "method": ["a", "a", "a", "a", "b", "b"],
                          "f_score": [0.5, 0.7, 0.6, 0.8, 0.4, 0.5],
                          "confusion_error": [np.nan, np.nan, np.nan, np.nan, 0.2, 0.1],
                          "transition_error": [np.nan] * 6, "seconds": [0.0] * 6})
    fig = plot_study(summarize(frame), ("f_score", "confusion_error"), xlabel="N")
    fig.canvas.draw()
    legends = [ax.get_legend() for ax in fig.axes if ax.get_legend() is not None]
    assert len(legends) == 1
    assert sorted(t.get_text() for t in legends[0].get_texts()) == ["a", "b"]
    box = legends[0].get_window_extent()
    assert all(box.x0 >= ax.get_window_extent().x1 - 1 for ax in fig.axes)


def test_worker_confusions_show_the_busiest_workers_with_mean_and_sd():
    raw = torch.rand(2, 30, 4, 2, 2, generator=torch.Generator().manual_seed(0)) + 0.1
    confusion = raw / raw.sum(-1, keepdim=True)
    post = Posterior(samples={"confusion": confusion}, method="gibbs")
    fig = plot_worker_confusions(post, max_workers=2, counts=np.array([5, 50, 1, 20]),
                                 names=["w0", "w1", "w2", "w3"])
    heat = [ax for ax in fig.axes if ax.get_images()]
    assert [ax.get_title().split("\n")[0] for ax in heat] == ["worker w1", "worker w3"]
    mean = confusion.reshape(-1, 4, 2, 2).mean(0)[1].double().numpy()
    np.testing.assert_allclose(heat[0].get_images()[0].get_array(), mean, rtol=1e-6)
    assert any("+-" in t.get_text() for t in heat[0].texts)
    assert heat[0].get_xlabel() == "label given" and heat[0].get_ylabel() == "true class"
