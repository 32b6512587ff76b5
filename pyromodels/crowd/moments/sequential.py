r"""Moment matching for labels in sequences (ensemble paper §4.2, Alg. 2, eqs. 20–23).

When the true labels form a stationary Markov chain, every worker's responses are still a
Dawid–Skene mixture (eq. 20), so :func:`~pyromodels.crowd.moments.fit.fit_moments` applied to all
the responses, ignoring their order, estimates the confusion matrices. The lag-1 cross
moments then carry the chain. In the row orientation of :mod:`pyromodels.crowd`, with
:math:`A[i, j] = P(y_{t-1} = i, y_t = j)` (the transpose of the paper's
:math:`\mathbf A = \mathbf T\,\mathrm{diag}(\pi)`) and :math:`C_a` = ``confusion[a]``,

.. math::
    \tilde R_{ab} = E\big[e_{f_a(t-1)} e_{f_b(t)}^\top\big] = C_a^\top A\, C_b ,

for any workers ``a`` (on the earlier item) and ``b`` (on the later one), ``a == b``
included, because responses to different items are independent given the labels. The
sample moment :math:`\tilde S_{ab}` averages over the consecutive pairs ``(t - 1, t)`` inside
each sequence (never across a boundary) where ``a`` labelled ``t - 1`` and ``b`` labelled
``t``, normalised by the number of such pairs.

:math:`A` solves the convex quadratic programme (eq. 22)

.. math::
    \min_{A \ge 0,\ \mathbf 1^\top A \mathbf 1 = 1} \sum_{(a, b)} w_{ab}
        \|\tilde S_{ab} - C_a^\top A C_b\|_F^2 ,

whose Hessian is :math:`\sum w_{ab}\, G_a \otimes G_b` (:math:`G_a = C_a C_a^\top`, row-major
``vec``), solved by projected gradient on the :math:`K^2`-simplex to a Frank–Wolfe-gap
certificate. Then (eq. 23, read in rows) ``transition[i, j] = A[i, j] / sum_j A[i, j]`` and
the stationary prior is the row sums of :math:`A`, so no separate estimate of :math:`\pi` is
needed.

**Which pairs.** Eq. 22 as printed sums over ``m < m'`` with ``m`` on the later item. Each
ordered pair of distinct workers gives a different moment (:math:`\tilde R_{ab} \ne
\tilde R_{ba}^\top` unless the chain is reversible), so one order identifies :math:`A` too,
but the default ``pairs="distinct"`` uses both orders: it uses every lag-1 co-occurrence of
two distinct workers, halving the variance, and its answer does not depend on how the workers
happen to be numbered. ``pairs="paper"`` keeps the printed set; ``pairs="all"`` also adds
the same worker on consecutive items.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ...checks import check_in, check_int, check_positive, check_stochastic
from ...data.sequences import Sequences
from ..emissions import check_confusion, normalize_rows
from .fit import MomentEstimate, fit_moments
from .simplex import simplex_least_squares
from .statistics import DTYPE, check_table, expand_ranges, resolve_workers, sorted_rows

__all__ = [
    "LagMoments",
    "lag_moments",
    "population_lag_moments",
    "solve_joint",
    "transition_from_joint",
    "SequentialMomentEstimate",
    "fit_sequential_moments",
]

PAIRS = ("distinct", "paper", "all")


@dataclass(frozen=True, eq=False)
class LagMoments:
    """Lag-1 cross moments ``second[a, b] = S~_ab`` ``(M', M', K, K)`` of the workers
    ``workers`` (table codes), with ``counts[a, b]`` consecutive pairs behind each (``None``
    for exact moments)."""

    workers: torch.Tensor
    second: torch.Tensor
    counts: torch.Tensor | None = None

    def weights(self, pairs: str = "distinct", min_overlap: int = 1) -> torch.Tensor:
        """``(M', M')`` unit weights of the ordered pairs used by eq. 22 (see module doc)."""
        check_in(pairs, "pairs", PAIRS)
        min_overlap = check_int(min_overlap, "min_overlap", minimum=1)
        m, dev = self.second.shape[0], self.second.device
        w = torch.ones(m, m, dtype=DTYPE, device=dev)
        if pairs == "distinct":
            w = w - torch.eye(m, dtype=DTYPE, device=dev)
        elif pairs == "paper":  # m < m' with m on the later item: earlier worker code larger
            w = torch.tril(w, diagonal=-1)
        if self.counts is not None:
            w = w * (self.counts >= min_overlap).to(DTYPE)
        return w


def _check_sequences(sequences) -> None:
    if not isinstance(sequences, Sequences) or not hasattr(sequences.data, "worker_idx"):
        raise TypeError("sequences must be a Sequences object whose data is an AnnotationTable, "
                        f"got {type(sequences).__name__}")


def lag_moments(sequences, *, workers=None, num_classes: int | None = None) -> LagMoments:
    r"""Sample lag-1 cross moments :math:`\tilde S_{ab}` within sequences.

    Args:
        sequences: :class:`~pyromodels.data.Sequences` whose data is the
            :class:`~pyromodels.data.AnnotationTable` (items in sequence order).
        workers: table worker codes to use (default: all).
        num_classes: expected ``K`` (checked against the table).

    Returns:
        :class:`LagMoments`, ``second[a, b][i, j]`` = fraction of the consecutive pairs with
        ``a`` on the earlier item and ``b`` on the later where ``a`` said ``i`` and ``b``
        said ``j``.

    Example:
        >>> from pyromodels.data import simulate_sequential_annotations
        >>> seqs, _ = simulate_sequential_annotations([5, 5], 3, 2, seed=0)
        >>> lag_moments(seqs).counts[0, 1].item()  # 4 consecutive pairs per sequence
        8
    """
    _check_sequences(sequences)
    table = sequences.data
    k = check_table(table, num_classes)
    codes = resolve_workers(table, workers)
    m, dev, n = codes.shape[0], table.device, table.num_items
    item, worker, label, offsets = sorted_rows(table, codes)
    last = torch.zeros(n, dtype=torch.bool, device=dev)
    last[sequences.offsets[1:].to(dev) - 1] = True
    nxt = torch.clamp(item + 1, max=n - 1)
    lo = offsets[nxt]
    hi = torch.where(last[item], lo, offsets[nxt + 1])
    i, j = expand_ranges(lo, hi)
    pair = worker[i] * m + worker[j]
    counts = torch.bincount(pair, minlength=m * m).reshape(m, m)
    second = torch.bincount((pair * k + label[i]) * k + label[j], minlength=m * m * k * k)
    second = second.reshape(m, m, k, k).to(DTYPE) / counts.clamp_min(1)[:, :, None, None]
    return LagMoments(codes, second, counts)


def _check_joint(joint, k: int | None = None) -> torch.Tensor:
    a = check_stochastic(joint, "joint", ndim=2, axis_sum="total", dtype=DTYPE)
    if a.shape[0] != a.shape[1] or (k is not None and a.shape[0] != k):
        raise ValueError(f"joint must be a square (K, K) matrix, got shape {tuple(a.shape)}")
    return a


def population_lag_moments(confusion, joint) -> LagMoments:
    r"""Exact lag-1 moments :math:`C_a^\top A C_b` for every ordered pair (eq. 21).

    Args:
        confusion: ``(M, K, K)`` confusion matrices (rows = true class).
        joint: ``(K, K)`` law of consecutive labels, ``joint[i, j] = P(y_{t-1}=i, y_t=j)``.

    Example:
        >>> lag = population_lag_moments(torch.eye(2).expand(3, 2, 2),
        ...                              torch.tensor([[0.125, 0.375], [0.25, 0.25]]))
        >>> lag.second[0, 2].tolist()  # perfect workers: the joint law itself
        [[0.125, 0.375], [0.25, 0.25]]
    """
    c = check_confusion(confusion)
    a = _check_joint(joint, c.shape[1]).to(c.device)
    second = torch.einsum("aki,kl,blj->abij", c, a, c)
    return LagMoments(torch.arange(c.shape[0], device=c.device), second)


def solve_joint(lag: LagMoments, confusion, *, pairs: str = "distinct", min_overlap: int = 1,
                tol: float = 1e-14, max_iter: int = 20000) -> tuple[torch.Tensor, float, float]:
    r"""Solve eq. 22 for :math:`A` over the :math:`K^2`-simplex.

    Args:
        lag: :class:`LagMoments` of ``M'`` workers.
        confusion: ``(M', K, K)`` confusion matrices of those workers.
        pairs: ``"distinct"``, ``"paper"`` or ``"all"`` (module doc).
        min_overlap: pairs resting on fewer consecutive items are left out.
        tol: stop when the Frank–Wolfe gap (a bound on the distance to the optimal value) is
            ``<= tol * scale``, ``scale`` being the objective at ``A = 0``.
        max_iter: iteration budget of the projected-gradient solver.

    Returns:
        ``(A, objective, gap)``: ``A`` ``(K, K)`` on the simplex, the eq. 22 objective and the
        final Frank–Wolfe gap.

    Example:
        >>> conf = torch.tensor([[[0.8, 0.2], [0.3, 0.7]]]).expand(3, 2, 2)
        >>> joint = torch.tensor([[0.1, 0.4], [0.3, 0.2]])
        >>> a, objective, _ = solve_joint(population_lag_moments(conf, joint), conf)
        >>> bool((a - joint).abs().max() < 1e-8)
        True
    """
    if not isinstance(lag, LagMoments):
        raise TypeError(f"lag must be LagMoments, got {type(lag).__name__}")
    c = check_confusion(confusion).to(lag.second.device)
    m, k = lag.second.shape[0], lag.second.shape[-1]
    if c.shape[0] != m or c.shape[1] != k:
        raise ValueError(f"confusion must have shape ({m}, {k}, {k}), got {tuple(c.shape)}")
    tol = check_positive(tol, "tol")
    w = lag.weights(pairs, min_overlap)
    if float(w.sum()) == 0:
        raise ValueError("no pair of workers labelled two consecutive items of a sequence; "
                         "eq. 22 has no terms")
    gram = c @ c.transpose(1, 2)
    hessian = torch.einsum("ab,aik,bjl->ijkl", w, gram, gram).reshape(k * k, k * k)
    rhs = torch.einsum("ab,aki,abij,blj->kl", w, c, lag.second, c).reshape(1, k * k)
    scale = float((w * lag.second.pow(2).sum((-1, -2))).sum())
    start = torch.full((1, k * k), 1.0 / (k * k), dtype=DTYPE, device=c.device)
    x, gap, _ = simplex_least_squares(torch.ones(1, 1, dtype=DTYPE, device=c.device), hessian, rhs,
                                      start, tol=tol * max(scale, 1e-300), max_iter=max_iter)
    joint = x.reshape(k, k)
    fitted = torch.einsum("aki,kl,blj->abij", c, joint, c)
    objective = float((w * (lag.second - fitted).pow(2).sum((-1, -2))).sum())
    return joint, objective, gap


def transition_from_joint(joint) -> tuple[torch.Tensor, torch.Tensor]:
    """``(prior, transition)`` from ``joint[i, j] = P(y_{t-1}=i, y_t=j)`` (eq. 23 in rows).

    ``prior = joint.sum(1)`` and ``transition[i] = joint[i] / prior[i]``; a state with no
    mass gets a uniform row.

    Example:
        >>> prior, trans = transition_from_joint(torch.tensor([[0.1, 0.3], [0.2, 0.4]]))
        >>> [round(v, 6) for v in prior.tolist()], [round(v, 6) for v in trans[0].tolist()]
        ([0.4, 0.6], [0.25, 0.75])
    """
    a = _check_joint(joint)
    return a.sum(1), normalize_rows(a)


@dataclass(frozen=True, eq=False)
class SequentialMomentEstimate:
    """Result of :func:`fit_sequential_moments` (Alg. 2).

    Attributes:
        prior: ``(K,)`` stationary law, the row sums of ``A``.
        confusion: ``(M, K, K)`` from the i.i.d. moment matching.
        transition: ``(K, K)``, ``transition[i, j] = P(y_t = j | y_{t-1} = i)``.
        A: ``(K, K)`` joint law ``A[i, j] = P(y_{t-1} = i, y_t = j)``.
        objective: the eq. 22 objective at ``A``.
        moment_estimate: the i.i.d. :class:`~pyromodels.crowd.moments.fit.MomentEstimate` used.
    """

    prior: torch.Tensor
    confusion: torch.Tensor
    transition: torch.Tensor
    A: torch.Tensor
    objective: float
    moment_estimate: MomentEstimate


def fit_sequential_moments(sequences, moment_estimate: MomentEstimate | None = None, *,
                           pairs: str = "distinct", workers=None, min_overlap: int = 1,
                           qp_tol: float = 1e-14, qp_max_iter: int = 20000, n_init: int = 5,
                           max_iter: int = 500, tol: float = 1e-10,
                           max_workers: int | None = None, seed: int = 0,
                           n_jobs: int | None = None) -> SequentialMomentEstimate:
    r"""Alg. 2: confusion matrices by i.i.d. moment matching, then the chain by eqs. 22–23.

    Args:
        sequences: :class:`~pyromodels.data.Sequences` whose data is the annotation table.
        moment_estimate: confusion matrices to use; default
            ``fit_moments(sequences.data, n_init=n_init, max_iter=max_iter, tol=tol,
            max_workers=max_workers, seed=seed)``.
        pairs: ordered worker pairs of eq. 22 (module doc).
        workers: table worker codes whose lag moments enter eq. 22; default the estimate's
            ``workers_used``.
        min_overlap: lag moments resting on fewer consecutive pairs are left out.
        qp_tol, qp_max_iter: see ``tol`` and ``max_iter`` of :func:`solve_joint`.
        n_init, max_iter, tol, max_workers, seed, n_jobs: passed to
            :func:`~pyromodels.crowd.moments.fit.fit_moments` when no estimate is given
            (``n_jobs``: its starts run at once, joblib's meaning).

    Returns:
        :class:`SequentialMomentEstimate`.

    Example:
        >>> from pyromodels.data import simulate_sequential_annotations
        >>> seqs, truth = simulate_sequential_annotations([40] * 100, 5, 3, stickiness=0.5,
        ...                                               seed=0)
        >>> est = fit_sequential_moments(seqs, n_init=2)
        >>> bool((est.transition - truth["transition"]).abs().max() < 0.1)
        True
    """
    _check_sequences(sequences)
    table = sequences.data
    k = check_table(table)
    check_in(pairs, "pairs", PAIRS)
    if moment_estimate is None:
        moment_estimate = fit_moments(table, n_init=n_init, max_iter=max_iter, tol=tol,
                                      max_workers=max_workers, seed=seed, n_jobs=n_jobs)
    elif not isinstance(moment_estimate, MomentEstimate):
        raise TypeError("moment_estimate must be a MomentEstimate or None, got "
                        f"{type(moment_estimate).__name__}")
    confusion = check_confusion(moment_estimate.confusion, "moment_estimate.confusion", k)
    if confusion.shape[0] != table.num_workers:
        raise ValueError(f"moment_estimate.confusion must have {table.num_workers} workers to "
                         f"match the table, got {confusion.shape[0]}")
    codes = moment_estimate.workers_used if workers is None else workers
    lag = lag_moments(sequences, workers=codes)
    joint, objective, _ = solve_joint(lag, confusion[lag.workers.to(confusion.device)],
                                      pairs=pairs, min_overlap=min_overlap, tol=qp_tol,
                                      max_iter=qp_max_iter)
    prior, transition = transition_from_joint(joint)
    return SequentialMomentEstimate(prior, confusion, transition, joint, objective, moment_estimate)
