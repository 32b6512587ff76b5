r"""Large simulated crowd-label tables in NumPy, as a DataFrame with one row per label.

:func:`~pyromodels.data.simulate_annotations` draws who labels what from an ``N x M`` table
of keys, which does not fit in memory at a million tasks and thousands of workers;
:func:`simulate_label_frame` draws the same Dawid-Skene story with memory linear in the
number of labels, so that benchmarks of millions of labels can share one simulator.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..checks import check_int, check_positive, check_probability

__all__ = ["simulate_label_frame", "distinct_workers"]

#: labels drawn per chunk (bounds the temporary ``chunk x K`` arrays)
CHUNK = 1 << 20


def distinct_workers(rng: np.random.Generator, n: int, m: int, r: int) -> np.ndarray:
    """``(n, r)`` workers of ``0 .. m - 1``, ``r`` distinct ones per task drawn uniformly
    (draws with a repeated worker are drawn again); memory linear in ``n r``."""
    chosen = rng.integers(0, m, size=(n, r))
    while True:
        ordered = np.sort(chosen, axis=1)
        bad = np.flatnonzero((ordered[:, 1:] == ordered[:, :-1]).any(axis=1))
        if not len(bad):
            return chosen
        chosen[bad] = rng.integers(0, m, size=(len(bad), r))


def simulate_label_frame(num_tasks: int, num_workers: int, num_classes: int, *,
                         labels_per_task: int, dominance: float = 0.7,
                         concentration: float = 10.0, seed: int):
    r"""Crowd labels from the Dawid-Skene model, one DataFrame row per label.

    .. math::
        z_n \sim \mathrm{Categorical}(1/K), \qquad
        \Gamma_{m,k,\cdot} \sim \mathrm{Dirichlet}(c\,a_k), \qquad
        y_{nm} \mid z_n = k \sim \mathrm{Categorical}(\Gamma_{m,k,\cdot}),

    with :math:`a_{kk} = \rho` and :math:`a_{kj} = (1 - \rho)/(K - 1)` (the workers of
    :class:`~pyromodels.data.WorkerPopulation`); each task is labelled by ``labels_per_task``
    distinct workers drawn uniformly. Rows come task by task.

    Args:
        num_tasks: ``N >= 1``.
        num_workers: ``M >= labels_per_task``.
        num_classes: ``K >= 2``.
        labels_per_task: ``r >= 1`` workers per task (``L = N r`` labels).
        dominance: ``rho`` in (0, 1), the expected diagonal of a worker's confusion matrix.
        concentration: ``c > 0``: how little the workers vary around it.
        seed: integer seed.

    Returns:
        ``(frame, truth)``: a DataFrame with int64 columns ``task``, ``worker``, ``label``
        (ids ``0 .. N - 1``, ``0 .. M - 1``, ``0 .. K - 1``) and ``truth = {"z": (N,) true
        classes, "confusion": (M, K, K) rows = true class}``.

    Example:
        >>> frame, truth = simulate_label_frame(100, 10, 3, labels_per_task=4, seed=0)
        >>> frame.shape, truth["confusion"].shape
        ((400, 3), (10, 3, 3))
        >>> int(frame.groupby("task")["worker"].nunique().min())
        4
    """
    n = check_int(num_tasks, "num_tasks", minimum=1)
    k = check_int(num_classes, "num_classes", minimum=2)
    r = check_int(labels_per_task, "labels_per_task", minimum=1)
    m = check_int(num_workers, "num_workers", minimum=r)
    rho = check_probability(dominance, "dominance")
    if not 0 < rho < 1:
        raise ValueError(f"dominance must lie strictly between 0 and 1, got {dominance!r}")
    concentration = check_positive(concentration, "concentration")
    seed = check_int(seed, "seed", minimum=0)
    rng = np.random.default_rng(seed)
    base = np.full((k, k), (1 - rho) / (k - 1))
    np.fill_diagonal(base, rho)
    confusion = np.stack([[rng.dirichlet(concentration * base[c]) for c in range(k)]
                          for _ in range(m)])
    z = rng.integers(0, k, size=n)
    workers = distinct_workers(rng, n, m, r).reshape(-1)
    tasks = np.repeat(np.arange(n, dtype=np.int64), r)
    cumulative = np.cumsum(confusion, axis=-1)
    labels = np.empty(n * r, dtype=np.int64)
    for lo in range(0, n * r, CHUNK):
        hi = min(lo + CHUNK, n * r)
        rows = cumulative[workers[lo:hi], z[tasks[lo:hi]]]
        u = rng.random(hi - lo)[:, None]
        labels[lo:hi] = np.minimum((u >= rows).sum(-1), k - 1)
    frame = pd.DataFrame({"task": tasks, "worker": workers.astype(np.int64), "label": labels})
    return frame, {"z": z, "confusion": confusion}
