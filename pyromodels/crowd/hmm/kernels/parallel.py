r"""Forward-backward for HMMs over many ragged sequences by parallel scans in log space (torch).

Model (one sequence of length :math:`T`, states :math:`y_t \in \{0..K-1\}`):

.. math::

    p(y, F) = p_1(y_1)\, b_1(y_1) \prod_{t=2}^{T} A_{y_{t-1} y_t}\, b_t(y_t),

with ``log_initial[k] = log p_1(k)`` (the law of the FIRST state), ``log_transition[i, j] =
log A_ij = log P(y_t = j | y_{t-1} = i)`` (rows = previous state, as hmmlearn's ``transmat_``
and Pyro's ``DiscreteHMM``) and ``log_emissions[t, k] = log b_t(k)`` (for crowd labels:
:func:`pyromodels.crowd.emissions.log_emissions`, which skips missing responses).

Outputs: the log-likelihood :math:`\log p(F)` of each sequence, the posterior marginals
:math:`q_t(k) = P(y_t = k \mid F)` and the pairwise marginals
:math:`\xi_t(i, j) = P(y_{t-1} = i, y_t = j \mid F)` (oriented (previous, next)), either per
step or summed over each sequence.

The torch kernels here run two segmented parallel scans in the log semiring
(:mod:`~pyromodels.crowd.hmm.kernels.logspace`) over the transfer matrices :math:`M_t[i, j] = \log
A_{ij} + \log b_t(j)`: :math:`\log\alpha_t = (\log p_1 + \log b_1) \otimes M_2 \otimes \cdots
\otimes M_t` as a prefix scan restarting at each sequence start, and :math:`\log\beta_{t-1} =
M_t \otimes \cdots \otimes M_T \otimes 0` as the same scan run backwards on the transposed
matrices. Depth :math:`O(\log T)`, work :math:`O(T K^3)`, on CPU or CUDA, every sequence in one
flat scan (no padding); it is differentiable. The compiled CPU kernels are Rabiner's scaled
recursions (:mod:`~pyromodels.crowd.hmm.kernels.scaled`), work :math:`O(T K^2)`; the
dispatchers of :mod:`pyromodels.crowd.hmm.inference` choose between them. Inputs are
validated by :func:`~pyromodels.crowd.hmm.kernels.inputs.check_log_inputs`.

Rows of ``log_transition`` need not be normalised: the "log-likelihood" is then the log of the
sum over paths of the product of the potentials.
"""

from __future__ import annotations

import torch

from .inputs import sequence_bounds
from .logspace import vector_scan
from .result import ForwardBackward

__all__ = ["transfer_matrices", "torch_forward", "torch_forward_backward", "torch_forward_filter"]


def transfer_matrices(e: torch.Tensor, tr: torch.Tensor) -> torch.Tensor:
    """``(T, K, K)`` log transfer matrices ``M_t[i, j] = log A_ij + log b_t(j)``."""
    return tr.unsqueeze(0) + e.unsqueeze(1)


def _forward(e, a, tr, lengths):
    _, starts, ends = sequence_bounds(lengths)
    m = transfer_matrices(e, tr)
    log_alpha = vector_scan(m, a + e, starts)
    loglik = torch.logsumexp(log_alpha[ends], -1)
    return m, log_alpha, loglik, starts, ends


def torch_forward(e, a, tr, lengths) -> torch.Tensor:
    """``(S,)`` log-likelihoods from validated inputs (``-inf`` allowed)."""
    return _forward(e, a, tr, lengths)[2]


def torch_forward_filter(e, a, tr, lengths) -> tuple[torch.Tensor, torch.Tensor]:
    """``(log alpha (T_total, K), log_likelihood (S,))``: the unnormalised log forward
    messages and the log-likelihoods, from validated inputs."""
    _, log_alpha, loglik, _, _ = _forward(e, a, tr, lengths)
    return log_alpha, loglik


def torch_forward_backward(e, a, tr, lengths, pairwise: str | None) -> ForwardBackward:
    """Forward-backward from validated inputs (``pairwise``: ``"sum"``, ``"step"`` or
    ``None``); the marginals of a sequence of probability zero are NaN."""
    m, log_alpha, loglik, starts, ends = _forward(e, a, tr, lengths)
    # reverse scan on transposed matrices: rev[t] = log sum over paths from y_{t-1} to the end
    m_rev = m.flip(0).transpose(-1, -2)
    rev = vector_scan(m_rev, torch.logsumexp(m_rev, -2), ends.flip(0)).flip(0)
    log_beta = torch.zeros_like(log_alpha)
    if e.shape[0] > 1:
        log_beta = torch.cat([torch.where(ends[:-1, None], 0.0, rev[1:]), log_beta[-1:]], 0)
    posterior = torch.softmax(log_alpha + log_beta, -1)
    if pairwise is None:
        return ForwardBackward(loglik, posterior, None, None)
    seq = torch.repeat_interleave(torch.arange(lengths.shape[0], device=e.device), lengths)
    t = torch.nonzero(~starts).flatten()
    log_xi = (
        log_alpha[t - 1].unsqueeze(-1) + m[t] + log_beta[t].unsqueeze(-2)
        - loglik[seq[t]][:, None, None]
    )
    xi = log_xi.exp()
    if pairwise == "sum":
        k = e.shape[1]
        xi = xi.new_zeros(lengths.shape[0], k, k).index_add_(0, seq[t], xi)
    return ForwardBackward(loglik, posterior, xi, pairwise)
