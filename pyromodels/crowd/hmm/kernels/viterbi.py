r"""Viterbi decoding of ragged HMM sequences in log space (the ensemble paper's §4.1).

.. math::

    \delta_1(k) = \log p_1(k) + \log b_1(k), \qquad
    \delta_t(j) = \log b_t(j) + \max_i\,[\delta_{t-1}(i) + \log A_{ij}],

then backtracking from :math:`\arg\max_k \delta_T(k)`. Ties go to the smallest state. The
torch path pads the sequences to a ``(S, T_max, K)`` block and runs the recursion for all
sequences at once, with a mask freezing the finished ones (:func:`torch_viterbi`); the numba
path (:func:`~pyromodels.crowd.hmm.kernels.scaled.numba_viterbi`) loops over the positions on
the CPU. :func:`pyromodels.crowd.hmm.inference.viterbi` chooses between them.
"""

from __future__ import annotations

import torch

from .inputs import pad_positions

__all__ = ["torch_viterbi"]


def torch_viterbi(e, a, tr, lengths) -> tuple[torch.Tensor, torch.Tensor]:
    """``(path (T_total,), best log joint (S,))`` from validated inputs."""
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
