"""The worker-response likelihood shared by every crowd model (Dawid-Skene, HMM, MRF).

Conventions (used throughout :mod:`pyromodels.crowd`):

* ``confusion[m, k, j] = P(worker m answers j | true class k)``: shape ``(M, K, K)``, rows
  indexed by the TRUE class, each row on the simplex. The ensemble paper's
  ``Gamma_m(j, k)`` is its transpose (columns = true class); keep the row orientation in code
  because ``Categorical(probs=confusion[m, k])`` needs the response on the last axis.
* Missing responses are absent rows of the long table and contribute nothing.

The two kernels here are the E-step and M-step building blocks: :func:`log_emissions` computes
``log b[n, k] = sum over the labels l of item n of log confusion[w_l, k, y_l]`` and
:func:`confusion_counts` computes ``counts[m, k, j] = sum over labels l of worker m with
answer j of q[n_l, k]``. Both are products with the sparse ``(N, M K)`` incidence matrix
``A[n, m K + j] = #labels j that worker m gave item n`` (built once per table and cached), so
they cost ``O(L K)`` time and ``O(L + (N + M K) K)`` memory on CPU or GPU.
:func:`check_confusion` is the one argument check of confusion matrices that every crowd
model uses.
"""

from __future__ import annotations

import copy
import warnings
import weakref

import torch

from ..checks import as_float_tensor, check_in, check_stochastic

__all__ = [
    "BAYES_DIAGONAL",
    "for_engine",
    "START_ATOL",
    "check_confusion",
    "log_emissions",
    "confusion_counts",
    "normalize_rows",
    "incidence",
]

_INCIDENCE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

#: the extra pseudo-count on each confusion row's true class that the Bayesian engines of the
#: crowd models use when ``diagonal`` is left ``None``: a flat Dirichlet(1) prior is symmetric
#: under relabelling the classes, and on small noisy sets the chains then switch labels
BAYES_DIAGONAL = 1.0


def for_engine(model, method: str):
    """``model`` with its ``diagonal`` resolved for ``method`` (one of ``model.engines``):
    ``model`` itself when ``diagonal`` is set or ``method`` is ``"em"`` (maximum likelihood),
    else a shallow copy with ``diagonal = BAYES_DIAGONAL``."""
    check_in(method, "method", model.engines)
    if model.diagonal is not None or method == "em":
        return model
    resolved = copy.copy(model)
    resolved.diagonal = BAYES_DIAGONAL
    return resolved

#: floor of the tolerance on the row sums of starting points a user passes in (initial
#: confusions, EM parameters): rows rounded to six decimals, as in a printed table, pass
START_ATOL = 1e-6


def check_confusion(confusion, name: str = "confusion", num_classes: int | None = None, *,
                    num_workers: int | None = None, dtype: torch.dtype | None = torch.float64,
                    device=None, atol: float | None = None) -> torch.Tensor:
    r"""``confusion`` as an ``(M, K, K)`` tensor of row-stochastic matrices with ``K >= 2``.

    ``confusion[m, k, j] = P(worker m answers j | true class k)``: every row
    ``confusion[m, k]`` must satisfy :math:`c_{mkj} \ge 0,\ \sum_j c_{mkj} = 1` within the
    tolerance of :func:`~pyromodels.checks.check_stochastic`.

    Args:
        confusion: array-like ``(M, K, K)``.
        name: the argument's name, used in error messages.
        num_classes: required ``K``, or ``None`` for any ``K >= 2``.
        num_workers: required ``M``, or ``None`` for any.
        dtype: floating dtype of the result (float64 by default); ``None`` keeps the input's
            own floating dtype.
        device: device of the result; default the input's.
        atol: floor of the tolerance on the row sums (default ``1e-8``); see
            :func:`~pyromodels.checks.check_stochastic`.

    Raises:
        ValueError: wrong shape, fewer than 2 classes, or rows off the simplex.

    Example:
        >>> check_confusion([[[0.9, 0.1], [0.2, 0.8]]], num_classes=2).shape
        torch.Size([1, 2, 2])
    """
    c = as_float_tensor(confusion, name, ndim=3)
    m, k, k2 = c.shape
    if (k != k2 or (num_classes is not None and k != num_classes)
            or (num_workers is not None and m != num_workers)):
        mm = "M" if num_workers is None else str(num_workers)
        kk = str(k if num_classes is None else num_classes)
        raise ValueError(f"{name} must have shape ({mm}, {kk}, {kk}) (worker, true class, "
                         f"answer), got {tuple(c.shape)}")
    if k < 2:
        raise ValueError(f"{name} needs at least 2 classes (K >= 2), got shape {tuple(c.shape)}")
    return check_stochastic(c, name, dtype=dtype, device=device, atol=atol)


