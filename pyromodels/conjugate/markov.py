"""The stationary law of a finite Markov chain."""

from __future__ import annotations

import torch

__all__ = ["stationary_distribution"]

#: the largest residual of pi = pi A and the most negative entry accepted from the solve
TOLERANCE = 1e-8


def stationary_distribution(transition: torch.Tensor) -> torch.Tensor:
    r"""The stationary law :math:`\pi = \pi A` of row-stochastic ``transition`` ``(..., K, K)``.

    Solved as a linear system with one balance equation replaced by :math:`\sum_k \pi_k = 1`;
    the solution is checked (residual and sign within ``1e-8``) and rounding below zero
    removed.

    Raises:
        ValueError: if the chain has no unique stationary distribution (it is reducible, e.g.
            the identity matrix).

    Example:
        >>> A = torch.tensor([[0.9, 0.1], [0.2, 0.8]], dtype=torch.float64)
        >>> stationary_distribution(A).tolist()  # doctest: +ELLIPSIS
        [0.666..., 0.333...]
    """
    K = transition.shape[-1]
    eye = torch.eye(K, dtype=transition.dtype, device=transition.device)
    system = (transition.transpose(-1, -2) - eye).clone()
    system[..., -1, :] = 1.0
    rhs = torch.zeros(transition.shape[:-1], dtype=transition.dtype, device=transition.device)
    rhs[..., -1] = 1.0
    pi, info = torch.linalg.solve_ex(system, rhs)
    resid = (pi.unsqueeze(-2) @ transition).squeeze(-2) - pi
    if (bool((info != 0).any()) or not bool(torch.isfinite(pi).all())
            or float(resid.abs().max()) > TOLERANCE or float(pi.min()) < -TOLERANCE):
        raise ValueError("transition has no unique stationary distribution (the chain is "
                         "reducible or degenerate)")
    pi = pi.clamp_min(0.0)  # rounding below zero (at most TOLERANCE)
    return pi / pi.sum(-1, keepdim=True)
