"""Starting points for the mixture's engines: k-means++ seeding and a few Lloyd steps."""

from __future__ import annotations

import torch

from ..core.kmeanspp import kmeanspp_indices
from .scale import standardize

__all__ = ["kmeans_init"]


def kmeans_init(x: torch.Tensor, K: int, generator: torch.Generator, lloyd_steps: int = 10) -> torch.Tensor:
    """Hard labels ``(N,)`` from k-means++ seeding followed by ``lloyd_steps`` Lloyd iterations.

    Every cluster keeps at least its seed point, so no cluster starts empty. The points are
    first standardized (:func:`~pyromodels.mixture.scale.standardize`), so the labels do not
    depend on the data's location or scale (up to rounding) and squared distances cannot
    overflow.
    """
    N = x.shape[0]
    if K > N:
        raise ValueError(f"num_components ({K}) must not exceed the number of points ({N})")
    x = standardize(x)
    seeds = kmeanspp_indices(x, K, generator)
    c = x[seeds]
    for _ in range(lloyd_steps):
        z = torch.cdist(x, c).argmin(-1)
        z[seeds] = torch.arange(K, device=x.device)
        counts = torch.bincount(z, minlength=K).to(x.dtype)
        c = torch.zeros_like(c).index_add_(0, z, x) / counts.unsqueeze(-1)
    z = torch.cdist(x, c).argmin(-1)
    z[seeds] = torch.arange(K, device=x.device)
    return z
