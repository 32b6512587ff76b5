"""The report of one ``pyromodels fit ddpm`` or ``fit truncated-dp-mixture`` run.

Besides the generic report of the posterior it writes what a user of a clustering needs: the
cluster of every point in ``labels.csv`` (rows in the order of the data) and a scatter of the
data coloured by cluster (the first two columns of two-dimensional data, else the first two
principal components), with the number of clusters and the size of the largest among the
metrics.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...registry import FitOutput

__all__ = ["cluster_report", "plot_clusters"]


def _plane(x: np.ndarray) -> tuple[np.ndarray, tuple[str, str]]:
    """The points ``x`` ``(N, d)`` in two dimensions, and the names of the two axes."""
    if x.shape[1] == 2:
        return x, ("column 1", "column 2")
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:2].T, ("principal component 1", "principal component 2")


def plot_clusters(x: np.ndarray, labels: np.ndarray, title: str):
    """A scatter of the points ``x`` ``(N, d)`` coloured by ``labels`` ``(N,)``."""
    import matplotlib.pyplot as plt

    xy, (xlabel, ylabel) = _plane(x)
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.scatter(xy[:, 0], xy[:, 1], c=labels, cmap="tab20", s=8, linewidths=0)
    ax.set(xlabel=xlabel, ylabel=ylabel, title=title)
    fig.tight_layout()
    return fig


def cluster_report(posterior, data, labels, *, name: str, probabilities=None) -> FitOutput:
    """The generic report of ``posterior`` plus the clusters ``labels`` of ``data``.

    Args:
        posterior: the fit.
        data: ``(N, d)`` points as fitted.
        labels: ``(N,)`` cluster of each point (0, 1, ... by first appearance or by
            component).
        name: the result's name in the report.
        probabilities: optional ``(N,)`` probability of each point's cluster, written beside
            it.

    Returns:
        A :class:`~pyromodels.registry.FitOutput` whose files hold ``labels.csv`` (columns
        ``point``, ``cluster`` and, given ``probabilities``, ``probability``).
    """
    import pandas as pd

    from ...report import result_from_posterior
    from ...report.fit_warnings import extend_summary

    x = np.asarray(data, dtype=np.float64)
    labels = np.asarray(labels).astype(np.int64)
    result = result_from_posterior(posterior, name)
    columns = {"point": np.arange(len(labels)), "cluster": labels}
    if probabilities is not None:
        columns["probability"] = np.asarray(probabilities, dtype=np.float64)
    sizes = np.bincount(labels)
    used = int((sizes > 0).sum())
    metrics = {**result.metrics}
    metrics[posterior.method] = {**metrics[posterior.method], "num_clusters": used,
                                 "largest_cluster": int(sizes.max())}
    figures = {**result.figures,
               "clusters": plot_clusters(x, labels, f"{used} clusters ({posterior.method})")}
    summary = extend_summary(result.summary, f" The fit puts the {len(labels)} points in {used} "
                             "clusters; labels.csv gives the cluster of each point (rows in the "
                             "order of the data).")
    result = replace(result, summary=summary.strip(), metrics=metrics, figures=figures)
    return FitOutput(result, {"labels.csv": pd.DataFrame(columns)})
