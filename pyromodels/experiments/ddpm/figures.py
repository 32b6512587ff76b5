"""Figures of the DDPM reproduction. Each function returns a ``matplotlib.figure.Figure``
(made without pyplot, so nothing is shown) that the report writer draws and closes."""

from __future__ import annotations

import numpy as np
import torch
from matplotlib.figure import Figure

__all__ = ["plot_rounds", "plot_features", "plot_feature_rounds", "plot_decoded_centres"]

_COLOURS = {"DPM": "tab:blue", "DDPM": "tab:red"}


def plot_rounds(fits: dict, title: str) -> Figure:
    """``K`` and the complete-data log joint after every Monte Carlo EM round, one line per
    restart, for each fit in ``fits`` (``{"DPM": posterior, "DDPM": posterior}``)."""
    fig = Figure(figsize=(10, 3.6), layout="constrained")
    ax_k, ax_lp = fig.subplots(1, 2)
    for method, post in fits.items():
        ks = post.samples["num_clusters"].numpy()
        lps = post.sample_stats["lp"].numpy()
        rounds = np.arange(1, ks.shape[1] + 1)
        for r in range(ks.shape[0]):
            label = method if r == 0 else None
            ax_k.plot(rounds, ks[r], color=_COLOURS.get(method), lw=1, alpha=0.8, label=label)
            ax_lp.plot(rounds, lps[r], color=_COLOURS.get(method), lw=1, alpha=0.8, label=label)
    ax_k.set(xlabel="Monte Carlo EM round", ylabel="number of clusters K")
    ax_lp.set(xlabel="Monte Carlo EM round", ylabel="complete-data log joint")
    ax_k.legend(loc="best", fontsize=8)
    fig.suptitle(title + " (one line per restart)")
    return fig


def _pca(x: np.ndarray) -> np.ndarray:
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    return centred @ vt[:2].T


def plot_features(y: torch.Tensor, z: torch.Tensor, labels: np.ndarray, title: str,
                  max_points: int = 3000, seed: int = 0) -> Figure:
    """The features ``y`` (DPM's input) beside DDPM's ``z = f(y)``, each on its first two
    principal components, coloured by the true class (at most ``max_points`` points)."""
    rng = np.random.default_rng(seed)
    keep = rng.permutation(y.shape[0])[:max_points]
    fig = Figure(figsize=(10, 4.4), layout="constrained")
    for ax, data, name in zip(fig.subplots(1, 2), (y, z), ("features y", "DDPM's z = f(y)")):
        xy = _pca(data.detach().cpu().double().numpy()[keep])
        points = ax.scatter(xy[:, 0], xy[:, 1], c=labels[keep], cmap="tab10", s=4,
                            vmin=0, vmax=9)
        ax.set(xlabel="PC 1", ylabel="PC 2", title=name)
    fig.colorbar(points, ax=fig.axes, label="true class", shrink=0.8)
    fig.suptitle(title)
    return fig


def plot_feature_rounds(snapshots: dict, labels: np.ndarray, title: str) -> Figure:
    """DDPM's ``z`` at the rounds of ``snapshots`` (``{round: (n, d) tensor}``, the first
    ``n`` points), all on the first two principal components of the last one, coloured by
    the true class."""
    rounds = sorted(snapshots)
    last = snapshots[rounds[-1]].double().numpy()
    mean = last.mean(0)
    _, _, vt = np.linalg.svd(last - mean, full_matrices=False)
    fig = Figure(figsize=(3.2 * len(rounds), 3.4), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, len(rounds)))
    for ax, r in zip(axes, rounds):
        z = snapshots[r].double().numpy()
        xy = (z - mean) @ vt[:2].T
        ax.scatter(xy[:, 0], xy[:, 1], c=labels[: z.shape[0]], cmap="tab10", s=3, vmin=0,
                   vmax=9)
        ax.set(title=f"round {r}", xlabel="PC 1", ylabel="PC 2")
    fig.suptitle(title)
    return fig


def plot_decoded_centres(post, features, labels: np.ndarray, image_shape: tuple[int, int],
                         *, per_class: int = 5, noise: float = 0.9, seed: int = 0) -> Figure:
    """Fig. 2 of the paper: for each true class, the DDPM cluster holding most of its points;
    ``per_class`` draws ``mu_k + noise * lam_k^(-1/2) eps`` through ``f^-1`` and the decoder.

    The paper's noise scale 4.5 is 0.9 times the cluster sd its MNIST preset implies (5); here
    ``noise`` is in units of each cluster's own sd.
    """
    gen = torch.Generator().manual_seed(seed)
    flow = post.params["flow"]
    mu, lam = post.params["mu"], post.params["lam"]
    assigned = post.params["labels"].numpy()
    classes = np.unique(labels)
    fig = Figure(figsize=(1.1 * per_class, 1.1 * len(classes)), layout="constrained")
    axes = fig.subplots(len(classes), per_class, squeeze=False)
    for row, c in enumerate(classes):
        k = int(np.bincount(assigned[labels == c], minlength=mu.shape[0]).argmax())
        eps = torch.randn(per_class, mu.shape[1], generator=gen, dtype=mu.dtype)
        centre = mu[k] + noise * lam[k].rsqrt() * eps
        with torch.no_grad():
            y = flow.inv(centre.to(next(flow.parameters()).dtype))
            images = features.decode(y).clamp(0, 1).cpu().numpy()
        for col in range(per_class):
            ax = axes[row, col]
            ax.imshow(images[col].reshape(image_shape), cmap="gray_r", vmin=0, vmax=1)
            ax.set_xticks([])
            ax.set_yticks([])
        axes[row, 0].set_ylabel(f"class {c}", fontsize=7)
    fig.suptitle("images decoded from DDPM cluster centres (Fig. 2)", fontsize=9)
    return fig
