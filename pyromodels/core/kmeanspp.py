"""k-means++ seeding (Arthur and Vassilvitskii 2007): starting centres drawn by D^2 sampling."""

from __future__ import annotations

import torch

__all__ = ["kmeanspp_indices"]


def kmeanspp_indices(x: torch.Tensor, num_centres: int,
                     generator: torch.Generator) -> torch.Tensor:
    """Indices ``(num_centres,)`` of rows of ``x`` ``(N, d)`` chosen by k-means++ seeding.

    The first row is drawn uniformly; each next one with probability proportional to its
    squared distance to the nearest row chosen so far. When every row coincides with a chosen
    one (fewer distinct rows than centres) the draw is uniform again, so rows may repeat.
    ``generator`` may live on another device than ``x`` (the draws are made on its device).

    Example:
        >>> x = torch.tensor([[0.0], [0.1], [10.0]])
        >>> kmeanspp_indices(x, 2, torch.Generator().manual_seed(0)).shape
        torch.Size([2])
    """
    n = x.shape[0]
    draw_on = generator.device
    chosen = [int(torch.randint(n, (1,), generator=generator, device=draw_on))]
    d2 = (x - x[chosen[0]]).pow(2).sum(-1)
    for _ in range(1, num_centres):
        probs = d2 / d2.sum() if float(d2.sum()) > 0 else torch.full_like(d2, 1.0 / n)
        idx = int(torch.multinomial(probs.to(draw_on), 1, generator=generator))
        chosen.append(idx)
        d2 = torch.minimum(d2, (x - x[idx]).pow(2).sum(-1))
    return torch.tensor(chosen, device=x.device)
