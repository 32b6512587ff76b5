"""Set partitions as canonical labelings, and partition frequencies of a chain of labelings.

A partition of ``n`` items is written as its canonical labeling: blocks numbered ``0, 1, ...``
in order of first appearance (a restricted growth string), so two labelings describe the same
partition exactly when their canonical labelings are equal. There are Bell(n) partitions
(1, 1, 2, 5, 15, 52, 203, 877, ... for n = 0, 1, 2, ...).

Example:
    >>> import torch
    >>> canonical_labels(torch.tensor([7, 7, 3, 9, 3])).tolist()
    [0, 0, 1, 2, 1]
    >>> len(set_partitions(5))
    52
"""

from __future__ import annotations

from collections import Counter

import torch

from ..checks import as_label_tensor, check_int

__all__ = [
    "canonical_labels",
    "set_partitions",
    "partition_key",
    "partition_frequencies",
    "total_variation",
]


def _labels(labels, name: str = "labels") -> torch.Tensor:
    if isinstance(labels, torch.Tensor) and labels.dtype == torch.int64 and labels.dim() == 1:
        if labels.numel() == 0:
            raise ValueError(f"{name} must not be empty")
        return labels.cpu()
    return as_label_tensor(labels, name).cpu()


def canonical_labels(labels) -> torch.Tensor:
    """Relabel blocks ``0, 1, ...`` in order of first appearance.

    Args:
        labels: ``(N,)`` integer labels (any non-negative values; only equality matters).

    Returns:
        ``(N,)`` int64 canonical labels.

    Raises:
        ValueError: labels that are not 1-D, empty or negative. TypeError: non-integer labels.

    Example:
        >>> canonical_labels([5, 2, 5]).tolist()
        [0, 1, 0]
    """
    t = _labels(labels)
    # unique gives each position's rank among the distinct values; order the distinct values
    # by the first position holding them.
    values, inverse = torch.unique(t, return_inverse=True)
    first = torch.full((values.numel(),), t.numel(), dtype=torch.int64)
    first.scatter_reduce_(0, inverse, torch.arange(t.numel()), reduce="amin")
    rank = torch.empty_like(first)
    rank[torch.argsort(first)] = torch.arange(values.numel())
    return rank[inverse]


def partition_key(labels) -> tuple[int, ...]:
    """The canonical labeling as a tuple (hashable; equal for equal partitions)."""
    return tuple(canonical_labels(labels).tolist())


def set_partitions(n: int) -> list[tuple[int, ...]]:
    """Every partition of ``n`` items as a canonical label tuple, in lexicographic order.

    Args:
        n: number of items (``1 <= n <= 12``; Bell(12) = 4,213,597).

    Example:
        >>> set_partitions(3)
        [(0, 0, 0), (0, 0, 1), (0, 1, 0), (0, 1, 1), (0, 1, 2)]
    """
    n = check_int(n, "n", minimum=1, maximum=12)
    out: list[tuple[int, ...]] = []

    def grow(prefix: list[int], num_blocks: int) -> None:
        if len(prefix) == n:
            out.append(tuple(prefix))
            return
        for b in range(num_blocks + 1):
            prefix.append(b)
            grow(prefix, max(num_blocks, b + 1))
            prefix.pop()

    grow([0], 1)
    return out


def partition_frequencies(chain) -> dict[tuple[int, ...], float]:
    """Relative frequency of each partition visited by a chain of labelings.

    Args:
        chain: ``(T, N)`` integer labels, one labeling per draw (cluster ids need not be
            canonical).

    Returns:
        ``{canonical label tuple: fraction of the T draws}``.

    Example:
        >>> partition_frequencies(torch.tensor([[3, 3], [1, 2], [0, 0], [5, 5]]))
        {(0, 0): 0.75, (0, 1): 0.25}
    """
    t = torch.as_tensor(chain)
    if t.dim() != 2 or t.numel() == 0:
        raise ValueError(f"chain must be a non-empty (T, N) array of labels, got shape "
                         f"{tuple(t.shape)}")
    counts = Counter(partition_key(row) for row in t)
    total = t.shape[0]
    return {key: c / total for key, c in sorted(counts.items())}


def total_variation(p: dict, q: dict) -> float:
    """``(1/2) sum_x |p(x) - q(x)|`` over the union of the keys (a missing key has mass 0)."""
    keys = set(p) | set(q)
    return 0.5 * sum(abs(p.get(k, 0.0) - q.get(k, 0.0)) for k in keys)
