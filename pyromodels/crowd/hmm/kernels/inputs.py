"""Argument checks for the HMM kernels and parameters.

The kernels take log-probabilities, where ``-inf`` is a legitimate value (an impossible
transition or response), so :func:`as_log_tensor` accepts ``-inf`` and rejects only NaN and
``+inf``; everything else goes through :mod:`pyromodels.checks`.
"""

from __future__ import annotations

import torch

from ....checks import as_label_tensor, as_numeric_tensor

__all__ = [
    "as_log_tensor",
    "check_lengths",
    "check_log_inputs",
    "sequence_bounds",
    "pad_positions",
]

#: rows of a probability table must sum to one within this tolerance
SIMPLEX_TOL = 1e-8


def as_log_tensor(x, name: str, shape: tuple[int | None, ...], dtype=None, device=None) -> torch.Tensor:
    """A floating tensor of log-probabilities with the given shape (``None`` = any size).

    ``-inf`` is allowed; NaN and ``+inf`` raise ``ValueError``.
    """
    given_tensor = isinstance(x, torch.Tensor)
    x = as_numeric_tensor(x, name)
    if not given_tensor and not (x.is_floating_point() or x.is_complex()):
        x = x.to(torch.float64)  # integer lists and arrays (``[0, -3]``) are read as float64
    if not x.is_floating_point():
        raise TypeError(f"{name} must be a floating tensor of log-probabilities, got dtype {x.dtype}")
    if x.dim() != len(shape) or any(s is not None and x.shape[i] != s for i, s in enumerate(shape)):
        want = "(" + ", ".join("?" if s is None else str(s) for s in shape) + ")"
        raise ValueError(f"{name} must have shape {want}, got {tuple(x.shape)}")
    if bool(torch.isnan(x).any()):
        raise ValueError(f"{name} must not contain NaN (log-probabilities may be -inf, not NaN)")
    if bool((x == float("inf")).any()):
        raise ValueError(f"{name} must not contain +inf (log-probabilities are <= 0 or -inf)")
    return x.to(dtype=dtype or x.dtype, device=device or x.device)


def check_lengths(lengths, total: int, device=None) -> torch.Tensor:
    """Sequence lengths as a long tensor ``(S,)`` of positive integers summing to ``total``.

    ``None`` means one sequence of length ``total``.
    """
    if lengths is None:
        return torch.tensor([total], dtype=torch.long, device=device)
    t = as_label_tensor(lengths, "lengths", device=device)
    if int(t.min()) < 1:
        raise ValueError(f"lengths must all be >= 1, found {int(t.min())}")
    if int(t.sum()) != total:
        raise ValueError(
            f"lengths must sum to the number of positions {total} (the rows of log_emissions), "
            f"got sum {int(t.sum())}"
        )
    return t


def check_log_inputs(log_emissions, log_initial, log_transition, lengths):
    """Validate the kernels' inputs and bring them to one dtype and the emissions' device.

    Args:
        log_emissions: ``(T_total, K)``.
        log_initial: ``(K,)``.
        log_transition: ``(K, K)``, rows = previous state.
        lengths: ``(S,)`` positive lengths summing to ``T_total`` or ``None``.

    Returns:
        ``(log_emissions, log_initial, log_transition, lengths)``.
    """
    e = as_log_tensor(log_emissions, "log_emissions", (None, None))
    if e.shape[0] == 0 or e.shape[1] == 0:
        raise ValueError(f"log_emissions must be non-empty (T_total, K), got {tuple(e.shape)}")
    k = e.shape[1]
    a = as_log_tensor(log_initial, "log_initial", (k,))
    tr = as_log_tensor(log_transition, "log_transition", (k, k))
    dtype = torch.promote_types(torch.promote_types(e.dtype, a.dtype), tr.dtype)
    e = e.to(dtype)
    a = a.to(dtype=dtype, device=e.device)
    tr = tr.to(dtype=dtype, device=e.device)
    return e, a, tr, check_lengths(lengths, e.shape[0], device=e.device)


def sequence_bounds(lengths: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(offsets (S + 1,), starts (T_total,) bool, ends (T_total,) bool)`` of ragged sequences."""
    offsets = torch.zeros(lengths.shape[0] + 1, dtype=torch.long, device=lengths.device)
    offsets[1:] = torch.cumsum(lengths, 0)
    total = int(offsets[-1])
    starts = torch.zeros(total, dtype=torch.bool, device=lengths.device)
    ends = torch.zeros_like(starts)
    starts[offsets[:-1]] = True
    ends[offsets[1:] - 1] = True
    return offsets, starts, ends


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
