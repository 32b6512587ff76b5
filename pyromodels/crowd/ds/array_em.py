r"""Dawid-Skene EM on NumPy arrays and the compiled passes: the path that needs neither torch
nor numba.

On the CPU every pass over the labels of an EM fit is compiled (:mod:`.kernels`), and what is
left between two passes is arithmetic on ``K x K`` matrices: the M-step's normalisation
(:func:`map_params`) and the Dirichlet log densities of the objective (:func:`log_prior`).
Both are written here once, in NumPy, and serve two callers:

* the torch path of :mod:`.em` on the compiled backends (``"c"``, ``"numba"``): its M-step
  and objective after a compiled E-step come from here, converted to tensors;
* :func:`fit_em`, the whole EM fit on the C passes from NumPy codes (a
  :class:`~pyromodels.data.columns.LabelCodes`), which
  :class:`~pyromodels.crowd.estimators.DawidSkeneEstimator` runs for ``method="em"`` on the
  CPU: a process that reads a DataFrame and fits it this way never imports torch, Pyro or
  numba (the imports cost more than the fit).

The two give the same numbers: the same passes, the same arithmetic in the same working
dtype (:func:`working_dtype`, torch's default floating dtype: float32 unless a program set
another) and the same loop and stopping rule as :func:`~pyromodels.core.run_em` (a
:class:`~pyromodels.core.ConvergenceMonitor` over the objective, the start included).

Example:
    >>> import pandas as pd
    >>> from pyromodels.data.columns import LabelCodes
    >>> df = pd.DataFrame({"task": [0, 0, 0, 1, 1, 1], "worker": [0, 1, 2] * 2,
    ...                    "label": [0, 0, 1, 1, 1, 1]})
    >>> codes = LabelCodes.from_dataframe(df)
    >>> spec = resolve_prior(2, None, None, 1.0, True, np.float64)
    >>> fit = fit_em(codes, spec, 1e-10, max_iter=20, tol=1e-5)
    >>> fit.labels.tolist(), fit.converged
    ([0, 1], True)
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from ...core.monitor import ConvergenceMonitor
from .kernels import array_passes

__all__ = ["working_dtype", "ArrayPrior", "resolve_prior", "normalize_rows", "map_params",
           "log_prior", "objective", "vote_fractions", "ArrayFit", "EMPasses", "local_passes",
           "EMRun", "em_loop", "fit_em"]


def working_dtype() -> np.dtype:
    """The floating dtype of EM's parameters: torch's default dtype, which is float32 in a
    process that has not imported torch (nothing can have changed it there)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return np.dtype(np.float32)
    return np.dtype(str(torch.get_default_dtype()).removeprefix("torch."))


class ArrayPrior(NamedTuple):
    """The resolved Dirichlet priors (see :mod:`.data`), as arrays of the working dtype."""

    prior_concentration: np.ndarray  # (K,)
    confusion_concentration: np.ndarray  # (K, K)
    fixed_prior: np.ndarray | None  # (K,), or None when the prior is learned

    @property
    def dtype(self) -> np.dtype:
        return self.confusion_concentration.dtype


def _number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _diagonal(diagonal, K: int) -> np.ndarray | None:
    """``diagonal`` (``None``, a number ``>= 0``, or ``K`` finite numbers ``>= 0`` in a tuple,
    list or NumPy array) as ``(K,)`` float64 pseudo-counts; ``None`` for anything else."""
    if diagonal is None or _number(diagonal):
        value = 0.0 if diagonal is None else float(diagonal)
        return np.full(K, value) if value >= 0 else None
    if isinstance(diagonal, np.ndarray):
        if diagonal.dtype.kind not in "fiu":
            return None
        diagonal = diagonal.tolist()
    if not (isinstance(diagonal, (tuple, list)) and len(diagonal) == K
            and all(_number(v) for v in diagonal)):
        return None
    extra = np.array(diagonal, dtype=np.float64)
    return extra if bool(np.isfinite(extra).all() and (extra >= 0).all()) else None


def resolve_prior(K: int, prior_concentration, confusion_concentration, diagonal,
                  update_prior: bool, dtype) -> ArrayPrior | None:
    """The priors :func:`~pyromodels.crowd.ds.data.prepare_ds_data` resolves, for plain
    arguments: concentrations ``None`` or numbers ``>= 1`` (EM's range), ``diagonal`` ``None``,
    a number ``>= 0`` or ``K`` of them (one per class), a uniform fixed prior. ``None`` for
    anything else (other arrays, values out of range): those take the torch path, which checks
    them and names what is wrong."""
    plain = all(v is None or (_number(v) and v >= 1)
                for v in (prior_concentration, confusion_concentration))
    extra = _diagonal(diagonal, K)
    if not plain or extra is None:
        return None
    dtype = np.dtype(dtype)
    alpha = np.full((K,), 1 if prior_concentration is None else prior_concentration, dtype)
    beta = np.full((K, K), 1 if confusion_concentration is None else confusion_concentration,
                   dtype)
    beta = beta + np.diag(extra).astype(dtype)
    fixed = None if update_prior else np.full((K,), 1.0 / K, dtype)
    return ArrayPrior(alpha, beta, fixed)


