"""Figures of the ensemble paper's reproduction: the synthetic curves (Figs. 4-10) with +-1 sd
error bars, and our Table I / II scores against the paper's.

Every function returns a new ``matplotlib.figure.Figure`` (built without pyplot, so nothing is
shown and no global figure state is touched).

Example:
    >>> from pyromodels.experiments.crowd.synthetic import summarize  # doctest: +SKIP
    >>> fig = plot_study(summarize(frame), ("f_score",), xlabel="N")  # doctest: +SKIP
"""

from __future__ import annotations

import pandas as pd
from matplotlib.figure import Figure

from ...checks import check_in
from .paper_numbers import METHOD_LABELS

__all__ = ["LABELS", "METRIC_LABELS", "plot_study", "plot_ours_vs_paper", "plot_worker_confusions"]

LABELS = {**METHOD_LABELS, "mm": "MM", "oracle": "Oracle", "alg2_alg1": "Alg. 2 + Alg. 1"}
METRIC_LABELS = {"f_score": "average F-score", "confusion_error": "confusion-matrix error",
                 "transition_error": "transition-matrix error"}
_ORDER = ("single_best", "mv", "mm", "ds", "alg2", "alg2_alg1", "mv_alg1", "alg4", "mv_alg3",
          "oracle")


def _colour(method: str, methods) -> str:
    index = _ORDER.index(method) if method in _ORDER else len(_ORDER) + list(methods).index(method)
    return f"C{index % 10}"


def _check_summary(summary) -> None:
    if not isinstance(summary, pd.DataFrame) or summary.index.names != ["x", "method"]:
        raise TypeError("summary must be the DataFrame of crowd_synthetic.summarize "
                        "(index (x, method), columns (metric, mean | sd))")


def plot_study(summary: pd.DataFrame, metrics=("f_score",), *, xlabel: str = "N",
               title: str = "", log_x: bool = True) -> Figure:
    """One panel per metric: mean over runs against ``x`` with +-1 sd error bars, per method.

    Args:
        summary: :func:`~pyromodels.experiments.crowd.synthetic.summarize` output.
        metrics: metrics to draw, from ``f_score``, ``confusion_error``,
            ``transition_error``; methods without a value for a metric are left out of its
            panel.
        xlabel: the varied quantity (``"N"`` or ``"M"``).
        title: the figure's title.
        log_x: logarithmic x axis.

    Returns:
        The figure, ``len(metrics)`` panels side by side.
    """
    _check_summary(summary)
    metrics = tuple(metrics)
    if not metrics:
        raise ValueError("metrics must name at least one metric")
    for metric in metrics:
        check_in(metric, "metrics", tuple(METRIC_LABELS))
    fig = Figure(figsize=(4.6 * len(metrics), 3.8), layout="constrained")
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    present = summary.index.get_level_values("method").unique()
    methods = [m for m in _ORDER if m in present] + [m for m in present if m not in _ORDER]
    for ax, metric in zip(axes, metrics):
        for method in methods:
            part = summary.xs(method, level="method")[metric].dropna(subset=["mean"])
            if part.empty:
                continue
            # one colour per method in every panel (a method absent from a panel must not
            # shift the colours of the others)
            style = {"color": _colour(method, methods)}
            if method in ("oracle", "single_best"):
                style["linestyle"] = "--"
            ax.errorbar(part.index.to_numpy(), part["mean"].to_numpy(), yerr=part["sd"].to_numpy(),
                        marker="o", markersize=3.5, capsize=3, label=LABELS.get(method, method),
                        **style)
        if log_x:
            ax.set_xscale("log")
        ax.set_xlabel(xlabel)
        ax.set_ylabel(METRIC_LABELS[metric])
        ax.grid(alpha=0.3)
    # every method of every panel, beside the last panel where it cannot cover a curve
    entries = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    axes[-1].legend(list(entries.values()), list(entries), fontsize=7, loc="upper left",
                    bbox_to_anchor=(1.02, 1.0))
    if title:
        fig.suptitle(title)
    return fig


