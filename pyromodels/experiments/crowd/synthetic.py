r"""The ensemble paper's synthetic studies (its Figs. 4-10): recovery against N and against M.

**Sequential data** (Figs. 4-7). :math:`S = N / 40` sequences of 40 labels from a Markov chain
with :math:`K = 4` states whose transition rows are Dirichlet(:math:`\mathbf 1_K`) draws (the
paper: "drawn at random such that T is column-stochastic"), started at its stationary law.
Of the :math:`M` workers, :math:`\lfloor M/2 \rfloor + 1` are better than random: their
confusion rows are Dirichlet(:math:`\mathbf 1_K`) draws with the largest entry swapped onto
the diagonal (assumption As2); the other :math:`M - \lfloor M/2\rfloor - 1` answer from raw
Dirichlet(:math:`\mathbf 1_K`) rows. Every worker labels every item.

**Networked data** (Figs. 8-10). :math:`N` items with uniform classes on a stochastic block
model graph whose communities are the classes (90% of the edges within a class) and mean
degree :math:`\bar d \in \{0.5, 5\}`; all :math:`M` workers are better than random (the
paper's networked study says so), :math:`\delta = M`.

**Scores.** The F-score is eq. 37 computed on the raw labels (no relabelling: the methods
identify the classes themselves, by As2 or majority vote): per sequence over the classes
present in the sequence's truth or prediction, then averaged over sequences (sequential), or
pooled over all items (networked). For the parameter errors the estimate's classes are first
matched to the true classes by the Hungarian map of its labels against the truth
(:func:`~pyromodels.metrics.hungarian_mapping`); the confusion error is eq. 38,
:func:`~pyromodels.metrics.confusion_matrix_error` (mean induced 1-norm), and the transition
error :math:`\lVert T - \hat T\rVert_1` in the paper's column-stochastic orientation, i.e. the
largest absolute row sum of the difference of our row-stochastic matrices. "Single best" is
the worker with the best F-score against the truth (an oracle choice, as in the paper), and
"oracle" is Viterbi with the true parameters.

Example:
    >>> settings = SyntheticSettings(runs=2, sizes=(400, 1000))
    >>> frame = sequential_study(settings, vary="N", seed=0)  # doctest: +SKIP
    >>> summarize(frame).loc[(1000, "oracle"), ("f_score", "mean")]  # doctest: +SKIP
    0.95...
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import torch

from ...checks import check_in, check_int
from ...core.seeding import derive_seed
from ...data import WorkerPopulation, simulate_networked_annotations, simulate_sequential_annotations
from ...metrics import confusion_matrix_error, hungarian_mapping
from .inputs.common import CrowdTask
from .scores import score_task, single_best
from .tables import MethodSettings, networked_estimates, sequential_estimates

__all__ = ["SyntheticSettings", "SEQUENTIAL_FIGURE_METHODS", "NETWORKED_FIGURE_METHODS",
           "simulate_sequential", "simulate_networked", "class_permutation",
           "parameter_errors", "sequential_study", "networked_study", "summarize"]

SEQUENTIAL_FIGURE_METHODS = ("mv", "mm", "alg2", "alg2_alg1", "mv_alg1", "oracle")
NETWORKED_FIGURE_METHODS = ("mv", "mm", "alg4", "mv_alg3")
_METRICS = ("f_score", "confusion_error", "transition_error")


@dataclass(frozen=True)
class SyntheticSettings:
    """Sizes of the synthetic studies.

    Attributes:
        num_classes: ``K`` (the paper: 4).
        num_workers: ``M`` of the studies against ``N`` (the paper: 10).
        length: sequence length (the paper: 40).
        runs: Monte Carlo runs per point (the paper: 10).
        sizes: the ``N`` of the sequential study against ``N`` (multiples of ``length``).
        worker_counts: the ``M`` of the study against ``M``.
        size_for_workers: ``N`` of the study against ``M`` (the paper: 1000).
        networked_sizes: the ``N`` of the networked studies.
        within: share of SBM edges inside a class (the mean degree is an argument of
            :func:`networked_study`; the paper: 0.5 and 5).
        methods: :class:`~pyromodels.experiments.crowd.tables.MethodSettings`.
    """

    num_classes: int = 4
    num_workers: int = 10
    length: int = 40
    runs: int = 10
    sizes: tuple[int, ...] = (200, 480, 1000, 2000, 5000, 10000)
    worker_counts: tuple[int, ...] = (4, 6, 8, 10, 14, 20)
    size_for_workers: int = 1000
    networked_sizes: tuple[int, ...] = (200, 500, 1000, 2000, 5000, 10000)
    within: float = 0.9
    methods: MethodSettings = field(default_factory=MethodSettings)

    def __post_init__(self):
        length = check_int(self.length, "length", minimum=2)
        for name in ("sizes", "size_for_workers"):
            values = getattr(self, name)
            for n in values if name == "sizes" else (values,):
                if check_int(n, name, minimum=length) % length:
                    raise ValueError(f"{name} must be multiples of the sequence length {length} "
                                     f"(whole sequences), got {n}")


def _num_random(m: int) -> int:
    """Workers no better than random: all but ``floor(M / 2) + 1``."""
    return m - (m // 2 + 1)


def simulate_sequential(n: int, m: int, settings: SyntheticSettings, *, seed: int):
    """``(sequences, truth)`` of the sequential study with ``N = n`` items, ``M = m`` workers
    (``n`` must be a multiple of the sequence length)."""
    n = check_int(n, "n", minimum=settings.length)
    if n % settings.length:
        raise ValueError(f"n must be a multiple of the sequence length {settings.length}, got {n}")
    k = settings.num_classes
    workers = WorkerPopulation(m, dominance=1.0 / k, concentration=k, num_random=_num_random(m),
                               force_dominant=True)
    return simulate_sequential_annotations(
        [settings.length] * (n // settings.length), workers, k, seed=seed)


def simulate_networked(n: int, mean_degree: float, settings: SyntheticSettings, *, seed: int):
    """``(table, graph, truth)`` of the networked study."""
    k = settings.num_classes
    workers = WorkerPopulation(settings.num_workers, dominance=1.0 / k, concentration=k,
                               force_dominant=True)
    return simulate_networked_annotations(
        n, workers, k, mean_degree=mean_degree, within=settings.within, seed=seed)


def class_permutation(truth_labels, labels, num_classes: int) -> torch.Tensor:
    """``perm`` with ``perm[k]`` the estimate's class matched to true class ``k``.

    The Hungarian map of ``labels`` against ``truth_labels``; classes the estimate never uses
    fill the unmatched true classes in increasing order.
    """
    mapping = hungarian_mapping(np.asarray(truth_labels), np.asarray(labels))
    perm = [-1] * num_classes
    for est, true in mapping.items():
        perm[int(true)] = int(est)
    free = iter(sorted(set(range(num_classes)) - set(perm)))
    return torch.tensor([p if p >= 0 else next(free) for p in perm])


def parameter_errors(truth: dict, estimate, perm: torch.Tensor) -> dict:
    """Eq. 38 confusion error and the transition error of ``estimate`` after relabelling its
    classes by ``perm`` (NaN where the method has no such estimate)."""
    out = dict.fromkeys(_METRICS[1:], float("nan"))
    if estimate.confusion is not None:
        conf = estimate.confusion.detach().cpu()[:, perm][:, :, perm]
        out["confusion_error"] = confusion_matrix_error(
            truth["confusion"].transpose(-1, -2), conf.transpose(-1, -2), align=False)
    if estimate.transition is not None:
        trans = estimate.transition.detach().cpu()[perm][:, perm]
        diff = (truth["transition"] - trans).abs().sum(-1)
        out["transition_error"] = float(diff.max())
    return out


def _rows(task: CrowdTask, truth: dict, estimates: dict, base: dict) -> list[dict]:
    rows = [{**base, "method": "single_best", "f_score": single_best(task).scores.f_score,
             "confusion_error": float("nan"), "transition_error": float("nan"),
             "seconds": float("nan")}]
    gold = task.gold.numpy()
    for method, est in estimates.items():
        perm = class_permutation(gold, est.labels.cpu().numpy(), task.num_classes)
        rows.append({**base, "method": method, "f_score": score_task(task, est.labels).f_score,
                     **parameter_errors(truth, est, perm), "seconds": est.seconds})
    return rows


def _task(name, data, truth, classes, metric, graph=None) -> CrowdTask:
    return CrowdTask(name, data, truth["z"].long(), classes, graph=graph, metric=metric)


def sequential_study(settings: SyntheticSettings, *, vary: str, seed: int = 0,
                     methods=SEQUENTIAL_FIGURE_METHODS, progress=None) -> pd.DataFrame:
    """Figs. 4-5 (``vary="N"``) or Figs. 6-7 (``vary="M"``): every method on ``runs`` data
    sets per point.

    Args:
        settings: :class:`SyntheticSettings`.
        vary: ``"N"`` (``settings.sizes``, ``M = settings.num_workers``) or ``"M"``
            (``settings.worker_counts``, ``N = settings.size_for_workers``).
        seed: integer seed; run ``r`` at point ``x`` uses ``derive_seed(seed, vary, x, r)``.
        methods: keys of :data:`~pyromodels.experiments.crowd.tables.SEQUENTIAL_METHODS`.
        progress: optional callable ``progress(message)`` called before each run.

    Returns:
        Long DataFrame: ``x`` (the varied value), ``run``, ``method``, ``f_score``,
        ``confusion_error``, ``transition_error``, ``seconds``.
    """
    check_in(vary, "vary", ("N", "M"))
    seed = check_int(seed, "seed", minimum=0)
    points = settings.sizes if vary == "N" else settings.worker_counts
    metric = {"scheme": "macro", "average": "sequence", "classes": "present"}
    rows = []
    for x in points:
        n, m = (x, settings.num_workers) if vary == "N" else (settings.size_for_workers, x)
        for r in range(check_int(settings.runs, "runs", minimum=1)):
            if progress is not None:
                progress(f"sequential, {vary} = {x}, run {r + 1}/{settings.runs}")
            run_seed = derive_seed(seed, "sequential", vary, x, r)
            sequences, truth = simulate_sequential(n, m, settings, seed=run_seed)
            task = _task("synthetic-sequential", sequences, truth,
                         [str(c) for c in sequences.data.classes], metric)
            estimates = sequential_estimates(sequences, methods, settings.methods,
                                             seed=run_seed, truth=truth)
            rows += _rows(task, truth, estimates, {"x": x, "run": r})
    return pd.DataFrame(rows)


def networked_study(settings: SyntheticSettings, *, mean_degree: float, seed: int = 0,
                    methods=NETWORKED_FIGURE_METHODS, progress=None) -> pd.DataFrame:
    """Figs. 8-9 (``mean_degree=0.5``) and Fig. 10 (``mean_degree=5``): the networked
    methods against ``N`` (``settings.networked_sizes``), ``delta = M``.

    Returns:
        Long DataFrame as :func:`sequential_study` (``transition_error`` is NaN).
    """
    seed = check_int(seed, "seed", minimum=0)
    metric = {"scheme": "macro", "average": "pooled", "classes": "all"}
    rows = []
    for n in settings.networked_sizes:
        for r in range(check_int(settings.runs, "runs", minimum=1)):
            if progress is not None:
                progress(f"networked, mean degree {mean_degree}, N = {n}, run {r + 1}")
            run_seed = derive_seed(seed, "networked", float(mean_degree), n, r)
            table, graph, truth = simulate_networked(n, mean_degree, settings, seed=run_seed)
            task = _task("synthetic-networked", table, truth, [str(c) for c in table.classes],
                         metric, graph)
            estimates = networked_estimates(table, graph, methods, settings.methods,
                                            delta="M", seed=run_seed)
            rows += _rows(task, truth, estimates, {"x": n, "run": r})
    return pd.DataFrame(rows)


def summarize(frame: pd.DataFrame) -> pd.DataFrame:
    """Mean and standard deviation over runs of each metric, per ``(x, method)``.

    Returns:
        DataFrame indexed by ``(x, method)`` with columns ``(metric, "mean" | "sd")``; the sd
        is the sample standard deviation (0 for a single run).
    """
    grouped = frame.groupby(["x", "method"], sort=True)[list(_METRICS)]
    mean = grouped.mean()
    sd = grouped.std(ddof=1).where(grouped.count() > 1, 0.0).where(mean.notna())
    return pd.concat({"mean": mean, "sd": sd}, axis=1).swaplevel(axis=1).sort_index(axis=1)
