r"""Backward sampling of FFBS in torch: every sequence's path drawn at once.

Given the filtering distributions :math:`P(z_t \mid F_{1:t})`, draw :math:`z_T` from the last
one, then for :math:`t = T-1, \dots, 1` draw :math:`z_t \propto P(z_t \mid F_{1:t})\,
A_{z_t z_{t+1}}`, by the inverse CDF of the given uniforms (so the numba kernel
:func:`~pyromodels.crowd.hmm.kernels.scaled.numba_backward_sample` draws the same paths).
"""

from __future__ import annotations

import torch

from .inputs import pad_positions

__all__ = ["torch_backward_sample"]


def torch_backward_sample(log_filt, tr, lengths, u) -> torch.Tensor:
    """``(n, T_total)`` long paths from ``log_filt`` ``(T_total, K)``, the log transition
    ``tr`` ``(K, K)``, ``lengths`` ``(S,)`` and uniforms ``u`` ``(n, T_total)``."""
    n = u.shape[0]
    pf, mask = pad_positions(log_filt, lengths)  # (S, T, K)
    pu = pad_positions(u.T, lengths)[0].permute(2, 0, 1)  # (n, S, T)
    S, T, K = pf.shape
    z = torch.zeros((n, S, T), dtype=torch.long, device=log_filt.device)
    last = lengths - 1
    for t in range(T - 1, -1, -1):
        step = tr.T[z[:, :, t + 1]] if t + 1 < T else torch.zeros_like(pf[None, :, 0])  # (n, S, K)
        logw = pf[:, t] + torch.where((last == t)[None, :, None], torch.zeros_like(step), step)
        w = torch.exp(logw - logw.amax(-1, keepdim=True))
        cdf = torch.cumsum(w, -1)
        draw = (cdf < (pu[:, :, t] * cdf[..., -1]).unsqueeze(-1)).sum(-1).clamp(max=K - 1)
        z[:, :, t] = torch.where(mask[:, t][None], draw, torch.zeros_like(draw))
    return z[:, mask]
