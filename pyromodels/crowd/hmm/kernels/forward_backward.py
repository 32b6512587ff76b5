r"""Forward-backward for HMMs over many ragged sequences, in log space.

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

Backends: ``"torch"`` runs two segmented parallel scans in the log semiring
(:mod:`~pyromodels.crowd.hmm.kernels.logspace`) over the transfer matrices :math:`M_t[i, j] = \log
A_{ij} + \log b_t(j)`: :math:`\log\alpha_t = (\log p_1 + \log b_1) \otimes M_2 \otimes \cdots
\otimes M_t` as a prefix scan restarting at each sequence start, and :math:`\log\beta_{t-1} =
M_t \otimes \cdots \otimes M_T \otimes 0` as the same scan run backwards on the transposed
matrices. Depth :math:`O(\log T)`, work :math:`O(T K^3)`, on CPU or CUDA, every sequence in one
flat scan (no padding); it is differentiable. ``"numba"`` runs Rabiner's scaled recursions
compiled for the CPU (:mod:`~pyromodels.crowd.hmm.kernels.scaled`), work :math:`O(T K^2)`.
``"auto"`` picks numba for CPU tensors that need no gradient and torch otherwise (and
recomputes in log space if a scaled step underflows).

Rows of ``log_transition`` need not be normalised: the "log-likelihood" is then the log of the
sum over paths of the product of the potentials.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ....checks import check_in
from ....core.backend import resolve_backend
from .inputs import check_log_inputs, sequence_bounds
from .logspace import vector_scan

__all__ = ["ForwardBackward", "forward_backward", "log_likelihood", "forward_filter"]

_PAIRWISE = ("sum", "step", None)


@dataclass(frozen=True)
class ForwardBackward:
    """Smoothing results of :func:`forward_backward`.

    Attributes:
        log_likelihood: ``(S,)`` log-likelihood of each sequence.
        posterior: ``(T_total, K)`` posterior marginals ``q``.
        pairwise: ``(S, K, K)`` per-sequence sums of ``xi`` (``pairwise="sum"``), ``(T_total - S,
            K, K)`` one per step ``t >= 2`` of each sequence in order (``"step"``), or ``None``.
            Entry ``[.., i, j]`` is the probability of previous state ``i`` and next state ``j``.
        pairwise_mode: ``"sum"``, ``"step"`` or ``None``.
    """

    log_likelihood: torch.Tensor
    posterior: torch.Tensor
    pairwise: torch.Tensor | None
    pairwise_mode: str | None

    @property
    def total_log_likelihood(self) -> torch.Tensor:
        """Sum of the sequences' log-likelihoods (a scalar tensor)."""
        return self.log_likelihood.sum()


def transfer_matrices(e: torch.Tensor, tr: torch.Tensor) -> torch.Tensor:
    """``(T, K, K)`` log transfer matrices ``M_t[i, j] = log A_ij + log b_t(j)``."""
    return tr.unsqueeze(0) + e.unsqueeze(1)


def _torch_forward(e, a, tr, lengths):
    _, starts, ends = sequence_bounds(lengths)
    m = transfer_matrices(e, tr)
    log_alpha = vector_scan(m, a + e, starts)
    loglik = torch.logsumexp(log_alpha[ends], -1)
    return m, log_alpha, loglik, starts, ends


def _raise_if_impossible(loglik: torch.Tensor, what: str) -> None:
    bad = torch.nonzero(torch.isneginf(loglik)).flatten().tolist()
    if bad:
        raise ValueError(
            f"sequence(s) {bad[:10]} have probability zero under the given parameters (log "
            f"likelihood -inf), so their {what} are undefined; check for impossible transitions "
            "or responses (zero probabilities)"
        )


def _torch_forward_backward(e, a, tr, lengths, pairwise):
    m, log_alpha, loglik, starts, ends = _torch_forward(e, a, tr, lengths)
    _raise_if_impossible(loglik, "posterior marginals")
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


