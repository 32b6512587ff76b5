"""Figures of the RBHMC reproduction. Each function returns a ``matplotlib.figure.Figure``
(made without pyplot, so nothing is shown) that the report writer draws and closes."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from matplotlib.figure import Figure

__all__ = ["plot_traces", "plot_sensitivity", "plot_f_measure", "plot_chain_traces",
           "setting_label"]


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
    """CDL and RCDL per iteration (Figs. 3 and 7): one panel per ``(C, eps0)``, one pair of
    lines per chain (``frame`` from :func:`~.protocol.run_convergence`)."""
    groups = list(frame.groupby(["C", "eps0"], sort=False))
    fig = Figure(figsize=(5 * max(len(groups), 1), 3.6), layout="constrained")
    axes = np.atleast_1d(fig.subplots(1, max(len(groups), 1)))
    for ax, ((c, e), part) in zip(axes, groups):
        for chain, rows in part.groupby("chain"):
            first = chain == part.chain.min()
            ax.plot(rows.iteration, rows.cdl, color="tab:blue", lw=1,
                    label="CDL" if first else None)
            ax.plot(rows.iteration, rows.rcdl, color="tab:red", lw=1, alpha=0.8,
                    label="RCDL" if first else None)
        ax.set(xlabel="iteration", ylabel="log density", title=f"C = {c:g}, eps0 = {e:g}")
        ax.legend(loc="best", fontsize=8)
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
    """CDL (and RCDL) per sweep of every chain of one fit, warm-up included (``params`` of
    :func:`pyromodels.bhmc.fit_bhmc`), warm-up shaded."""
    fig = Figure(figsize=(7, 3.6), layout="constrained")
    ax = fig.subplots()
    for name, colour in (("cdl_trace", "tab:blue"), ("rcdl_trace", "tab:red")):
        if name not in params:
            continue
        for chain, trace in enumerate(params[name].numpy()):
            ax.plot(np.arange(1, len(trace) + 1), trace, color=colour, lw=1, alpha=0.8,
                    label=name.split("_")[0].upper() if chain == 0 else None)
    warm = params["cdl_trace"].shape[1] - params.get("num_samples", 0)
    if 0 < warm < params["cdl_trace"].shape[1]:
        ax.axvspan(0.5, warm + 0.5, color="0.9", label="warm-up")
    ax.set(xlabel="sweep", ylabel="log density")
    ax.legend(loc="best", fontsize=8)
    return fig
