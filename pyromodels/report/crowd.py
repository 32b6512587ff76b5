"""What a crowd-label fit gives its user: labels per task, worker confusions with their
uncertainty, the posterior entropy of each task and, given gold labels, the scores.

Everything is indexed by the user's own task, worker and class ids. The worker confusions are
``confusion[m, k, j] = P(worker m answers j | true class k)`` (rows = true class): for a sampled
fit each cell shows the posterior mean and a central interval over the draws, for a point
estimate (EM) the estimate alone.

Example:
    >>> out = crowd_outputs(table, probabilities, confusion_draws)  # doctest: +SKIP
    >>> out.labels.columns.tolist()  # doctest: +SKIP
    ['task', 'label', 'p_0', 'p_1', 'entropy']
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field, replace

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import torch

from ..checks import check_int, check_probability
from ..data.annotations import AnnotationTable
from ..metrics import macro_f1
from .fit_warnings import (
    baseline_warnings,
    extend_summary,
    near_uniform_warnings,
    with_warnings,
)
from .result import DemoResult

__all__ = ["CrowdOutputs", "crowd_outputs", "label_table", "entropy", "gold_scores",
           "GoldLabelWarning", "plot_worker_confusions", "with_crowd_outputs", "LABELS_FILE",
           "CONFUSION_FILE"]

LABELS_FILE = "labels.csv"
CONFUSION_FILE = "worker_confusion.csv"


@dataclass
class CrowdOutputs:
    """The results of one crowd fit, ready for the report.

    Attributes:
        labels: one row per task: ``task``, ``label`` (the most probable class), ``p_<class>``
            for each class, ``entropy`` (nats).
        confusion: one row per (worker, true class, answer): ``mean``, ``lower``, ``upper``.
        workers: one row per worker: labels given, probability of a right answer (mean and
            interval), sorted by the number of labels.
        metrics: scalar summaries (and ``gold`` scores when gold labels were given, with
            ``majority_vote`` scores beside them when majority-vote labels were given).
        figures: the worker-confusion and entropy figures.
        files: ``{file name: DataFrame}`` written beside the report as CSV.
        warnings: sentences saying why the fit may have failed (see
            :mod:`~pyromodels.report.fit_warnings`): near-uniform worker confusions, accuracy
            on gold below majority vote's.
    """

    labels: pd.DataFrame
    confusion: pd.DataFrame
    workers: pd.DataFrame
    metrics: dict
    figures: dict = field(default_factory=dict)
    files: dict = field(default_factory=dict)
    warnings: list = field(default_factory=list)


def entropy(probabilities) -> np.ndarray:
    """Entropy in nats of each row of a ``(N, K)`` probability matrix (``0 log 0 = 0``)."""
    p = np.asarray(torch.as_tensor(probabilities).detach().cpu().double())
    if p.ndim != 2:
        raise ValueError(f"probabilities must be (N, K), got shape {p.shape}")
    logs = np.log(np.where(p > 0, p, 1.0))
    return -(p * logs).sum(axis=1)


def label_table(table: AnnotationTable, probabilities) -> pd.DataFrame:
    """``labels.csv``: task id, most probable label, one probability column per class
    (``p_<class id>``) and the posterior entropy, one row per task of ``table``."""
    p = torch.as_tensor(probabilities).detach().cpu().double()
    if tuple(p.shape) != (table.num_items, table.num_classes):
        raise ValueError(f"probabilities must have shape ({table.num_items}, "
                         f"{table.num_classes}), got {tuple(p.shape)}")
    frame = pd.DataFrame({"task": table.items.to_numpy(),
                          "label": table.decode_classes(p.argmax(-1))})
    for k, cls in enumerate(table.classes):
        frame[f"p_{cls}"] = p[:, k].numpy()
    frame["entropy"] = entropy(p)
    return frame


def _draws(confusion) -> np.ndarray:
    """Confusion draws as a float64 array ``(S, M, K, K)`` (``S = 1`` for a point estimate)."""
    draws = torch.as_tensor(confusion).detach().cpu().double()
    if draws.dim() < 3:
        raise ValueError(f"confusion must end in (M, K, K), got shape {tuple(draws.shape)}")
    return draws.reshape(-1, *draws.shape[-3:]).numpy()


def _some(values, shown: int = 5) -> str:
    """Up to ``shown`` of ``values`` by their repr, sorted, with ``...`` when there are more."""
    names = sorted(repr(v) for v in values)
    return ", ".join(names[:shown]) + (", ..." if len(names) > shown else "")


class GoldLabelWarning(UserWarning):
    """Gold labels that no worker gives: the fit cannot predict them, so they score as errors."""


def gold_scores(labels: pd.DataFrame, gold: pd.Series, classes=None) -> dict:
    """Accuracy and macro-F1 of ``labels`` (a :func:`label_table`) on the tasks that have gold.

    Args:
        labels: the :func:`label_table` of the fit.
        gold: gold labels indexed by task id.
        classes: the labels the workers give (the table's classes); a scored gold label
            outside them can never be predicted and gets a :class:`GoldLabelWarning`.

    Raises:
        ValueError: no task of ``labels`` has a gold label.

    Warns:
        GoldLabelWarning: naming the gold labels no worker gives and how many scored tasks
            hold them (often the same label written as another type, ``'1'`` for ``1``).
    """
    predicted = labels.set_index("task")["label"]
    common = predicted.index.intersection(gold.index)
    if len(common) == 0:
        raise ValueError("no task of the data has a gold label: check that the gold file uses "
                         "the same task ids")
    y_pred, y_true = predicted.loc[common].to_numpy(), gold.loc[common].to_numpy()
    if classes is not None:
        known = set(classes)
        unknown = pd.Series(y_true)[[v not in known for v in y_true]]
        if len(unknown):
            warnings.warn(
                f"gold holds labels that no worker gives, {_some(set(unknown))} (on "
                f"{len(unknown)} of the {len(common)} scored tasks): the fit cannot predict "
                f"them, so they score as errors; the workers give {_some(known)} (check the "
                "gold file's label ids and their type)", GoldLabelWarning, stacklevel=3)
    return {"accuracy": float(np.mean(y_pred == y_true)),
            "macro_f1": macro_f1(y_true, y_pred), "num_scored": int(len(common)),
            "num_without_gold": int(len(predicted) - len(common))}


def plot_worker_confusions(table: AnnotationTable, mean, lower=None, upper=None,
                           max_workers: int = 9) -> plt.Figure:
    """Heatmaps of the confusion matrices of the workers with the most labels.

    Each cell is coloured by its mean (or point estimate) and labelled with it, and with the
    interval ``[lower, upper]`` when given. Rows are the true classes, columns the answers.
    """
    max_workers = check_int(max_workers, "max_workers", minimum=1)
    counts = table.counts_per_worker().cpu().numpy()
    order = np.argsort(-counts, kind="stable")[:max_workers]
    cols = min(3, len(order))
    rows = math.ceil(len(order) / cols)
    k = table.num_classes
    size = 1.0 + 0.75 * k
    fig, axes = plt.subplots(rows, cols, figsize=(cols * size + 1, rows * size + 0.6),
                             squeeze=False, constrained_layout=True)
    classes = [str(c) for c in table.classes]
    image = None
    for ax, m in zip(axes.flat, order):
        image = ax.imshow(mean[m], vmin=0.0, vmax=1.0, cmap="Blues")
        for i in range(k):
            for j in range(k):
                text = f"{mean[m, i, j]:.2f}"
                if lower is not None:
                    text += f"\n[{lower[m, i, j]:.2f}, {upper[m, i, j]:.2f}]"
                ax.text(j, i, text, ha="center", va="center", fontsize=7,
                        color="white" if mean[m, i, j] > 0.6 else "black")
        ax.set_title(f"worker {table.workers[m]} ({counts[m]} labels)", fontsize=8)
        ax.set_xticks(range(k), classes, fontsize=7)
        ax.set_yticks(range(k), classes, fontsize=7)
        ax.set_xlabel("answer", fontsize=7)
        ax.set_ylabel("true class", fontsize=7)
    for ax in list(axes.flat)[len(order):]:
        ax.axis("off")
    if image is not None:
        fig.colorbar(image, ax=axes, shrink=0.6, label="P(answer | true class)")
    return fig


def _plot_entropy(values: np.ndarray, num_classes: int) -> plt.Figure:
    fig, ax = plt.subplots(figsize=(5, 3), constrained_layout=True)
    ax.hist(values, bins=30, range=(0.0, math.log(num_classes)), color="tab:blue")
    ax.set_xlabel("posterior entropy of the task's label (nats)")
    ax.set_ylabel("tasks")
    ax.set_title(f"uncertainty per task (maximum log {num_classes} = {math.log(num_classes):.2f})")
    return fig


def _majority_table(table: AnnotationTable, majority) -> pd.DataFrame:
    """The :func:`label_table` columns ``task`` and ``label`` of majority-vote label codes."""
    codes = torch.as_tensor(majority).detach().cpu()
    if codes.dtype.is_floating_point or tuple(codes.shape) != (table.num_items,):
        raise ValueError(f"majority must hold one integer class code per task, shape "
                         f"({table.num_items},), got {codes.dtype} {tuple(codes.shape)}")
    if bool(((codes < 0) | (codes >= table.num_classes)).any()):
        raise ValueError(f"majority must hold class codes in 0 .. {table.num_classes - 1}")
    return pd.DataFrame({"task": table.items.to_numpy(),
                         "label": table.decode_classes(codes)})


def crowd_outputs(table: AnnotationTable, probabilities, confusion, *, gold=None,
                  majority=None, interval: float = 0.9, max_workers: int = 9) -> CrowdOutputs:
    """Collect the labels, the worker confusions and the entropies of one crowd fit.

    Args:
        table: the fitted :class:`~pyromodels.data.AnnotationTable`.
        probabilities: ``(N, K)`` posterior class probabilities of the tasks.
        confusion: confusion draws ``(..., M, K, K)`` (rows = true class); one draw for a
            point estimate, in which case no interval is shown.
        gold: optional Series of gold labels indexed by task id.
        majority: optional ``(N,)`` majority-vote class codes of the tasks (for example
            :func:`~pyromodels.crowd.majority.majority_vote`); with ``gold`` they are scored
            too, as the baseline the fit should reach, and a warning says when the fit's
            accuracy is below theirs.
        interval: mass of the central interval drawn for each cell (default 0.9).
        max_workers: how many workers (those with the most labels) the figure shows.

    Returns:
        :class:`CrowdOutputs`.
    """
    interval = check_probability(interval, "interval")
    labels = label_table(table, probabilities)
    draws = _draws(confusion)
    m, k = table.num_workers, table.num_classes
    if draws.shape[1:] != (m, k, k):
        raise ValueError(f"confusion must end in ({m}, {k}, {k}), got {draws.shape[1:]}")
    tail = (1.0 - interval) / 2.0
    mean = draws.mean(0)
    lower, upper = np.quantile(draws, [tail, 1.0 - tail], axis=0)
    index = pd.MultiIndex.from_product([table.workers, table.classes, table.classes],
                                       names=["worker", "true", "answer"])
    long = pd.DataFrame({"mean": mean.ravel(), "lower": lower.ravel(), "upper": upper.ravel()},
                        index=index).reset_index()
    weights = labels[[f"p_{c}" for c in table.classes]].to_numpy().mean(0)
    right = (np.diagonal(draws, axis1=-2, axis2=-1) * weights).sum(-1)
    workers = pd.DataFrame({
        "labels": table.counts_per_worker().cpu().numpy(),
        "p_right": right.mean(0),
        "p_right_lower": np.quantile(right, tail, axis=0),
        "p_right_upper": np.quantile(right, 1.0 - tail, axis=0),
    }, index=pd.Index(table.workers, name="worker")).sort_values("labels", ascending=False)
    sampled = draws.shape[0] > 1
    title = ("worker confusions: posterior mean and "
             f"{interval:.0%} interval per cell" if sampled else
             "worker confusions: point estimate")
    figures = {
        title: plot_worker_confusions(table, mean, lower if sampled else None,
                                      upper if sampled else None, max_workers),
        "posterior entropy per task": _plot_entropy(labels["entropy"].to_numpy(), k),
    }
    metrics = {"num_tasks": int(len(labels)), "num_workers": m, "num_classes": k,
               "mean_entropy": float(labels["entropy"].mean()),
               "tasks_above_half_max_entropy": int(
                   (labels["entropy"] > 0.5 * math.log(k)).sum()),
               "confusion_interval": interval if sampled else None}
    warnings = near_uniform_warnings(mean, table.workers)
    if gold is not None:
        metrics["gold"] = gold_scores(labels, gold, table.classes)
        if majority is not None:
            base = gold_scores(_majority_table(table, majority), gold)
            metrics["majority_vote"] = base
            warnings += baseline_warnings(metrics["gold"]["accuracy"], base["accuracy"],
                                          base["num_scored"])
    if not sampled:
        long = long.drop(columns=["lower", "upper"]).rename(columns={"mean": "estimate"})
        workers = workers.drop(columns=["p_right_lower", "p_right_upper"])
    return CrowdOutputs(labels=labels, confusion=long, workers=workers, metrics=metrics,
                        figures=figures, files={LABELS_FILE: labels, CONFUSION_FILE: long},
                        warnings=warnings)


def _without_site(frame: pd.DataFrame, site: str) -> pd.DataFrame:
    keep = [not str(label).startswith(f"{site}[") for label in frame.index]
    return frame.loc[keep]


def with_crowd_outputs(result: DemoResult, outputs: CrowdOutputs, method: str) -> DemoResult:
    """``result`` (see :func:`~pyromodels.report.result_from_posterior`) with the crowd
    outputs added: their figures first, the worker table instead of the flat per-cell
    ``confusion[m, k, j]`` rows, the entropy and gold metrics under ``method``, the
    majority-vote baseline beside the gold scores, and the outputs' warnings."""
    tables = {name: _without_site(frame, "confusion") for name, frame in result.tables.items()}
    tables = {name: frame for name, frame in tables.items() if len(frame)}
    tables = {"workers: labels given and probability of a right answer": outputs.workers,
              "tasks: the 20 most uncertain labels":
                  outputs.labels.nlargest(20, "entropy").set_index("task"),
              **tables}
    if "gold" in outputs.metrics:
        scores = pd.DataFrame(outputs.metrics["gold"], index=[method])
        if "majority_vote" in outputs.metrics:
            scores.loc["majority vote (baseline)"] = outputs.metrics["majority_vote"]
        tables = {"scores against gold": scores, **tables}
    metrics = {**result.metrics}
    metrics[method] = {**metrics.get(method, {}), **outputs.metrics}
    summary = (f" Labels of {outputs.metrics['num_tasks']} tasks are in "
               f"{LABELS_FILE} (one probability column per class and the posterior entropy); "
               f"the worker confusions in {CONFUSION_FILE}.")
    if "gold" in outputs.metrics:
        g = outputs.metrics["gold"]
        summary += (f" Against gold ({g['num_scored']} tasks): accuracy {g['accuracy']:.3f}, "
                    f"macro-F1 {g['macro_f1']:.3f}.")
        if "majority_vote" in outputs.metrics:
            b = outputs.metrics["majority_vote"]
            summary += (f" Majority vote (the baseline) on the same tasks: accuracy "
                        f"{b['accuracy']:.3f}, macro-F1 {b['macro_f1']:.3f}.")
    result = replace(result, summary=extend_summary(result.summary, summary), metrics=metrics,
                     tables=tables,
                     figures={**outputs.figures, **result.figures})
    return with_warnings(result, method, outputs.warnings)