def normalize_rows(counts: np.ndarray, floor: float = 0.0) -> np.ndarray:
    """:func:`pyromodels.crowd.emissions.normalize_rows` in NumPy: the last axis normalised
    after adding ``floor`` to every cell; rows with no mass become uniform."""
    counts = counts + counts.dtype.type(floor)
    total = counts.sum(-1, keepdims=True)
    tiny = np.finfo(counts.dtype).tiny
    with np.errstate(invalid="ignore", divide="ignore"):
        ratio = counts / np.maximum(total, tiny)
    return np.where(total > 0, ratio, counts.dtype.type(1.0 / counts.shape[-1]))


def map_params(spec: ArrayPrior, counts: np.ndarray, class_totals: np.ndarray,
               floor: float) -> tuple[np.ndarray, np.ndarray]:
    """``(prior, confusion)``: the Dirichlet posterior modes given the expected counts
    ``(M, K, K)`` (rows = true class) and ``sum_n q[n]`` ``(K,)`` (see :mod:`.em`), in the
    working dtype."""
    counts = np.ascontiguousarray(counts, dtype=spec.dtype)
    confusion = normalize_rows(counts + spec.confusion_concentration - 1, floor)
    if spec.fixed_prior is not None:
        return spec.fixed_prior, confusion
    totals = np.ascontiguousarray(class_totals, dtype=spec.dtype)
    return normalize_rows(totals + spec.prior_concentration - 1, floor), confusion


def _lgamma(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.lgamma, otypes=[np.float64])(x).astype(x.dtype)


def _dirichlet_log_density(concentration: np.ndarray, value: np.ndarray):
    """``log Dirichlet(value | concentration)`` summed over every row of ``value``
    (``concentration`` broadcasts against it; the log Beta functions are formed once per
    distinct row)."""
    c = concentration - 1
    with np.errstate(divide="ignore", invalid="ignore"):
        xlogy = np.where(c == 0, c.dtype.type(0), c * np.log(value))
    log_beta = _lgamma(concentration).sum(-1) - _lgamma(concentration.sum(-1))
    return (xlogy.sum(-1) - log_beta).sum(dtype=value.dtype)


def log_prior(spec: ArrayPrior, prior: np.ndarray, confusion: np.ndarray):
    """The Dirichlet log densities of ``confusion`` (and ``prior`` when it is learned), a
    scalar of the working dtype."""
    out = _dirichlet_log_density(spec.confusion_concentration, confusion)
    if spec.fixed_prior is None:
        out = out + _dirichlet_log_density(spec.prior_concentration, prior)
    return out


def objective(spec: ArrayPrior, log_marginal: float, prior: np.ndarray,
              confusion: np.ndarray) -> float:
    """EM's objective ``log p(labels, prior, confusion)`` from the E-step's ``log p(labels |
    prior, confusion)``, summed in the working dtype."""
    return float(spec.dtype.type(log_marginal) + log_prior(spec, prior, confusion))


def vote_fractions(labels, dtype) -> np.ndarray:
    """:func:`pyromodels.crowd.majority.vote_fractions` in NumPy: ``(N, K)`` share of each
    item's labels given to each class (uniform for an item without labels), in ``dtype``."""
    N, K = labels.num_items, labels.num_classes
    cells = np.asarray(labels.item_idx, dtype=np.int64) * K + np.asarray(labels.label_idx,
                                                                          dtype=np.int64)
    votes = np.bincount(cells, minlength=N * K).reshape(N, K).astype(dtype)
    total = votes.sum(-1, keepdims=True)
    return np.where(total > 0, votes / np.maximum(total, 1), votes.dtype.type(1 / K))


class ArrayFit(NamedTuple):
    """What :func:`fit_em` returns (arrays in the working dtype, codes int64).

    ``prior`` and ``confusion`` are the fitted parameters; ``probas`` and ``labels`` are the
    class posteriors their last M-step was fitted to and their argmax (the first class on
    ties): those of the parameters one step earlier, or the majority-vote fractions when no
    step was taken (crowd-kit's ``probas_``).
    """

    prior: np.ndarray
    confusion: np.ndarray
    probas: np.ndarray
    labels: np.ndarray
    monitor: ConvergenceMonitor

    @property
    def converged(self) -> bool:
        return self.monitor.converged

    @property
    def n_iter(self) -> int:
        """EM steps taken (the start is not a step)."""
        return self.monitor.n_iter - 1


class EMPasses(NamedTuple):
    """The passes over the labels that one EM fit needs, as callables (float64 arrays in
    and out): the local C passes (:func:`local_passes`) or a cluster's
    (:mod:`.distributed`), under the same loop (:func:`em_loop`).

    Attributes:
        vote_counts: ``() -> (counts [m, j, k], class_totals)`` of the majority-vote
            fractions (see :func:`~.kernels.array_passes.vote_counts`).
        em_counts: ``(pi (K,), conf (M, K, K) columns) -> (counts [m, j, k], class_totals,
            log_marginal)`` of one E-step (see :func:`~.kernels.array_passes.em_counts`).
    """

    vote_counts: Callable[[], tuple[np.ndarray, np.ndarray]]
    em_counts: Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray, float]]