def plot_ours_vs_paper(table: pd.DataFrame, metric: str = "f_score", *, title: str = "") -> Figure:
    """Our score against the paper's for every ``(dataset, method)`` row that has both.

    Args:
        table: rows of :func:`~pyromodels.experiments.crowd.tables.score_methods`.
        metric: ``"precision"``, ``"recall"`` or ``"f_score"``.
        title: the axes' title.

    Returns:
        A scatter plot with the diagonal ``ours = paper``; colours mark the data sets and
        markers the methods.
    """
    check_in(metric, "metric", ("precision", "recall", "f_score"))
    if f"{metric} (paper)" not in getattr(table, "columns", ()):
        raise ValueError(f"table must hold the columns {metric!r} and '{metric} (paper)'")
    rows = table[[metric, f"{metric} (paper)"]].dropna()
    fig = Figure(figsize=(5.2, 4.6), layout="constrained")
    ax = fig.subplots()
    ax.plot([0, 1], [0, 1], color="grey", linewidth=0.8)
    markers = dict(zip(_ORDER, "osD^v<>pPX"))
    datasets = list(dict.fromkeys(rows.index.get_level_values("dataset")))
    colours = dict(zip(datasets, [f"C{i}" for i in range(len(datasets))]))
    for (dataset, method), (ours, theirs) in rows.iterrows():
        ax.scatter(theirs, ours, color=colours[dataset], marker=markers.get(method, "o"), s=30)
    for dataset, colour in colours.items():
        ax.scatter([], [], color=colour, marker="s", label=dataset)
    for method in dict.fromkeys(rows.index.get_level_values("method")):
        ax.scatter([], [], color="black", marker=markers.get(method, "o"),
                   label=LABELS.get(method, method))
    ax.set_xlim(0, 1.02)
    ax.set_ylim(0, 1.02)
    ax.set_xlabel(f"paper's {metric.replace('_', '-')}")
    ax.set_ylabel(f"our {metric.replace('_', '-')}")
    ax.set_title(title or f"ours vs the paper ({len(rows)} entries)")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))  # off the points
    ax.grid(alpha=0.3)
    return fig


def plot_worker_confusions(posterior, *, max_workers: int = 6, counts=None, names=None) -> Figure:
    """Posterior confusion matrices of the busiest workers as heat maps, mean +- sd per cell.

    Args:
        posterior: a Dawid-Skene :class:`~pyromodels.core.Posterior` with draws of
            ``confusion`` shaped ``(chain, draw, M, K, K)`` (rows: true class, columns: the
            label given).
        max_workers: how many workers to draw.
        counts: ``(M,)`` labels given per worker, to pick the busiest; the first workers when
            ``None``.
        names: the ``M`` worker ids for the titles; the worker codes when ``None``.

    Returns:
        One heat map per worker on a common ``[0, 1]`` colour scale, with the posterior mean
        and standard deviation written in every cell.
    """
    import numpy as np

    if "confusion" not in getattr(posterior, "samples", {}):
        raise ValueError("posterior must hold draws of the 'confusion' site (chain, draw, M, K, K)")
    draws = posterior.samples["confusion"].detach().double().cpu().numpy()
    if draws.ndim != 5 or draws.shape[-1] != draws.shape[-2]:
        raise ValueError(f"posterior.samples['confusion'] must be (chain, draw, M, K, K), got "
                         f"{draws.shape}")
    draws = draws.reshape(-1, *draws.shape[2:])
    num_workers, k = draws.shape[1], draws.shape[-1]
    order = (np.argsort(-np.asarray(counts), kind="stable") if counts is not None
             else np.arange(num_workers))[:max_workers]
    mean, sd = draws.mean(0), draws.std(0)
    fig = Figure(figsize=(2.4 * len(order) + 0.8, 2.8), layout="constrained")
    axes = fig.subplots(1, len(order), squeeze=False)[0]
    for ax, worker in zip(axes, order):
        image = ax.imshow(mean[worker], vmin=0.0, vmax=1.0, cmap="viridis")
        for i in range(k):
            for j in range(k):
                colour = "black" if mean[worker, i, j] > 0.6 else "white"
                ax.text(j, i, f"{mean[worker, i, j]:.2f}\n+-{sd[worker, i, j]:.2f}",
                        ha="center", va="center", fontsize=7, color=colour)
        label = names[worker] if names is not None else worker
        ax.set_title(f"worker {label}" + (f"\n{int(counts[worker])} labels"
                                           if counts is not None else ""), fontsize=7)
        ax.set_xlabel("label given")
        ax.set_xticks(range(k))
        ax.set_yticks(range(k))
    axes[0].set_ylabel("true class")
    fig.colorbar(image, ax=list(axes), label="P(label given | true class)", shrink=0.9)
    return fig

