"""Figures of the reference mixture's demo: data, optimisation traces, chains, co-clustering.

Every function returns a ``matplotlib.figure.Figure`` and shows nothing; the report writer
draws and closes them.
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import numpy as np
import torch
from matplotlib.patches import Ellipse

from ...core.posterior import Posterior
from ...diagnostics import (
    coclustering,
    coclustering_from_probs,
    plot_coclustering,
    plot_loss,
    plot_rank,
    plot_trace,
)

__all__ = [
    "plot_chain_trace",
    "plot_chain_ranks",
    "plot_data",
    "plot_optimisation",
    "plot_coclustering_per_engine",
    "plot_weight_posteriors",
    "plot_relabelling",
]

_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")


def _ellipse(ax, mean: np.ndarray, cov: np.ndarray, color, scale: float = 2.0) -> None:
    """Draw the ``scale``-standard-deviation ellipse of a 2-D Gaussian."""
    eigvals, eigvecs = np.linalg.eigh(cov)
    angle = np.degrees(np.arctan2(eigvecs[1, -1], eigvecs[0, -1]))
    width, height = 2 * scale * np.sqrt(eigvals[::-1])
    ax.add_patch(
        Ellipse(mean, width, height, angle=angle, fill=False, color=color, lw=1.5, ls="--")
    )


def plot_data(x: np.ndarray, truth: np.ndarray, em: Posterior, axis_labels=("PC 1", "PC 2")):
    """Scatter of the first two columns of ``x``: colour = EM cluster, marker = true class.

    The EM components are drawn as their two-standard-deviation ellipses (the marginal of each
    fitted Gaussian on the first two columns).

    Args:
        x: ``(N, d)`` data, ``d >= 2``.
        truth: ``(N,)`` true classes, integers from 0.
        em: the EM fit of ``x`` (``params["labels"]``, ``locs`` and ``precisions`` samples).
        axis_labels: names of the two plotted columns.
    """
    labels = em.params["labels"].cpu().numpy()
    locs = em.samples["locs"][0, 0].double().cpu().numpy()
    covs = torch.linalg.inv(em.samples["precisions"][0, 0].double()).cpu().numpy()
    fig, ax = plt.subplots(figsize=(6.5, 5))
    for c in np.unique(truth):
        for k in np.unique(labels):
            mask = (truth == c) & (labels == k)
            if mask.any():
                ax.scatter(x[mask, 0], x[mask, 1], color=f"C{k}", s=22, alpha=0.8,
                           marker=_MARKERS[int(c) % len(_MARKERS)], edgecolor="none")
    for k in range(locs.shape[0]):
        _ellipse(ax, locs[k, :2], covs[k, :2, :2], f"C{k}")
        ax.plot(*locs[k, :2], marker="x", color="k", ms=8)
    handles = [plt.Line2D([], [], ls="", marker="o", color=f"C{k}", label=f"EM cluster {k}")
               for k in range(locs.shape[0])]
    handles += [plt.Line2D([], [], ls="", marker=_MARKERS[int(c) % len(_MARKERS)], color="0.3",
                           label=f"true class {int(c)}") for c in np.unique(truth)]
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    ax.set_xlabel(axis_labels[0])
    ax.set_ylabel(axis_labels[1])
    ax.set_title("Data coloured by EM cluster (dashed: 2-sd ellipses of the EM components)")
    return fig


def plot_chain_trace(posterior: Posterior):
    """Trace plot of the label-invariant statistics of a chain-based fit (one row each)."""
    fig = plot_trace(posterior, compact=False, figsize=(10, 7))
    fig.tight_layout()
    return fig


def plot_chain_ranks(aligned: Posterior):
    """Rank plots of the log joint and of the relabelled weights of a chain-based fit.

    Rank plots need continuous draws: the largest-cluster fraction moves on a grid of
    ``1/N``, so its many ties make the rank histograms uneven however well the chains mix, and
    the number of occupied clusters is usually constant. The weights, once relabelled, are
    continuous and comparable across chains.

    Args:
        aligned: a Gibbs or NUTS fit relabelled to a reference labelling, with
            ``sample_stats["lp"]``.
    """
    fig = plot_rank(aligned, var_names=["lp", "weights"], figsize=(12, 5.5))
    fig.tight_layout()
    return fig


def plot_optimisation(em: Posterior, svi: Posterior):
    """Side by side: the EM objective per iteration and the SVI negative ELBO per step."""
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 3.8))
    plot_loss(em, ax=left)
    left.set_title("EM: log posterior (best restart)")
    plot_loss(svi, ax=right)
    right.set_title("SVI: negative ELBO")
    losses = svi.losses.double().cpu().numpy()
    tail = losses[len(losses) // 10 :]  # the first steps would squash the rest of the curve
    right.set_ylim(tail.min() - 0.05 * np.ptp(tail) - 1, tail.max() + 0.05 * np.ptp(tail) + 1)
    window = max(1, len(losses) // 30)
    if window > 1:
        smooth = np.convolve(losses, np.ones(window) / window, mode="valid")
        right.plot(np.arange(window, len(losses) + 1), smooth, color="k", lw=1.5,
                   label=f"moving average of {window} steps")
        right.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    return fig


def plot_coclustering_per_engine(aligned: dict[str, Posterior], order: np.ndarray):
    """One co-clustering heat map ``P(z_i = z_j | x)`` per engine, rows in ``order``.

    EM's matrix comes from its responsibilities (:func:`coclustering_from_probs`), the others'
    from their label draws (:func:`coclustering`).
    """
    engines = list(aligned)
    cols = min(len(engines), 2)
    rows = -(-len(engines) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 4.4 * rows), squeeze=False)
    for ax, engine in zip(axes.ravel(), engines):
        post = aligned[engine]
        if post.method == "em":
            matrix = coclustering_from_probs(post.params["responsibilities"])
        else:
            matrix = coclustering(post.samples["z"])
        plot_coclustering(matrix, order=order, ax=ax)
        ax.set_title(engine)
    for ax in axes.ravel()[len(engines):]:
        ax.set_visible(False)
    fig.suptitle("Co-clustering probabilities, points sorted by true class then EM cluster")
    fig.tight_layout()
    return fig


def plot_weight_posteriors(aligned: dict[str, Posterior]):
    """Histograms of each aligned mixing weight per sampled engine; EM's estimate as a line."""
    num_components = aligned["em"].samples["weights"].shape[-1]
    fig, axes = plt.subplots(1, num_components, figsize=(4 * num_components, 3.4), squeeze=False)
    for k, ax in enumerate(axes[0]):
        for i, (engine, post) in enumerate(aligned.items()):
            values = post.flat("weights")[:, k].double().cpu().numpy()
            if post.method == "em":
                ax.axvline(values[0], color="k", lw=1.5, label=engine)
            else:
                ax.hist(values, bins=30, density=True, histtype="step", lw=1.5,
                        color=f"C{i}", label=engine)
        ax.set_title(f"weight of component {k}")
        ax.set_xlabel("weight")
    axes[0, 0].set_ylabel("posterior density")
    axes[0, -1].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    return fig


