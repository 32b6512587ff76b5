"""Synthetic data for DDPM: Gaussian clusters in a latent space, seen through a warp.

The protocol (paper notes, section 5 "Synthetic version")::

    mu_k ~ N(0, s_mu^2 I_d)                           k = 1..K
    c_i  ~ Categorical(w)  or  c ~ CRP(alpha)         i = 1..N
    z_i  ~ N(mu_{c_i}, sigma^2 I_d)
    y_i  = f^-1(z_i)

where ``f`` is any invertible map from features ``y`` to the latent ``z`` (a random NICE flow
makes the true ``f`` part of DDPM's model class, so DDPM can recover the partition while a
DP mixture on ``y`` sees warped, non-Gaussian clusters).

Example:
    >>> import torch
    >>> from torch.distributions.transforms import AffineTransform
    >>> data = simulate_warped_clusters(100, 2, 3, seed=0, warp=AffineTransform(1.0, 2.0))
    >>> data.y.shape, data.num_clusters
    (torch.Size([100, 2]), 3)
    >>> bool(torch.allclose(2.0 * data.y + 1.0, data.z))
    True
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import torch
from torch.distributions import Transform

from ..bnp import sample_crp
from ..checks import check_int, check_positive, check_stochastic
from ..core.seeding import make_generator

__all__ = ["SyntheticClusters", "simulate_warped_clusters"]


@dataclass(frozen=True)
class SyntheticClusters:
    """Synthetic clustered data.

    Attributes:
        y: ``(N, d)`` observed features ``f^-1(z)``.
        z: ``(N, d)`` latent points.
        labels: ``(N,)`` true clusters ``0..K-1``.
        centres: ``(K, d)`` latent cluster means ``mu_k``.
        cluster_sd: the latent within-cluster sd ``sigma``.
    """

    y: torch.Tensor
    z: torch.Tensor
    labels: torch.Tensor
    centres: torch.Tensor
    cluster_sd: float

    @property
    def num_clusters(self) -> int:
        """``K``, the number of centres (with fixed proportions and few points some clusters
        may be empty; a CRP draw uses every one)."""
        return int(self.centres.shape[0])


def _inverse(warp, inverse_warp) -> Callable | None:
    if warp is not None and inverse_warp is not None:
        raise ValueError("pass warp (a Transform y -> z) or inverse_warp (a callable z -> y), not both")
    if warp is not None:
        if not isinstance(warp, Transform):
            raise TypeError(f"warp must be a torch.distributions.Transform (y -> z), got "
                            f"{type(warp).__name__}; pass a plain callable z -> y as inverse_warp")
        return warp.inv
    if inverse_warp is not None and not callable(inverse_warp):
        raise TypeError(f"inverse_warp must be a callable z -> y, got {type(inverse_warp).__name__}")
    return inverse_warp


@torch.no_grad()
def simulate_warped_clusters(
    num_points: int,
    dim: int,
    num_clusters: int | None,
    seed: int,
    *,
    centre_sd: float = 5.0,
    cluster_sd: float = 1.0,
    proportions=None,
    crp_alpha: float | None = None,
    warp: Transform | None = None,
    inverse_warp: Callable | None = None,
) -> SyntheticClusters:
    """Draw isotropic Gaussian clusters and map them through ``f^-1`` (module docstring).

    Args:
        num_points: ``N >= 1``.
        dim: ``d >= 1``.
        num_clusters: ``K >= 1`` with fixed proportions; ``None`` with ``crp_alpha`` (then
            ``K`` is the CRP's number of clusters).
        seed: seed of the only generator used.
        centre_sd: ``s_mu > 0``, sd of the centres about 0.
        cluster_sd: ``sigma > 0``, within-cluster sd in the latent space.
        proportions: ``(K,)`` weights ``w`` on the simplex (default uniform); labels are drawn
            i.i.d. from them.
        crp_alpha: ``alpha > 0`` to draw the labels from a CRP instead.
        warp: a ``torch.distributions.Transform`` ``f`` from ``y`` to ``z``; ``y = f.inv(z)``.
        inverse_warp: a plain callable ``z -> y`` (``(N, d)`` to ``(N, d)``), used in place of
            ``warp``. With neither, ``y = z``.

    Returns:
        :class:`SyntheticClusters` (float64).

    Raises:
        ValueError / TypeError: sizes not positive integers; ``num_clusters`` together with
            ``crp_alpha`` or neither; ``proportions`` with ``crp_alpha``; proportions of the
            wrong length or off the simplex; both warps; a warp of the wrong kind or a warp
            whose output is not a finite ``(N, d)`` tensor.
    """
    num = check_int(num_points, "num_points", minimum=1)
    d = check_int(dim, "dim", minimum=1)
    seed = check_int(seed, "seed", minimum=0)
    s_mu = check_positive(centre_sd, "centre_sd")
    sigma = check_positive(cluster_sd, "cluster_sd")
    to_y = _inverse(warp, inverse_warp)
    gen = make_generator(seed)
    if crp_alpha is not None:
        if num_clusters is not None or proportions is not None:
            raise ValueError("crp_alpha draws the labels from a CRP: leave num_clusters and "
                             "proportions as None")
        labels = sample_crp(num, check_positive(crp_alpha, "crp_alpha"), gen)
        k = int(labels.max()) + 1
    else:
        if num_clusters is None:
            raise ValueError("num_clusters is needed unless crp_alpha is given")
        k = check_int(num_clusters, "num_clusters", minimum=1)
        if proportions is None:
            w = torch.full((k,), 1.0 / k, dtype=torch.float64)
        else:
            w = check_stochastic(proportions, "proportions", ndim=1, dtype=torch.float64)
            if w.shape[0] != k:
                raise ValueError(f"proportions must have num_clusters={k} entries, got {w.shape[0]}")
        labels = torch.multinomial(w, num, replacement=True, generator=gen)
    centres = s_mu * torch.randn(k, d, dtype=torch.float64, generator=gen)
    z = centres[labels] + sigma * torch.randn(num, d, dtype=torch.float64, generator=gen)
    y = z.clone() if to_y is None else to_y(z)
    if not isinstance(y, torch.Tensor) or tuple(y.shape) != (num, d):
        raise ValueError(f"the warp must map z of shape ({num}, {d}) to a tensor of the same shape")
    if not bool(torch.isfinite(y).all()):
        raise ValueError("the warp gave non-finite values of y")
    return SyntheticClusters(y=y.to(torch.float64), z=z, labels=labels, centres=centres,
                             cluster_sd=sigma)
