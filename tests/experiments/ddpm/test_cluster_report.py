"""The cluster report's text keeps its warnings last, after what the fit found."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import torch  # noqa: E402

from pyromodels.core import Posterior  # noqa: E402
from pyromodels.experiments.ddpm.fit_report import cluster_report  # noqa: E402
from pyromodels.report.fit_warnings import WARNING_PREFIX  # noqa: E402


def test_cluster_sentence_comes_before_the_warnings():
    # two chains stuck at different values: R-hat is far above 1.01, so the report warns
    mu = torch.stack([torch.full((50, 1), 0.0), torch.full((50, 1), 5.0)], 0).double()
    mu = mu + 0.01 * torch.randn(mu.shape, generator=torch.Generator().manual_seed(0),
                                 dtype=torch.float64)
    post = Posterior(samples={"mu": mu}, method="gibbs", attrs={"seed": 0})
    labels = np.array([0, 0, 1, 1, 1])
    out = cluster_report(post, np.zeros((5, 2)), labels, name="toy")
    paragraphs = out.result.summary.split("\n\n")
    assert paragraphs[-1].startswith(WARNING_PREFIX)
    first_warning = next(i for i, p in enumerate(paragraphs) if p.startswith(WARNING_PREFIX))
    assert "points in 2 clusters" in "\n\n".join(paragraphs[:first_warning])
    assert not any("points in 2 clusters" in p for p in paragraphs[first_warning:])
