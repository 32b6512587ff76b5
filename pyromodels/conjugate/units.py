"""The data's units: the centre and spread in which data-dependent default priors are written.

A model whose default prior is fixed in absolute numbers (a unit Gaussian, a unit-rate Gamma)
treats ``c x`` and ``x + b`` as different problems: at ``x * 1e-8`` every point looks like one
cluster and at ``x + 1e6`` every point looks far from the prior mean. A default written in the
data's units (centre ``loc``, spread ``scale``) is equivariant instead: fitting ``c x + b``
gives the clustering of ``x``, because in those units the two data sets are the same.

:func:`data_units` is that one rule, shared by every family whose default prior needs a scale
(the Gaussian mixture's empirical covariance uses :func:`data_scale` too).
"""

from __future__ import annotations

import torch

__all__ = ["centred_units", "data_scale", "data_units"]


def centred_units(x: torch.Tensor) -> tuple[torch.Tensor, float]:
    """``(u, peak)`` with ``x = peak * (u + mean)``: ``u`` centred, in units of ``x``'s largest
    magnitude (so nothing here overflows for any finite ``x``)."""
    peak = float(x.abs().amax())
    if peak == 0.0:
        return torch.zeros_like(x), 0.0
    u = x / peak
    return u - u.mean(0), peak


def data_scale(x: torch.Tensor) -> float:
    """Root mean column variance of ``x`` ``(N, d)``, finite for any finite ``x``; 0 when every
    point is the same.

    Example:
        >>> data_scale(torch.tensor([[0.0, 0.0], [2.0, 2.0]]))
        1.4142135381698608
    """
    u, peak = centred_units(x)
    per_entry = u.pow(2).sum() / (max(x.shape[0] - 1, 1) * x.shape[1])
    return peak * float(per_entry.sqrt())


def data_units(x: torch.Tensor, name: str = "data") -> tuple[torch.Tensor, float]:
    """``(loc, scale)`` of ``x`` ``(N, d)``: the column means ``(d,)`` and
    :func:`data_scale`, so that ``(x - loc) / scale`` has mean 0 and root mean variance 1.

    Args:
        x: ``(N, d)`` finite points.
        name: the data argument's name, used in the message.

    Raises:
        ValueError: all points identical (no spread to measure a default prior in).

    Example:
        >>> loc, scale = data_units(torch.tensor([[1e6, 0.0], [1e6 + 2.0, 2.0]], dtype=torch.float64))
        >>> loc.tolist(), round(scale, 6)
        ([1000001.0, 1.0], 1.414214)
    """
    scale = data_scale(x)
    if scale == 0.0:
        raise ValueError(
            f"{name} has no spread: all its {x.shape[0]} points are identical, so the default "
            "prior, written in units of the data's spread, is undefined; give the prior"
        )
    return x.detach().mean(0), scale