def plot_relabelling(raw: dict[str, Posterior], aligned: dict[str, Posterior]):
    """Traces of the first coordinate of each component mean, before and after relabelling.

    One column per engine in ``raw`` (chain-based fits), one colour per component, one line
    style per chain. The component means are far apart, so a chain that orders the clusters
    differently shows as crossed colours in the top row; the bottom row shows the same draws in
    the EM labelling.
    """
    engines = list(raw)
    fig, axes = plt.subplots(2, len(engines), figsize=(6 * len(engines), 5.5), squeeze=False,
                             sharey=True)
    styles = ("-", "--", ":", "-.")
    for col, engine in enumerate(engines):
        for row, (post, when) in enumerate(((raw[engine], "before relabelling"),
                                            (aligned[engine], "after relabelling to EM"))):
            ax = axes[row, col]
            locs = post.samples["locs"][..., 0].double().cpu().numpy()  # (chain, draw, K)
            for c in range(locs.shape[0]):
                for k in range(locs.shape[-1]):
                    ax.plot(locs[c, :, k], color=f"C{k}", ls=styles[c % len(styles)], lw=0.6,
                            label=f"chain {c}, component {k}")
            ax.set_title(f"{engine}: {when}")
            ax.set_xlabel("draw")
        axes[0, col].set_ylabel("component mean, first coordinate")
        axes[1, col].set_ylabel("component mean, first coordinate")
    axes[0, -1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
    fig.tight_layout()
    return fig