def local_passes(labels) -> EMPasses:
    """The C passes over ``labels`` in this process."""
    return EMPasses(
        lambda: array_passes.vote_counts(labels, labels.num_workers),
        lambda pi, conf: array_passes.em_counts(labels, pi, conf, labels.num_workers, "c"),
    )


class EMRun(NamedTuple):
    """What :func:`em_loop` returns: the fitted ``(prior, confusion)``, the parameters the
    last step started from (``None`` when no step was taken) and the monitor."""

    params: tuple[np.ndarray, np.ndarray]
    previous: tuple[np.ndarray, np.ndarray] | None
    monitor: ConvergenceMonitor


def _step(passes: EMPasses, spec: ArrayPrior, params, floor: float):
    """``(the next params, the objective of params)`` from one E-step pass, or ``None`` when
    an item is impossible under every class (only with exact zeros in the confusions)."""
    prior, confusion = params
    pi = np.ascontiguousarray(prior, dtype=np.float64)
    counts, totals, loglik = passes.em_counts(pi, array_passes.columns(confusion))
    if not math.isfinite(loglik):
        return None
    new = map_params(spec, counts.transpose(0, 2, 1), totals, floor)
    return new, objective(spec, loglik, prior, confusion)


def em_loop(passes: EMPasses, spec: ArrayPrior, floor: float, max_iter: int, tol: float,
            warn_not_converged: bool = True, start=None) -> EMRun | None:
    """EM from crowd-kit's start (one M-step from the majority-vote fractions) or from
    ``start``: the loop and stopping rule of :func:`~pyromodels.core.run_em` with one start,
    each E-step one call of ``passes.em_counts`` and each M-step :func:`map_params` here.

    Args, and ``None``: as :func:`fit_em`.
    """
    if start is None:
        counts, totals = passes.vote_counts()
        params = map_params(spec, counts.transpose(0, 2, 1), totals, floor)
    else:
        params = tuple(np.array(p, dtype=spec.dtype, order="C") for p in start)  # owned copies
    # the parameters the last step started from (a warm start's result is its own E-step)
    previous = None if start is None else params
    monitor = ConvergenceMonitor(
        tol=tol, max_iter=max_iter + 1, monotone=True,
        monotone_slack=max(1e-9, 16 * float(np.finfo(spec.dtype).eps)), name="EM objective",
    )
    step = _step(passes, spec, params, floor)
    if step is None:
        return None
    new, value = step
    done = monitor.update(value)  # max_iter=0: the start is the result
    while not done:
        previous, params, step = params, new, _step(passes, spec, new, floor)
        if step is None:
            return None
        new, value = step
        done = monitor.update(value)
    if warn_not_converged:
        monitor.finish("EM", iterations=max_iter)
    return EMRun(params, previous, monitor)


def fit_em(labels, spec: ArrayPrior, floor: float, max_iter: int, tol: float,
           warn_not_converged: bool = True, start=None) -> ArrayFit | None:
    """EM from crowd-kit's start (one M-step from the majority-vote fractions), or from
    ``start``, on the C passes: the loop of :func:`~pyromodels.core.run_em` with one start
    (:func:`em_loop`).

    Args:
        labels: the coded labels (:class:`~pyromodels.data.columns.LabelCodes` or a CPU
            annotation table).
        spec: the priors (:func:`resolve_prior`).
        floor: EM's pseudo-count (``em_floor``).
        max_iter, tol: as :func:`~pyromodels.core.run_em` (``max_iter=0`` returns the start,
            ``tol=0`` never stops early).
        warn_not_converged: warn (``ConvergenceWarning``) when ``max_iter`` steps did not
            converge.
        start: ``(prior (K,), confusion (M, K, K))``, parameters to start from instead of
            crowd-kit's start (a warm start); with ``max_iter=0`` the result is ``start``
            and ``probas`` is its E-step.

    Returns:
        The fit (see :class:`ArrayFit`), or ``None`` when an item is impossible under every
        class (exact zeros in the confusions, ``floor=0`` only): the torch path handles such
        items.
    """
    run = em_loop(local_passes(labels), spec, floor, max_iter, tol, warn_not_converged,
                  start=start)
    if run is None:
        return None
    if run.previous is None:  # the start: fitted to the vote fractions
        q = vote_fractions(labels, spec.dtype)
        best = q.argmax(-1)
    else:
        q, loglik, best = array_passes.posteriors(
            labels, np.ascontiguousarray(run.previous[0], dtype=np.float64),
            array_passes.columns(run.previous[1]), "c", best=True)
        if not np.isfinite(loglik).all():
            return None
    return ArrayFit(*run.params, q.astype(spec.dtype), best, run.monitor)
