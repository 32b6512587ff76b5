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
answer j of q[n_l, k]``. Both are one gather plus one ``index_add_`` over the ``L`` labels,
so they cost ``O(L K)`` time and memory on CPU or GPU.
"""

from __future__ import annotations

import torch

__all__ = ["log_emissions", "confusion_counts", "normalize_rows"]


def log_emissions(table, log_confusion: torch.Tensor) -> torch.Tensor:
    """``(N, K)`` log-likelihood of each item's labels under each true class.

    Args:
        table: an :class:`~pyromodels.data.AnnotationTable` (codes ``item_idx``,
            ``worker_idx``, ``label_idx`` of length ``L``).
        log_confusion: ``(M, K, K)`` log confusion matrices (rows = true class).

    Returns:
        ``(N, K)`` tensor; items with no labels get zeros.
    """
    per_label = log_confusion[table.worker_idx, :, table.label_idx]  # (L, K)
    out = per_label.new_zeros(table.num_items, log_confusion.shape[-2])
    return out.index_add_(0, table.item_idx, per_label)


def confusion_counts(table, q: torch.Tensor, num_workers: int | None = None) -> torch.Tensor:
    """Expected confusion counts ``(M, K, K)`` given class posteriors ``q`` ``(N, K)``.

    ``counts[m, k, j] = sum_{l: w_l = m, y_l = j} q[n_l, k]``.
    """
    M = table.num_workers if num_workers is None else num_workers
    K = q.shape[-1]
    J = table.num_classes
    weights = q[table.item_idx]  # (L, K)
    flat = weights.new_zeros(M * J, K)
    flat.index_add_(0, table.worker_idx * J + table.label_idx, weights)
    return flat.reshape(M, J, K).transpose(1, 2)


def normalize_rows(counts: torch.Tensor, floor: float = 0.0) -> torch.Tensor:
    """Normalise the last axis to sum to one; rows with no mass become uniform.

    ``floor`` (>= 0) is added to every cell first (a pseudo-count; 0 gives the ML estimate).
    """
    counts = counts + floor
    total = counts.sum(-1, keepdim=True)
    uniform = torch.full_like(counts, 1.0 / counts.shape[-1])
    return torch.where(total > 0, counts / total.clamp_min(torch.finfo(counts.dtype).tiny), uniform)
