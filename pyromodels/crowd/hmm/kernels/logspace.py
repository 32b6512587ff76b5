r"""Log-semiring matrix products and a segmented parallel prefix scan.

In the log semiring the "product" of two log-matrices is

.. math:: (A \otimes B)_{ik} = \log \sum_j \exp(A_{ij} + B_{jk}),

which is associative, so the row vectors :math:`v_r \otimes M_{r+1} \otimes \cdots \otimes
M_t` for every ``t`` (a prefix scan) need only :math:`O(\log T)` rounds of batched products
(Ladner-Fischer pairing). :func:`vector_scan` restarts from a new vector wherever ``reset`` is
true, so one flat scan serves many ragged sequences at once.
"""

from __future__ import annotations

import torch

__all__ = ["logmatmulexp", "logvecmatexp", "vector_scan"]


def logmatmulexp(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    r"""Batched :math:`\log(\exp(a) \exp(b))` for ``(n, K, J)`` and ``(n, J, L)`` tensors.

    The fast path shifts each row of ``a`` and each column of ``b`` by its maximum and uses one
    batched matrix product. Entries whose shifted product falls below ``tiny / eps`` (where an
    ``exp`` may have underflowed, or the entry is exactly ``-inf``) are recomputed exactly by a
    ``logsumexp`` over the middle index, so the result is faithful to rounding even for entries
    thousands of nats below their row and column maxima. ``-inf`` entries are allowed.

    Example:
        >>> a = torch.log(torch.tensor([[[0.5, 0.5], [0.1, 0.9]]], dtype=torch.float64))
        >>> torch.allclose(logmatmulexp(a, a).exp(), a.exp() @ a.exp())
        True
    """
    finfo = torch.finfo(a.dtype)
    a_shift = a.detach().amax(-1, keepdim=True).clamp_(min=finfo.min)
    b_shift = b.detach().amax(-2, keepdim=True).clamp_(min=finfo.min)
    prod = torch.bmm((a - a_shift).exp_(), (b - b_shift).exp_())
    small = prod < finfo.tiny / finfo.eps
    out = prod.log_().add_(a_shift).add_(b_shift)
    if bool(small.any()):
        n_idx, i_idx, k_idx = small.nonzero(as_tuple=True)
        exact = torch.logsumexp(a[n_idx, i_idx, :] + b[n_idx, :, k_idx], dim=-1)
        out = out.index_put((n_idx, i_idx, k_idx), exact)
    return out


def logvecmatexp(v: torch.Tensor, m: torch.Tensor) -> torch.Tensor:
    r"""Batched row-vector times matrix in log space: ``(n, K)`` and ``(n, K, L)`` to ``(n, L)``."""
    return logmatmulexp(v.unsqueeze(-2), m).squeeze(-2)


def vector_scan(x: torch.Tensor, first: torch.Tensor, reset: torch.Tensor) -> torch.Tensor:
    r"""Segmented inclusive scan ``out[t] = first[r] ⊗ x[r + 1] ⊗ ... ⊗ x[t]``.

    ``r <= t`` is the last position with ``reset[r]`` true; ``reset[0]`` must be true. Only the
    pairing rounds multiply matrices, so the work is about ``T`` matrix products plus ``T``
    vector-matrix products, in ``ceil(log2 T)`` rounds.

    Args:
        x: ``(T, K, K)`` log-matrices (``x[r]`` is unused where ``reset[r]``).
        first: ``(T, K)`` log row vectors (used only where ``reset``).
        reset: ``(T,)`` bool, where a segment starts.

    Returns:
        ``(T, K)``.
    """
    n = x.shape[0]
    if n == 1:
        return first
    left, right, right_reset = x[0 : n - 1 : 2], x[1::2], reset[1::2]
    pair_x = logmatmulexp(left, right)
    pair_first = torch.where(right_reset[:, None], first[1::2], logvecmatexp(first[0 : n - 1 : 2], right))
    inner = vector_scan(pair_x, pair_first, reset[0 : n - 1 : 2] | right_reset)
    out = torch.empty_like(first)
    out[0] = first[0]
    out[1::2] = inner
    if n > 2:
        even = x[2::2]
        m = even.shape[0]
        out[2::2] = torch.where(reset[2::2][:, None], first[2::2], logvecmatexp(inner[:m], even))
    return out
