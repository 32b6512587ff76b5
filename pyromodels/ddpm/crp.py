"""Sequential Chinese-restaurant seating driven by an explicit ``torch.Generator``.

Point ``i`` (counting from 0) joins cluster ``k`` with probability ``n_k / (i + alpha)`` and
opens a new cluster with probability ``alpha / (i + alpha)`` (eq. 8), so the labels come in
order of first appearance and the partition follows the CRP's EPPF.

Example:
    >>> import torch
    >>> sample_crp_labels(5, 1.0, torch.Generator().manual_seed(0))[0].item()
    0
"""

from __future__ import annotations

import torch

from ..checks import check_int, check_positive

__all__ = ["sample_crp_labels"]


def sample_crp_labels(num_points: int, alpha: float, generator: torch.Generator) -> torch.Tensor:
    """Draw ``(N,)`` long labels ``0..K-1`` from CRP(alpha).

    One uniform per point, compared with the running counts (``O(N K)`` Python steps).

    Args:
        num_points: ``N >= 1``.
        alpha: concentration ``> 0``.
        generator: a CPU ``torch.Generator``, the only source of randomness.
    """
    num = check_int(num_points, "num_points", minimum=1)
    alpha = check_positive(alpha, "alpha")
    if not isinstance(generator, torch.Generator):
        raise TypeError(f"generator must be a torch.Generator, got {type(generator).__name__}")
    u = torch.rand(num, dtype=torch.float64, generator=generator).tolist()
    counts: list[int] = []
    labels = []
    for i, u_i in enumerate(u):
        threshold, k, acc = u_i * (i + alpha), 0, 0.0
        while k < len(counts) and acc + counts[k] <= threshold:
            acc += counts[k]
            k += 1
        if k == len(counts):
            counts.append(0)
        counts[k] += 1
        labels.append(k)
    return torch.tensor(labels, dtype=torch.long)
