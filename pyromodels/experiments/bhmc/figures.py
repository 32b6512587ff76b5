"""Figures of the RBHMC reproduction. Each function returns a ``matplotlib.figure.Figure``
(made without pyplot, so nothing is shown) that the report writer draws and closes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["plot_traces", "plot_sensitivity", "plot_f_measure", "plot_chain_traces",
           "plot_data_by_cluster", "principal_components", "setting_label"]

#: line style of each traced statistic; colours tell the chains apart
_STYLES = {"CDL": "solid", "RCDL": "dashed"}


def _chain_and_statistic_legend(ax, chains: list, statistics: list[str]) -> None:
    """A legend naming every line: one entry per chain (its colour) and one per statistic
    (its line style)."""
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], color=f"C{i % 10}", lw=1.5, label=f"chain {c}")
               for i, c in enumerate(chains)]
    handles += [Line2D([], [], color="0.3", lw=1.2, linestyle=_STYLES[s], label=s)
                for s in statistics]
    ax.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8,
              frameon=False)


def setting_label(method: str, C, eps0) -> str:
    """``"BHMC"`` or ``"RBHMC C=1, eps0=1"``.

    Example:
        >>> setting_label("RBHMC", 0.01, 1.0)
        'RBHMC C=0.01, eps0=1'
    """
    if method == "BHMC" or C is None or (isinstance(C, float) and math.isnan(C)):
        return "BHMC"
    return f"RBHMC C={C:g}, eps0={eps0:g}"


def plot_traces(frame: pd.DataFrame, title: str) -> Figure:
    """CDL (complete-data log-likelihood) and RCDL (regularised CDL) per iteration (Figs. 3
    and 7): one panel per ``(C, eps0)``, a colour per chain and a line style per statistic,
    each named in the legend (``frame`` from :func:`~.protocol.run_convergence`)."""
    groups = list(frame.groupby(["C", "eps0"], sort=False))
    fig = Figure(figsize=(5 * max(len(groups), 1) + 1, 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(len(groups), 1)))
    for ax, ((c, e), part) in zip(axes, groups):
        chains = sorted(part.chain.unique())
        for i, chain in enumerate(chains):
            rows = part[part.chain == chain]
            for stat in _STYLES:
                ax.plot(rows.iteration, rows[stat.lower()], color=f"C{i % 10}", lw=1,
                        alpha=0.8, linestyle=_STYLES[stat])
        ax.set(xlabel="iteration", ylabel="log density", title=f"C = {c:g}, eps0 = {e:g}")
        _chain_and_statistic_legend(ax, chains, list(_STYLES))
    fig.suptitle(title)
    return fig


def plot_sensitivity(frame: pd.DataFrame, title: str) -> Figure:
    """AID (lower is better) and AOD (higher is better) of each run's last tree against
    ``C`` (log axis), one line of means per ``eps0``, dots for the runs; BHMC's mean is the
    dashed line (Figs. 4 and 8). Single-path trees are left out, as the paper does."""
    kept = frame[~frame.single_path]
    fig = Figure(figsize=(10, 3.8), layout="constrained")
    for ax, metric in zip(fig.subplots(1, 2), ("aid", "aod")):
        reg = kept[kept.method == "RBHMC"]
        for e, part in reg.groupby("eps0"):
            means = part.groupby("C")[metric].mean()
            line = ax.plot(means.index, means.values, marker="o", label=f"eps0 = {e:g}")[0]
            ax.scatter(part.C, part[metric], s=8, alpha=0.4, color=line.get_color())
        base = kept[kept.method == "BHMC"][metric]
        if len(base):
            ax.axhline(float(base.mean()), color="k", ls="--", lw=1, label="BHMC")
        ax.set_xscale("log")
        ax.set(xlabel="C", ylabel=metric.upper())
        ax.legend(loc="best", fontsize=8)
    fig.suptitle(title)
    return fig


def plot_f_measure(frame: pd.DataFrame, column: str, title: str) -> Figure:
    """Per-level F-measure of every chain's best tree, one box per method and setting at each
    level (Figs. 6 and 10); ``column`` is ``"f_measure"`` (against the reference classes) or
    ``"f_true"`` (against the true clusters of the level)."""
    frame = frame.dropna(subset=[column])
    labels = [setting_label(m, c, e) for m, c, e in zip(frame.method, frame.C, frame.eps0)]
    frame = frame.assign(setting=labels)
    settings = list(dict.fromkeys(labels))
    levels = sorted(frame.level.unique())
    fig = Figure(figsize=(max(4.0, 2.2 * len(levels) * len(settings) / 2 + 2), 3.8),
                 layout="constrained")
    ax = fig.subplots()
    width = 0.8 / max(len(settings), 1)
    colours = ["tab:blue", "tab:red", "tab:green", "tab:orange", "tab:purple"]
    for j, s in enumerate(settings):
        pos = [lv + (j - (len(settings) - 1) / 2) * width for lv in levels]
        values = [frame[(frame.setting == s) & (frame.level == lv)][column].to_numpy()
                  for lv in levels]
        box = ax.boxplot(values, positions=pos, widths=width * 0.9, patch_artist=True,
                         manage_ticks=False)
        for patch in box["boxes"]:
            patch.set_facecolor(colours[j % len(colours)])
            patch.set_alpha(0.5)
        ax.plot([], [], color=colours[j % len(colours)], lw=6, alpha=0.5, label=s)
    ax.set_xticks(levels, [f"level {lv}" for lv in levels])
    ax.set(ylabel="F-measure", ylim=(0, 1.05))
    ax.legend(loc="best", fontsize=8)
    fig.suptitle(title)
    return fig


def plot_chain_traces(params: dict) -> Figure:
    """CDL (complete-data log-likelihood) and, for RBHMC, RCDL (regularised CDL) per sweep of
    every chain of one fit, warm-up included (``params`` of :func:`pyromodels.bhmc.fit_bhmc`),
    warm-up shaded; a colour per chain and a line style per statistic, each in the legend."""
    fig = Figure(figsize=(8, 3.6), layout="constrained")
    ax = fig.subplots()
    shown = [s for s in _STYLES if f"{s.lower()}_trace" in params]
    traces = {s: params[f"{s.lower()}_trace"].numpy() for s in shown}
    chains = list(range(traces["CDL"].shape[0]))
    for stat, trace in traces.items():
        for chain, row in enumerate(trace):
            ax.plot(np.arange(1, len(row) + 1), row, color=f"C{chain % 10}", lw=1, alpha=0.8,
                    linestyle=_STYLES[stat])
    warm = params["cdl_trace"].shape[1] - params.get("num_samples", 0)
    if 0 < warm < params["cdl_trace"].shape[1]:
        ax.axvspan(0.5, warm + 0.5, color="0.9")
        ax.text(0.5 + warm / 2, 0.02, "warm-up", transform=ax.get_xaxis_transform(),
                ha="center", va="bottom", fontsize=8, color="0.4")
    ax.set(xlabel="sweep", ylabel="log density")
    _chain_and_statistic_legend(ax, chains, shown)
    return fig


def principal_components(x, num: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """The data's coordinates on their first ``num`` principal components and the share of
    the variance each explains (the data themselves, padded with zeros, when they have fewer
    columns than ``num``).

    Example:
        >>> coords, share = principal_components(np.array([[0.0, 0.0], [2.0, 0.0], [4.0, 0.1]]))
        >>> coords.shape, bool(share[0] > 0.99)
        ((3, 2), True)
    """
    x = np.asarray(x, dtype=np.float64)
    if x.ndim != 2:
        raise ValueError(f"x must be (N, D), got shape {x.shape}")
    centred = x - x.mean(0)
    _, singular, vt = np.linalg.svd(centred, full_matrices=False)
    total = float((singular ** 2).sum())
    share = (singular ** 2) / total if total > 0 else np.zeros_like(singular)
    coords = centred @ vt[:num].T
    if coords.shape[1] < num:
        pad = num - coords.shape[1]
        coords = np.hstack([coords, np.zeros((len(x), pad))])
        share = np.concatenate([share, np.zeros(pad)])
    return coords, share[:num]


def plot_data_by_cluster(x, paths, names=None, max_legend: int = 12) -> Figure:
    """The data coloured by their clusters in the tree: one panel per level (level 1, the
    top split, and the leaves), each point at its first two principal components (the data
    themselves when they have two columns or fewer).

    Args:
        x: ``(N, D)`` data.
        paths: ``(N, L + 1)`` node ids of each datum's path, root first.
        names: optional ``N`` point names, written beside the points when ``N <= 60``.
        max_legend: clusters listed in a panel's legend at most (the largest ones).
    """
    x = np.asarray(x, dtype=np.float64)
    paths = np.asarray(paths)
    if paths.ndim != 2 or paths.shape[0] != len(x) or paths.shape[1] < 2:
        raise ValueError(f"paths must be (N, L + 1) with N = {len(x)} and L >= 1, got "
                         f"{paths.shape}")
    if x.shape[1] > 2:
        coords, share = principal_components(x)
        axis = [f"principal component {i + 1} ({share[i]:.0%} of the variance)"
                for i in range(2)]
    else:
        coords = np.hstack([x, np.zeros((len(x), 2 - x.shape[1]))])
        axis = ["x[0]", "x[1]" if x.shape[1] > 1 else "(none)"]
    levels = sorted({1, paths.shape[1] - 1})
    fig = Figure(figsize=(6 * len(levels) + 1, 4.6), layout="constrained")
    for ax, level in zip(np.atleast_1d(fig.subplots(1, len(levels))), levels):
        nodes, counts = np.unique(paths[:, level], return_counts=True)
        order = nodes[np.argsort(-counts, kind="stable")]
        for i, node in enumerate(order):
            inside = paths[:, level] == node
            ax.scatter(coords[inside, 0], coords[inside, 1], s=22, color=f"C{i % 10}",
                       marker="os^Dv"[(i // 10) % 5], alpha=0.85,
                       label=f"node {node} ({int(inside.sum())})" if i < max_legend else None)
        if names is not None and len(x) <= 60:
            for (a, b), name in zip(coords, names):
                ax.annotate(str(name), (a, b), fontsize=6, xytext=(2, 2),
                            textcoords="offset points", color="0.3")
        what = "level 1 (top split)" if level == 1 else f"level {level} (leaves)"
        extra = f"; the {max_legend} largest listed" if len(order) > max_legend else ""
        ax.set(xlabel=axis[0], ylabel=axis[1],
               title=f"{what}: {len(order)} clusters{extra}")
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7, frameon=False,
                  title="cluster (points)", title_fontsize=7)
    return fig
