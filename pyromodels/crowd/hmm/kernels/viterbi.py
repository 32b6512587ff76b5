r"""Viterbi decoding of ragged HMM sequences in log space (the ensemble paper's §4.1).

.. math::

    \delta_1(k) = \log p_1(k) + \log b_1(k), \qquad
    \delta_t(j) = \log b_t(j) + \max_i\,[\delta_{t-1}(i) + \log A_{ij}],

then backtracking from :math:`\arg\max_k \delta_T(k)`. Ties go to the smallest state. The
torch path pads the sequences to a ``(S, T_max, K)`` block and runs the recursion for all
sequences at once, with a mask freezing the finished ones; the numba path loops over the
positions on the CPU.
"""

from __future__ import annotations

import torch

from ....core.backend import resolve_backend
from .inputs import check_log_inputs

__all__ = ["viterbi", "pad_positions"]


def pad_positions(x: torch.Tensor, lengths: torch.Tensor, fill=0) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad ``(T_total, ...)`` rows of ragged sequences into ``(S, T_max, ...)`` plus a mask."""
    S, T = lengths.shape[0], int(lengths.max())
    seq = torch.repeat_interleave(torch.arange(S, device=x.device), lengths)
    offsets = torch.cumsum(lengths, 0) - lengths
    pos = torch.arange(x.shape[0], device=x.device) - torch.repeat_interleave(offsets, lengths)
    out = torch.full((S, T) + tuple(x.shape[1:]), fill, dtype=x.dtype, device=x.device)
    out[seq, pos] = x
    mask = torch.arange(T, device=x.device) < lengths[:, None]
    return out, mask


def _torch_viterbi(e, a, tr, lengths):
    pe, mask = pad_positions(e, lengths)
    S, T, K = pe.shape
    states = torch.arange(K, device=e.device)
    delta = a + pe[:, 0]
    back = torch.empty((S, T, K), dtype=torch.long, device=e.device)
    back[:, 0] = states
    for t in range(1, T):
        scores = delta.unsqueeze(-1) + tr  # (S, previous, next)
        arg = scores.argmax(1)
        best = scores.gather(1, arg.unsqueeze(1)).squeeze(1)
        live = mask[:, t, None]
        delta = torch.where(live, best + pe[:, t], delta)
        back[:, t] = torch.where(live, arg, states)  # finished sequences keep their state
    last = delta.argmax(-1)
    score = delta.gather(1, last.unsqueeze(1)).squeeze(1)
    path = torch.empty((S, T), dtype=torch.long, device=e.device)
    path[:, T - 1] = last
    for t in range(T - 1, 0, -1):
        path[:, t - 1] = back[:, t].gather(1, path[:, t : t + 1]).squeeze(1)
    return path[mask], score


def viterbi(log_emissions, log_initial, log_transition, lengths=None, *, backend: str = "auto"):
    """The most probable state path of each sequence.

    Args:
        log_emissions: ``(T_total, K)``.
        log_initial: ``(K,)`` log law of the first state.
        log_transition: ``(K, K)``, rows = previous state.
        lengths: ``(S,)`` sequence lengths summing to ``T_total``; ``None`` = one sequence.
        backend: ``"auto"``, ``"torch"`` or ``"numba"`` (as :func:`forward_backward`).

    Returns:
        ``(path, score)``: long ``(T_total,)`` states and ``(S,)`` the log joint
        ``log p(path_s, F_s)`` of each sequence's best path.

    Example:
        >>> import torch
        >>> e = torch.log(torch.tensor([[0.9, 0.1], [0.05, 0.95]], dtype=torch.float64))
        >>> a = torch.log(torch.tensor([0.5, 0.5], dtype=torch.float64))
        >>> tr = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64))
        >>> viterbi(e, a, tr)[0].tolist()
        [0, 1]
    """
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    if resolve_backend(backend, e, a, tr) == "numba":
        from .scaled import numba_viterbi

        return numba_viterbi(e, a, tr, lengths)
    return _torch_viterbi(e, a, tr, lengths)
