"""The result type of the forward-backward kernels."""

from __future__ import annotations

from dataclasses import dataclass

import torch

__all__ = ["ForwardBackward"]


@dataclass(frozen=True)
class ForwardBackward:
    """Smoothing results of a forward-backward pass.

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
