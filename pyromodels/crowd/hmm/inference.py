r"""HMM inference over ragged sequences: one dispatcher per computation.

Each function validates its inputs (:func:`~.kernels.inputs.check_log_inputs`), picks the
backend with :func:`~pyromodels.core.backend.resolve_backend` and calls the matching kernel:

* forward-backward: :func:`~.kernels.parallel.torch_forward_backward` (torch: parallel scans,
  CPU or CUDA, differentiable) or :func:`~.kernels.scaled.numba_forward_backward` (numba:
  scaled recursions, CPU);
* log-likelihood: :func:`~.kernels.parallel.torch_forward` or
  :func:`~.kernels.scaled.numba_forward`;
* filtering: :func:`~.kernels.parallel.torch_forward_filter` or
  :func:`~.kernels.scaled.numba_forward`;
* Viterbi: :func:`~.kernels.viterbi.torch_viterbi` or :func:`~.kernels.scaled.numba_viterbi`;
* FFBS: :func:`~.kernels.sampling.torch_backward_sample` or
  :func:`~.kernels.scaled.numba_backward_sample` after the filtering.

``backend="auto"`` picks numba for CPU tensors that need no gradient and torch otherwise, and
recomputes in log space if a scaled step of the numba recursions underflows. Model
(:mod:`.kernels.parallel` has the maths): ``log_initial[k] = log p_1(k)`` (the law of the
FIRST state), ``log_transition[i, j] = log P(y_t = j | y_{t-1} = i)`` (rows = previous
state), ``log_emissions[t, k] = log b_t(k)``.
"""

from __future__ import annotations

import torch

from ...checks import check_in, check_int
from ...core.backend import resolve_backend
from .kernels.inputs import check_log_inputs
from .kernels.parallel import torch_forward, torch_forward_backward, torch_forward_filter
from .kernels.result import ForwardBackward
from .kernels.sampling import torch_backward_sample
from .kernels.viterbi import torch_viterbi

# the numba kernels (.kernels.scaled) are imported where they run: numba's start-up costs
# a few tenths of a second that a torch-backend fit never needs

__all__ = ["ForwardBackward", "forward_backward", "log_likelihood", "forward_filter", "viterbi",
           "ffbs_sample"]

_PAIRWISE = ("sum", "step", None)


def _raise_if_impossible(loglik: torch.Tensor, what: str) -> None:
    bad = torch.nonzero(torch.isneginf(loglik)).flatten().tolist()
    if bad:
        raise ValueError(
            f"sequence(s) {bad[:10]} have probability zero under the given parameters (log "
            f"likelihood -inf), so their {what} are undefined; check for impossible transitions "
            "or responses (zero probabilities)"
        )


def _scaled_ok(backend: str, loglik: torch.Tensor) -> bool:
    """Keep a numba result unless ``"auto"`` chose numba and a scaled step underflowed."""
    return backend == "numba" or not bool(torch.isneginf(loglik).any())


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
        A :class:`~.kernels.result.ForwardBackward`.

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
    if resolve_backend(backend, e, a, tr) == "numba":
        from .kernels.scaled import numba_forward_backward

        out = numba_forward_backward(e, a, tr, lengths, pairwise)
        if _scaled_ok(backend, out.log_likelihood):
            _raise_if_impossible(out.log_likelihood, "posterior marginals")
            return out
    out = torch_forward_backward(e, a, tr, lengths, pairwise)
    _raise_if_impossible(out.log_likelihood, "posterior marginals")
    return out


def log_likelihood(log_emissions, log_initial, log_transition, lengths=None, *, backend: str = "auto"):
    """``(S,)`` log-likelihood of each sequence (the forward pass only; ``-inf`` allowed).

    Arguments as :func:`forward_backward`.
    """
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    if resolve_backend(backend, e, a, tr) == "numba":
        from .kernels.scaled import numba_forward

        loglik = numba_forward(e, a, tr, lengths)[1]
        if _scaled_ok(backend, loglik):
            return loglik
    return torch_forward(e, a, tr, lengths)


