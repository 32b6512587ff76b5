"""The assignment step of the blocked Gibbs sampler: every label at once.

``p(c_i = k) ∝ pi_k N(z_i | mu_k, lambda_k^{-1} I_d)`` for all ``N`` points and ``T``
components, with the squared distance expanded as ``||z||^2 - 2 z.mu + ||mu||^2`` around the
data mean (one matmul per block of rows), and one inverse-CDF draw per point from a uniform on
``(0, 1]``. Blocks of rows bound the memory to ``O(rows * T)``.

Example:
    >>> import torch
    >>> z = torch.tensor([[0.0], [5.0]], dtype=torch.float64)
    >>> mu = torch.tensor([[0.0], [5.0]], dtype=torch.float64)
    >>> lam = torch.ones(2, dtype=torch.float64)
    >>> log_pi = torch.log(torch.tensor([0.5, 0.5], dtype=torch.float64))
    >>> draw_labels(z, log_pi, mu, lam, torch.full((2,), 0.5, dtype=torch.float64), 1).tolist()
    [0, 1]
"""

from __future__ import annotations

import math

import torch

from .blocked_model import BlockedState, check_data, stick_log_weights

__all__ = ["assignment_logits", "draw_labels", "CHUNK_ENTRIES"]

_LOG_2PI = math.log(2.0 * math.pi)
# Entries of one (rows, T) assignment block: about 2^16 keeps it in a CPU's cache; on a GPU,
# large blocks (2^24 entries, 128 MiB in float64) keep the kernel launches few.
CHUNK_ENTRIES = {"cpu": 1 << 16, "cuda": 1 << 24}


def _logit_parts(z, log_pi, mu, lam):
    """Centred data, squared norms and the per-component constants of the assignment logits:
    ``logit_ik = const_k + z_i.W_k - lam_k ||z_i||^2 / 2`` with ``W_k = lam_k mu_k`` (centred)."""
    centre = z.mean(0)
    zc = z - centre
    muc = mu - centre
    d = z.shape[1]
    const = (
        log_pi
        + 0.5 * d * (torch.log(lam) - _LOG_2PI)
        - 0.5 * lam * (muc * muc).sum(1)
    )
    return zc, (zc * zc).sum(1), const, (lam.unsqueeze(1) * muc).T.contiguous()


def _logits_block(zc, zsq, const, weight, lam, out=None):
    block = torch.addmm(const, zc, weight, out=out) if out is not None else torch.addmm(const, zc, weight)
    return block.addr_(zsq, lam, alpha=-0.5)


def assignment_logits(z, state: BlockedState) -> torch.Tensor:
    """``log pi_k + log N(z_i | mu_k, lambda_k^{-1} I_d)`` for every point and component.

    Computed as the sampler computes it (centred data, expanded squared distances).

    Returns:
        ``(N, T)`` tensor in ``z``'s dtype.

    Example:
        >>> from pyromodels.bnp import blocked_init
        >>> from pyromodels.conjugate import NormalGamma
        >>> g = torch.Generator().manual_seed(0)
        >>> z = torch.randn(20, 2, dtype=torch.float64, generator=g)
        >>> prior = NormalGamma(torch.zeros(2, dtype=torch.float64), 0.5, 2.0, 1.0)
        >>> state = blocked_init(z, 2, prior, 1.0, 4, g)
        >>> assignment_logits(z, state).shape
        torch.Size([20, 4])
    """
    z = check_data(z)
    log_pi = stick_log_weights(state.v, state.stick_log1m())
    zc, zsq, const, weight = _logit_parts(z, log_pi, state.mu, state.lam)
    return _logits_block(zc, zsq, const, weight, state.lam)


def draw_labels(z, log_pi, mu, lam, w, chunk_rows: int) -> torch.Tensor:
    """Inverse-CDF draw of every label: the first ``k`` with ``cdf_ik >= w_i cdf_iT``.

    Arguments are trusted (the sampler has checked them).

    Args:
        z: ``(N, d)`` data.
        log_pi: ``(T,)`` log mixture weights (``-inf`` allowed, not all).
        mu: ``(T, d)`` means; lam: ``(T,)`` precisions.
        w: ``(N,)`` uniforms on ``(0, 1]``.
        chunk_rows: rows per block.

    Returns:
        ``(N,)`` int64 labels in ``[0, T)``.
    """
    zc, zsq, const, weight = _logit_parts(z, log_pi, mu, lam)
    n, T = z.shape[0], log_pi.shape[0]
    labels = torch.empty(n, dtype=torch.long, device=z.device)
    rows = min(n, chunk_rows)
    buf = torch.empty(rows, T, dtype=z.dtype, device=z.device)
    cdf = torch.empty_like(buf)
    floor = 0.9 * math.log(torch.finfo(z.dtype).tiny)  # -78.6 (float32), -637.6 (float64)
    for start in range(0, n, rows):
        stop = min(n, start + rows)
        m = stop - start
        block = _logits_block(zc[start:stop], zsq[start:stop], const, weight, lam, out=buf[:m])
        # Weights relative to the row's largest, floored near the smallest normal float: exp is
        # many times slower on results that underflow, and a weight that small is never drawn
        # (its step in the CDF is below the uniforms' resolution) with or without the floor.
        block.sub_(block.amax(1, keepdim=True)).clamp_(min=floor).exp_()
        c = torch.cumsum(block, 1, out=cdf[:m])
        # w > 0, so a component with zero weight is never chosen; w <= 1 keeps the index < T
        target = w[start:stop].unsqueeze(1) * c[:, -1:]
        labels[start:stop] = torch.searchsorted(c, target).squeeze(1)
    return labels.clamp_(max=T - 1)
