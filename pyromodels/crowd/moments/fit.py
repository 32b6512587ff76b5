r"""Moment matching for crowd labels: the coupled simplex-constrained PARAFAC fit (eq. 17).

The ensemble paper (§3.2, following its reference [18]) estimates the class prior
:math:`\pi` and the confusion matrices by matching the first-, second- and third-order
moments of the workers' one-hot responses (see :mod:`pyromodels.crowd.moments.statistics` and
:mod:`pyromodels.crowd.moments.blocks` for the objective :math:`g`). The fit here is block
coordinate descent. One sweep updates each worker's confusion matrix in turn, and the prior
after each of them: the prior is coupled to every worker (it scales every moment), and
solving it once per sweep made the descent crawl along the joint direction. Its normal
equations change only through the terms holding the worker just updated, so they are
updated in :math:`O(K^2)` rather than rebuilt. Each block is a convex least-squares problem
over matrices whose rows (true classes) lie on the simplex, solved by the accelerated
projected gradient of :func:`~pyromodels.crowd.moments.simplex.simplex_least_squares` from the
current value (at most ``inner_max_iter`` steps, or until its Frank–Wolfe gap is small). After
each sweep a line search extrapolates along the sweep's step, as is usual for alternating
least squares in PARAFAC (Bro 1998), keeping the point only if :math:`g` drops. No step can
raise :math:`g`, so it never increases across sweeps. Several starts (``n_init``) are run and
the one with the smallest :math:`g` is kept.

The tensor decomposition identifies the classes only up to one permutation shared by every
worker. Following the paper's assumption As2 (workers are better than random), the classes
are relabelled by the permutation :math:`\sigma` maximising
:math:`\sum_a \sum_k C_a[\sigma(k), k]` (the Hungarian algorithm on :math:`\sum_a C_a`),
applied to the rows of every confusion matrix and to the prior.

Labels follow eq. 18: :math:`\hat y_n = \arg\max_k \log\hat\pi_k +
\sum_{a} \log \hat C_a[k, f_a(n)]` over the workers who labelled item ``n``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...checks import check_int, check_positive
from ...core.monitor import ConvergenceMonitor
from ...core.parallel import check_n_jobs, run_jobs
from ...core.seeding import derive_seed
from ...data.simulate_crowd import random_confusions
from ..emissions import confusion_counts, log_emissions, normalize_rows
from ..majority import vote_fractions
from .blocks import MomentDesign
from .simplex import project_rows, simplex_least_squares
from .statistics import DTYPE, Moments, check_confusion, check_prior, check_table, sample_moments

__all__ = [
    "MomentEstimate",
    "MomentSolution",
    "solve_moments",
    "align_classes",
    "fit_moments",
    "moment_log_joint",
    "moment_posterior",
    "moment_labels",
]


@dataclass(frozen=True, eq=False)
class MomentSolution:
    """The best start of :func:`solve_moments` (classes aligned by As2).

    Attributes:
        prior: ``(K,)``.
        confusion: ``(M', K, K)`` for the moments' workers (rows = true class).
        objective: final value of ``g`` (eq. 17).
        history: ``g`` after each sweep of the best start (its first entry: at the start).
        converged: whether the best start met the tolerance.
        start_objectives: final ``g`` of every start.
    """

    prior: torch.Tensor
    confusion: torch.Tensor
    objective: float
    history: tuple
    converged: bool
    start_objectives: tuple


@dataclass(frozen=True, eq=False)
class MomentEstimate:
    """Result of :func:`fit_moments`.

    Attributes:
        prior: ``(K,)`` class prior.
        confusion: ``(M, K, K)`` confusion matrices of all the table's workers (rows = true
            class). Workers outside ``workers_used`` get one Dawid–Skene M-step (eq. 11)
            against the moment-matching posterior of the items.
        objective: final value of the eq. 17 objective.
        history: the objective at the best start's first point, then after each sweep.
        workers_used: long ``(M',)`` codes of the workers whose moments were matched.
        converged: whether the best start met the tolerance.
    """

    prior: torch.Tensor
    confusion: torch.Tensor
    objective: float
    history: tuple
    workers_used: torch.Tensor
    converged: bool = True


def align_classes(prior, confusion) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Relabel the true classes by the permutation maximising the summed diagonals (As2).

    Row ``sigma(k)`` of every confusion matrix becomes row ``k``, and likewise for the prior,
    with :math:`\sigma` from ``scipy.optimize.linear_sum_assignment`` on
    :math:`\sum_a C_a` (maximised).
    """
    total = confusion.sum(0).detach().cpu().numpy()
    from scipy.optimize import linear_sum_assignment  # loaded where it is used

    rows, cols = linear_sum_assignment(total, maximize=True)
    perm = torch.empty(len(rows), dtype=torch.long)
    perm[torch.as_tensor(cols)] = torch.as_tensor(rows)
    perm = perm.to(confusion.device)
    return prior[perm], confusion[:, perm, :]


def _starts(moments: Moments, n_init: int, init, seed: int):
    m, k, dev = moments.num_workers, moments.num_classes, moments.first.device
    starts = []
    if init is not None:
        prior0, conf0 = init
        starts.append((prior0.to(device=dev, dtype=DTYPE), conf0.to(device=dev, dtype=DTYPE)))
    for r in range(len(starts), n_init):
        conf = random_confusions(m, k, dominance=0.6, concentration=3.0, force_dominant=True,
                                 seed=derive_seed(seed, "moment-start", r))
        starts.append((torch.full((k,), 1.0 / k, dtype=DTYPE, device=dev), conf.to(dev)))
    return starts


def _sweep(design, prior, confusion, gram, gap_tol, inner_max_iter, eye, one):
    """One sweep: each worker's block, each followed by the prior's block (whose Gram matrix
    and right-hand side are updated in place of recomputing them)."""
    right, rhs = design.prior_block(confusion, gram)
    for a in range(confusion.shape[0]):
        inner, terms = design.worker_terms(a, confusion, gram)
        new = simplex_least_squares(torch.outer(prior, prior) * inner, eye, prior[:, None] * terms,
                                    confusion[a], tol=gap_tol, max_iter=inner_max_iter)[0]
        new_gram = new @ new.T
        right = right + (new_gram - gram[a]) * inner
        rhs = rhs + ((new - confusion[a]) * terms).sum(-1)
        confusion[a], gram[a] = new, new_gram
        prior = simplex_least_squares(one, right, rhs[None], prior[None], tol=gap_tol,
                                      max_iter=inner_max_iter)[0][0]
    return prior


def _extrapolate(design, old, new, value, step):
    """Line search along the last sweep's step: try ``old + lam (new - old)`` (projected)
    for ``lam = step, 2 step, 4 step, ...`` while the objective keeps falling. Returns the best
    point found (or ``None``) and the next starting ``step``.

    A row of ``old + lam (new - old)`` sums to one only up to rounding, and its projection
    spreads a shortfall over every entry: a class with zero prior at both points can come
    back with a prior of about 1e-32. The block solver takes such classes in its stride (see
    :mod:`~pyromodels.crowd.moments.simplex`)."""
    best, lam = None, step
    while lam <= 1e4:
        cand = tuple(project_rows(o + lam * (n - o), "the extrapolated point")
                     for o, n in zip(old, new))
        cand_value = design.objective(*cand)
        if cand_value >= (value if best is None else best[1]):
            break
        best, lam = (cand, cand_value), lam * 2
    if best is None:
        return None, max(step / 2, 1.5)
    return best, lam / 2


def _descend_start(start, shared):
    """One start of :func:`solve_moments` (a :func:`~pyromodels.core.parallel.run_jobs`
    function): ``start = (prior, confusion)``."""
    settings = {k: v for k, v in shared.items() if k != "design"}
    return _descend(shared["design"], *start, **settings)


def _descend(design: MomentDesign, prior, confusion, *, max_iter, tol, inner_tol, inner_max_iter):
    k, dev = confusion.shape[1], confusion.device
    eye, one = torch.eye(k, dtype=DTYPE, device=dev), torch.ones(1, 1, dtype=DTYPE, device=dev)
    unit = max(design.scale, torch.finfo(DTYPE).tiny)
    confusion = confusion.clone()
    gram = confusion @ confusion.transpose(1, 2)
    monitor = ConvergenceMonitor(tol=tol, max_iter=max_iter, direction="decrease",
                                 name="moment-matching objective / scale")
    history = [design.objective(prior, confusion)]
    decrease, step = history[0], 2.0
    while True:
        old = (prior, confusion.clone())
        # blocks are solved more accurately as the sweeps' progress slows down
        gap_tol = max(inner_tol * unit, 1e-3 * decrease)
        prior = _sweep(design, prior, confusion, gram, gap_tol, inner_max_iter, eye, one)
        value = design.objective(prior, confusion)
        if len(history) > 1:
            found, step = _extrapolate(design, old, (prior, confusion), value, step)
            if found is not None:
                (prior, confusion), value = found
                gram = confusion @ confusion.transpose(1, 2)
        decrease = history[-1] - value
        history.append(value)
        if monitor.update(value / unit):
            break
    return prior, confusion, history, monitor


def solve_moments(moments: Moments, *, n_init: int = 5, init=None, max_iter: int = 500,
                  tol: float = 1e-10, inner_tol: float = 1e-12, inner_max_iter: int = 5,
                  min_overlap: int = 1, seed: int = 0,
                  n_jobs: int | None = None) -> MomentSolution:
    r"""Minimise eq. 17 over the prior and the confusion matrices of the moments' workers.

    Args:
        moments: :class:`~pyromodels.crowd.moments.statistics.Moments` of at least 3 workers.
        n_init: number of starts (``>= 1``); the one with the smallest objective is kept.
        init: optional ``(prior (K,), confusion (M', K, K))`` used as the first start; the
            other starts draw diagonally dominant confusion matrices (seeded) and a uniform
            prior.
        max_iter: sweeps per start.
        tol: a start stops when a sweep changes ``g / scale`` by less than ``tol``, where
            ``scale`` is ``g`` at the zero model (the weighted sum of squared moments).
        inner_tol: each block stops once its Frank–Wolfe gap is ``<= inner_tol * scale``.
        inner_max_iter: iteration budget of each block solve.
        min_overlap: moments resting on fewer items are left out (weight 0).
        seed: seed of the random starts.
        n_jobs: starts run at once, joblib's meaning (``None``: one after another, or the
            ``n_jobs`` of an enclosing ``joblib.parallel_config``; ``-1``: all cores; see
            :mod:`pyromodels.core.parallel`). The starts are drawn before dispatch and the
            best is chosen in start order, so the result does not depend on it.

    Returns:
        :class:`MomentSolution` with classes aligned by As2 (:func:`align_classes`).

    Example:
        >>> from pyromodels.crowd.moments.statistics import population_moments
        >>> from pyromodels.data.simulate_crowd import random_confusions
        >>> conf = random_confusions(4, 2, force_dominant=True, seed=0)
        >>> sol = solve_moments(population_moments(torch.tensor([0.3, 0.7]), conf), n_init=1,
        ...                     tol=1e-16)
        >>> bool((sol.confusion - conf).abs().max() < 1e-5), sol.objective < 1e-12
        (True, True)
    """
    if not isinstance(moments, Moments):
        raise TypeError(f"moments must be a Moments object, got {type(moments).__name__}")
    n_init = check_int(n_init, "n_init", minimum=1)
    max_iter = check_int(max_iter, "max_iter", minimum=1)
    tol = check_positive(tol, "tol")
    inner_tol = check_positive(inner_tol, "inner_tol")
    inner_max_iter = check_int(inner_max_iter, "inner_max_iter", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    n_jobs = check_n_jobs(n_jobs)
    m, k = moments.num_workers, moments.num_classes
    if m < 3:
        raise ValueError(f"moment matching needs at least 3 workers (third-order moments), got {m}")
    design = MomentDesign.build(moments, min_overlap)
    if float(design.w3.sum()) == 0:
        raise ValueError(
            "no item was labelled by three of the selected workers (with min_overlap="
            f"{min_overlap}); the third-order moments that identify the confusion matrices "
            "are empty"
        )
    if init is not None:
        init = (check_prior(init[0], "init[0]", k), check_confusion(init[1], "init[1]", k))
        if init[1].shape[0] != m:
            raise ValueError(f"init[1] must have shape ({m}, {k}, {k}), got {tuple(init[1].shape)}")
    best, finals = None, []
    settings = {"max_iter": max_iter, "tol": tol, "inner_tol": inner_tol,
                "inner_max_iter": inner_max_iter}
    starts = _starts(moments, n_init, init, seed)  # drawn here, before dispatch
    for prior, conf, history, monitor in run_jobs(
            _descend_start, starts, n_jobs=n_jobs, shared={"design": design, **settings},
            progress=False, desc="moment starts"):
        finals.append(history[-1])
        if best is None or history[-1] < best[2][-1]:
            best = (prior, conf, history, monitor)
    prior, conf, history, monitor = best
    monitor.finish("moment matching")
    prior, conf = align_classes(prior, conf)
    return MomentSolution(prior, conf, history[-1], tuple(history), monitor.converged,
                          tuple(finals))


def moment_log_joint(table, prior, confusion, floor: float = 1e-6) -> torch.Tensor:
    r"""``(N, K)``: :math:`\log\tilde\pi_k + \sum_l \log\tilde C_{w_l}[k, y_l]` (eq. 18's
    score), where :math:`\tilde\pi, \tilde C` add ``floor`` to every probability and
    re-normalise (moment estimates can hold exact zeros)."""
    floor = check_positive(floor, "floor", strict=False)
    log_conf = torch.log(normalize_rows(confusion, floor))
    return torch.log(normalize_rows(prior, floor)) + log_emissions(table, log_conf)


def _check_estimate(table, estimate) -> None:
    if not isinstance(estimate, MomentEstimate):
        raise TypeError(f"estimate must be a MomentEstimate, got {type(estimate).__name__}")
    want = (table.num_workers, table.num_classes, table.num_classes)
    if tuple(estimate.confusion.shape) != want:
        raise ValueError(
            f"estimate.confusion must have shape {want} to match the table, got "
            f"{tuple(estimate.confusion.shape)}"
        )


def moment_posterior(table, estimate: MomentEstimate, floor: float = 1e-6) -> torch.Tensor:
    """``(N, K)`` class posteriors of the items under ``estimate`` (softmax of
    :func:`moment_log_joint`)."""
    check_table(table)
    _check_estimate(table, estimate)
    return torch.softmax(moment_log_joint(table, estimate.prior, estimate.confusion, floor), -1)


def moment_labels(table, estimate: MomentEstimate, floor: float = 1e-6) -> torch.Tensor:
    """Eq. 18 labels ``(N,)`` (long): the argmax over classes of :func:`moment_log_joint`.

    Ties go to the smallest class code; unlabelled items get the prior's mode.
    """
    check_table(table)
    _check_estimate(table, estimate)
    return moment_log_joint(table, estimate.prior, estimate.confusion, floor).argmax(-1)


def _majority_start(table, workers) -> tuple[torch.Tensor, torch.Tensor]:
    q = normalize_rows(vote_fractions(table).to(device=table.device, dtype=DTYPE))
    conf = normalize_rows(confusion_counts(table, q)[workers])
    return q.mean(0), conf


def fit_moments(table, num_classes: int | None = None, *, n_init: int = 5, max_iter: int = 500,
                tol: float = 1e-10, max_workers: int | None = None, workers=None,
                min_overlap: int = 1, inner_tol: float = 1e-12, inner_max_iter: int = 5,
                seed: int = 0, n_jobs: int | None = None) -> MomentEstimate:
    r"""Moment-matching estimate of the class prior and confusion matrices (eq. 17).

    The first start is the majority-vote one (one M-step, eq. 11, against the vote
    fractions); the other ``n_init - 1`` starts are random (see :func:`solve_moments`).

    Args:
        table: :class:`~pyromodels.data.AnnotationTable` (``K >= 2``, one label per item and
            worker, at least 3 workers sharing items).
        num_classes: expected ``K`` (checked against the table).
        n_init, max_iter, tol, inner_tol, inner_max_iter, min_overlap, seed, n_jobs: see
            :func:`solve_moments`.
        max_workers: match the moments of only the workers with the most labels (the
            number of third-order terms grows as :math:`\binom{M}{3}`).
        workers: explicit worker codes to match instead (at most one of the two).

    Returns:
        :class:`MomentEstimate`.

    Example:
        >>> from pyromodels.data import simulate_annotations
        >>> table, truth = simulate_annotations(3000, 5, 3, seed=0)
        >>> est = fit_moments(table, n_init=2)
        >>> bool((est.confusion - truth["confusion"]).abs().max() < 0.1)
        True
    """
    k = check_table(table, num_classes)
    moments = sample_moments(table, workers=workers, max_workers=max_workers)
    start = _majority_start(table, moments.workers)
    sol = solve_moments(moments, n_init=n_init, init=start, max_iter=max_iter, tol=tol,
                        inner_tol=inner_tol, inner_max_iter=inner_max_iter,
                        min_overlap=min_overlap, seed=seed, n_jobs=n_jobs)
    confusion = torch.zeros(table.num_workers, k, k, dtype=DTYPE, device=table.device)
    confusion[moments.workers] = sol.confusion
    if moments.num_workers < table.num_workers:
        used = torch.zeros(table.num_workers, dtype=torch.bool, device=table.device)
        used[moments.workers] = True
        log_conf = torch.where(used[:, None, None], torch.log(normalize_rows(confusion, 1e-6)),
                               torch.zeros_like(confusion))
        q = torch.softmax(torch.log(normalize_rows(sol.prior, 1e-6))
                          + log_emissions(table, log_conf), -1)
        confusion[~used] = normalize_rows(confusion_counts(table, q)[~used])
    return MomentEstimate(sol.prior, confusion, sol.objective, sol.history, moments.workers,
                          sol.converged)