def _filter(e, a, tr, lengths, which: str, fallback: bool):
    """:func:`forward_filter` on validated inputs with the resolved backend ``which``;
    ``fallback``: redo in log space if a scaled step underflowed."""
    if which == "numba":
        from .kernels.scaled import numba_forward

        filtered, loglik = numba_forward(e, a, tr, lengths)
        if not fallback or _scaled_ok("auto", loglik):
            _raise_if_impossible(loglik, "filtering distributions")
            return filtered.log(), loglik
    log_alpha, loglik = torch_forward_filter(e, a, tr, lengths)
    _raise_if_impossible(loglik, "filtering distributions")
    return torch.log_softmax(log_alpha, -1), loglik


def forward_filter(log_emissions, log_initial, log_transition, lengths=None, *, backend: str = "auto"):
    r"""Filtering distributions :math:`\log P(y_t = k \mid F_{1:t})` and log-likelihoods.

    Arguments as :func:`forward_backward`.

    Returns:
        ``(log_filtered (T_total, K), log_likelihood (S,))``; each row of ``log_filtered`` is
        normalised.
    """
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    which = resolve_backend(backend, e, a, tr)
    return _filter(e, a, tr, lengths, which, fallback=backend != "numba")


def viterbi(log_emissions, log_initial, log_transition, lengths=None, *, backend: str = "auto"):
    """The most probable state path of each sequence (see :mod:`.kernels.viterbi`).

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
        from .kernels.scaled import numba_viterbi

        return numba_viterbi(e, a, tr, lengths)
    return torch_viterbi(e, a, tr, lengths)


def ffbs_sample(log_emissions, log_initial, log_transition, lengths=None, *, generator: torch.Generator,
                num_samples: int = 1, backend: str = "auto") -> torch.Tensor:
    r"""Draw ``num_samples`` label paths of every sequence from the HMM posterior.

    Forward-filtering backward-sampling: filter forward to :math:`P(z_t \mid F_{1:t})`, draw
    :math:`z_T` from the last filter, then for :math:`t = T-1, \dots, 1` draw :math:`z_t
    \propto P(z_t \mid F_{1:t})\, A_{z_t z_{t+1}}`. Draws use the inverse CDF of uniforms
    taken from the generator, so the torch and numba backends give the same paths.

    Args:
        log_emissions, log_initial, log_transition, lengths: as :func:`forward_backward`.
        generator: the ``torch.Generator`` the uniforms come from.
        num_samples: number of independent joint draws.
        backend: ``"auto"``, ``"torch"`` or ``"numba"`` (filtering and backward pass).

    Returns:
        long ``(num_samples, T_total)``.

    Example:
        >>> import torch
        >>> e = torch.zeros(4, 2, dtype=torch.float64)
        >>> a = torch.log(torch.tensor([0.5, 0.5], dtype=torch.float64))
        >>> tr = torch.log(torch.tensor([[0.9, 0.1], [0.1, 0.9]], dtype=torch.float64))
        >>> ffbs_sample(e, a, tr, [1, 3], generator=torch.Generator().manual_seed(0)).shape
        torch.Size([1, 4])
    """
    num_samples = check_int(num_samples, "num_samples", minimum=1)
    e, a, tr, lengths = check_log_inputs(log_emissions, log_initial, log_transition, lengths)
    which = resolve_backend(backend, e, a, tr)
    log_filt, _ = _filter(e, a, tr, lengths, which, fallback=False)
    u = torch.rand((num_samples, e.shape[0]), generator=generator, dtype=torch.float64, device=e.device)
    if which == "numba":
        from .kernels.scaled import numba_backward_sample

        return numba_backward_sample(log_filt, tr, lengths, u)
    return torch_backward_sample(log_filt, tr, lengths, u)
