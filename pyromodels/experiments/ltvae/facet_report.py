"""The report of a latent tree fit: one clustering per latent node, and the tree.

Both ``pyromodels fit latent-tree`` and ``pyromodels fit ltvae`` end in a latent tree whose
latent nodes each cluster the points (a facet). Besides the generic report of the posterior,
their report holds ``labels.csv`` (a column ``point``, then one column per latent node, named
as the node, with each point's most probable state), the number of clusters each facet uses
among the metrics, a drawing of the tree and a scatter of the data by the root's clusters.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pandas as pd

from ...registry import FitOutput

__all__ = ["LABELS_FILE", "facet_report", "tree_figure"]

#: the clusterings of a fit's report
LABELS_FILE = "labels.csv"


def tree_figure(tree, title: str):
    """A figure of the :class:`~pyromodels.trees.LatentTree` ``tree`` (its ``draw``)."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(max(3.0, 0.9 * len(tree.pouches) + 1.5), 3.2))
    tree.draw(ax)
    ax.set_title(title)
    fig.tight_layout()
    return fig


def facet_report(posterior, x, facets: pd.DataFrame, tree, *, name: str,
                 metrics: dict | None = None, note: str = "") -> FitOutput:
    """The generic report of ``posterior`` plus the facets of the points ``x``.

    Args:
        posterior: the fit.
        x: ``(N, D)`` points as read (the scatter shows them).
        facets: ``(N, num_latents)`` the state of each point at each latent node, one column
            per node (named as the node).
        tree: the fitted :class:`~pyromodels.trees.LatentTree` (the figure ``tree``).
        name: the result's name in the report.
        metrics: more metrics of the fit's method (the BIC, say).
        note: a sentence added to the summary.

    Returns:
        A :class:`~pyromodels.registry.FitOutput` whose files hold :data:`LABELS_FILE`.
    """
    from ...report import result_from_posterior
    from ..ddpm.fit_report import plot_clusters

    result = result_from_posterior(posterior, name)
    method = posterior.method
    used = {str(column): int(facets[column].nunique()) for column in facets.columns}
    root = tree.names[tree.root]
    fitted = {**result.metrics[method], **(metrics or {}),
              "num_facets": len(used),
              **{f"num_clusters.{column}": k for column, k in used.items()}}
    root_labels = facets[root].to_numpy()
    figures = {**result.figures,
               "tree": tree_figure(tree, f"fitted latent tree ({method})"),
               "clusters": plot_clusters(np.asarray(x, dtype=np.float64), root_labels,
                                         f"{used[root]} clusters of {root} ({method})")}
    counts = ", ".join(f"{column}: {k}" for column, k in used.items())
    summary = (f"{result.summary} {note} The tree has {len(used)} latent node(s), each a "
               f"clustering of the {len(facets)} points (clusters used: {counts}); "
               f"{LABELS_FILE} gives each point's state at every node (rows in the order of "
               "the data).")
    result = replace(result, summary=" ".join(summary.split()),
                     metrics={**result.metrics, method: fitted}, figures=figures)
    table = pd.concat([pd.DataFrame({"point": np.arange(len(facets))}),
                       facets.reset_index(drop=True)], axis=1)
    return FitOutput(result, {LABELS_FILE: table})