def forward_backward(
    log_emissions,
    log_initial,
    log_transition,
    lengths=None,
    *,
    pairwise: str | None = "sum",
    backend: str = "auto",
) -> ForwardBackward:
    r"""Log-likelihoods, posterior marginals and pairwise marginals of ragged HMM sequences.

    Args:
        log_emissions: ``(T_total, K)`` ``log b_t(k)``; the sequences are concatenated in order.
        log_initial: ``(K,)`` log law of the first state of every sequence.
        log_transition: ``(K, K)``; ``[i, j] = log P(y_t = j | y_{t-1} = i)``.
        lengths: ``(S,)`` positive lengths summing to ``T_total``; ``None`` = one sequence.
        pairwise: ``"sum"`` (per-sequence sums of ``xi``), ``"step"`` (one ``(K, K)`` per step
            after the first of each sequence) or ``None``.
        backend: ``"auto"``, ``"torch"`` (parallel scan, CPU or CUDA, differentiable) or
            ``"numba"`` (scaled recursions, CPU).

    Returns:
        A :class:`ForwardBackward`.

    Raises:
        ValueError: malformed inputs, lengths that do not sum to ``T_total``, or a sequence
            with probability zero (its posteriors are undefined).

    Example:
        >>> import torch
        >>> e = torch.log(torch.tensor([[0.9, 0.2], [0.1, 0.7], [0.8, 0.3]], dtype=torch.float64))
        >>> a = torch.log(torch.tensor([0.5, 0.5], dtype=torch.float64))
        >>> tr = torch.log(torch.tensor([[0.8, 0.2], [0.3, 0.7]], dtype=torch.float64))
        >>> fb = forward_backward(e, a, tr, lengths=[1, 2])
        >>> fb.posterior.shape, fb.pairwise.shape
        (torch.Size([3, 2]), torch.Size([2, 2, 2]))
    """
    check_in(pairwise, "pairwise", _PAIRWISE)
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    which = resolve_backend(backend, e, a, tr)
    if which == "numba":
        from .scaled import numba_forward_backward

        out = numba_forward_backward(e, a, tr, lengths, pairwise)
        if backend == "numba" or not bool(torch.isneginf(out.log_likelihood).any()):
            _raise_if_impossible(out.log_likelihood, "posterior marginals")
            return out
        # a step whose conditional likelihood underflows the scaled recursion: use log space
    return _torch_forward_backward(e, a, tr, lengths, pairwise)


def log_likelihood(log_emissions, log_initial, log_transition, lengths=None, *, backend: str = "auto"):
    """``(S,)`` log-likelihood of each sequence (the forward pass only; ``-inf`` allowed).

    Arguments as :func:`forward_backward`.
    """
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    if resolve_backend(backend, e, a, tr) == "numba":
        from .scaled import numba_forward

        loglik = numba_forward(e, a, tr, lengths)[1]
        if backend == "numba" or not bool(torch.isneginf(loglik).any()):
            return loglik
    return _torch_forward(e, a, tr, lengths)[2]


def forward_filter(log_emissions, log_initial, log_transition, lengths=None, *, backend: str = "auto"):
    r"""Filtering distributions :math:`\log P(y_t = k \mid F_{1:t})` and log-likelihoods.

    Arguments as :func:`forward_backward`.

    Returns:
        ``(log_filtered (T_total, K), log_likelihood (S,))``; each row of ``log_filtered`` is
        normalised.
    """
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    if resolve_backend(backend, e, a, tr) == "numba":
        from .scaled import numba_forward

        filtered, loglik = numba_forward(e, a, tr, lengths)
        if backend == "numba" or not bool(torch.isneginf(loglik).any()):
            _raise_if_impossible(loglik, "filtering distributions")
            return filtered.log(), loglik
    _, log_alpha, loglik, _, _ = _torch_forward(e, a, tr, lengths)
    _raise_if_impossible(loglik, "filtering distributions")
    return torch.log_softmax(log_alpha, -1), loglik