def incidence(table, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    """The sparse CSR incidence matrix ``A`` ``(N, M K)`` of ``table`` and its transpose.

    ``A[n, m K + j]`` counts the labels ``j`` that worker ``m`` gave item ``n`` (repeated
    judgements add up). Cached per table, dtype and device.
    """
    per_table = _INCIDENCE.setdefault(table, {})
    key = (dtype, table.item_idx.device)
    if key not in per_table:
        J = table.num_classes
        cols = table.worker_idx * J + table.label_idx
        ones = torch.ones(table.num_labels, dtype=dtype, device=table.item_idx.device)
        size = (table.num_items, table.num_workers * J)
        coo = torch.sparse_coo_tensor(
            torch.stack([table.item_idx, cols]), ones, size, check_invariants=True
        ).coalesce()
        with warnings.catch_warnings():  # torch marks CSR support as beta on every conversion
            warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta")
            per_table[key] = (coo.to_sparse_csr(), coo.t().coalesce().to_sparse_csr())
    return per_table[key]


def log_emissions(table, log_confusion: torch.Tensor) -> torch.Tensor:
    """``(N, K)`` log-likelihood of each item's labels under each true class.

    Args:
        table: an :class:`~pyromodels.data.AnnotationTable` (codes ``item_idx``,
            ``worker_idx``, ``label_idx`` of length ``L``).
        log_confusion: ``(M, K, K)`` log confusion matrices (rows = true class).

    Returns:
        ``(N, K)`` tensor; items with no labels get zeros.
    """
    a, _ = incidence(table, log_confusion.dtype)
    M, K, J = log_confusion.shape
    flat = log_confusion.transpose(1, 2).reshape(M * J, K)  # row m J + j holds log c[m, :, j]
    if not bool(torch.isfinite(flat).all()):
        # -inf entries (impossible answers) must not meet the zeros of the sparse product
        per_label = log_confusion[table.worker_idx, :, table.label_idx]  # (L, K)
        out = per_label.new_zeros(table.num_items, K)
        return out.index_add_(0, table.item_idx, per_label)
    return a @ flat[: table.num_workers * J]  # confusions of workers beyond the table's are unused


def confusion_counts(table, q: torch.Tensor, num_workers: int | None = None) -> torch.Tensor:
    """Expected confusion counts ``(M, K, K)`` given class posteriors ``q`` ``(N, K)``.

    ``counts[m, k, j] = sum_{l: w_l = m, y_l = j} q[n_l, k]``.
    """
    M = table.num_workers if num_workers is None else num_workers
    if M < table.num_workers:
        raise ValueError(f"num_workers must be at least the table's {table.num_workers}, got {M}")
    K = q.shape[-1]
    J = table.num_classes
    _, a_t = incidence(table, q.dtype)
    counts = (a_t @ q).reshape(table.num_workers, J, K).transpose(1, 2)
    if M > table.num_workers:  # workers with no labels in this table have zero counts
        counts = torch.cat([counts, counts.new_zeros(M - table.num_workers, K, J)])
    return counts


def normalize_rows(counts: torch.Tensor, floor: float = 0.0) -> torch.Tensor:
    """Normalise the last axis to sum to one; rows with no mass become uniform.

    ``floor`` (>= 0) is added to every cell first (a pseudo-count; 0 gives the ML estimate).
    """
    counts = counts + floor
    total = counts.sum(-1, keepdim=True)
    uniform = torch.full_like(counts, 1.0 / counts.shape[-1])
    return torch.where(total > 0, counts / total.clamp_min(torch.finfo(counts.dtype).tiny), uniform)
