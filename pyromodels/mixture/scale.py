"""The data's scale: the unit in which the mixture's default prior and its start are expressed.

The mixture is scale-equivariant: fitting ``c x`` gives ``c locs`` and ``precisions / c^2``.
For that, every default and every floor is relative to the data's spread, never absolute,
and the data's spread must leave the squares (covariances) and inverse squares (precisions)
the model computes inside the range of the data's floating type.
"""

from __future__ import annotations

import torch

from ..conjugate.units import centred_units, data_scale

__all__ = ["data_scale", "fittable_scales", "check_data_scale", "standardize"]


def fittable_scales(x: torch.Tensor) -> tuple[float, float]:
    """``(smallest, largest)`` scale of data shaped like ``x`` ``(N, d)`` that the mixture fits
    in ``x``'s dtype.

    The covariances grow as the scale squared and the precisions as its inverse square. Both,
    summed over ``N d`` terms, must stay finite: the bounds leave a factor ``1e8 N d`` below
    the type's largest value, for the default prior's ``1e-6`` diagonal term (a constant
    column's precision is up to ``1e6`` over the scale squared) and for the degrees of freedom
    and rounding (for 100 points in 2 dimensions, about ``(1e-149, 1e149)`` in float64 and
    ``(8e-15, 1e14)`` in float32).
    """
    largest = torch.finfo(x.dtype).max
    headroom = 1e8 * x.shape[0] * x.shape[1]
    return (headroom / largest) ** 0.5, (largest / headroom) ** 0.5


def check_data_scale(x: torch.Tensor, name: str, scaled_prior: bool) -> float:
    """The data's scale (see :func:`data_scale`) after checking the model can fit it.

    Args:
        x: ``(N, d)`` finite points.
        name: the data argument's name, used in messages.
        scaled_prior: whether the prior's covariance comes from the data; then a zero or too
            small scale is refused too (the prior would be singular).

    Raises:
        ValueError: naming the data's scale and the range its dtype allows.
    """
    scale = data_scale(x)
    low, high = fittable_scales(x)
    measured = f"{name} has scale {scale:.3g} (root mean variance)"
    dtype = str(x.dtype).replace("torch.", "")
    limits = f"the mixture fits in {dtype} for {x.shape[0]} points in {x.shape[1]} dimensions"
    if scale > high:
        raise ValueError(
            f"{measured}, above the largest scale {limits}, {high:.3g}: its covariances would "
            "overflow; divide the data by a constant (the fit is scale-equivariant)"
        )
    if scaled_prior and scale == 0.0:
        raise ValueError(
            f"{name} has no spread: all its {x.shape[0]} points are identical, so the default "
            "covariance_prior (the data's covariance) is zero; give covariance_prior"
        )
    if scaled_prior and scale < low:
        raise ValueError(
            f"{measured}, below the smallest scale {limits}, {low:.3g}: its precisions would "
            "overflow; multiply the data by a constant (the fit is scale-equivariant) or give "
            "covariance_prior"
        )
    return scale


def standardize(x: torch.Tensor) -> torch.Tensor:
    """``x`` centred and divided by its largest absolute deviation (entries in ``[-1, 1]``);
    a constant ``x`` gives zeros. Distances between standardized points cannot overflow."""
    u, _ = centred_units(x)
    peak = u.abs().amax()
    return u / peak if float(peak) > 0 else u
