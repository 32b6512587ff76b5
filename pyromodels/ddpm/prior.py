"""Hyperparameters of the Dirichlet-process mixture of isotropic Gaussians, and the paper's presets.

The prior (Deep Dirichlet Process Mixture Models, eqs. 4-7) is

.. math::

    G \\sim \\mathrm{DP}(G_0, \\alpha), \\qquad
    G_0 = \\mathrm{NG}(\\mu, \\lambda \\mid \\mu_0, \\kappa_0, \\alpha_0, \\beta_0)
        = N(\\mu \\mid \\mu_0, (\\kappa_0 \\lambda)^{-1} I_d)\\,
          \\mathrm{Gamma}(\\lambda \\mid \\alpha_0, \\text{rate } \\beta_0).

``alpha`` is the DP concentration and ``alpha0`` the Gamma shape (the paper's symbols). The
paper's Appendix B gives ``(kappa0, alpha0, beta0, alpha)`` and the schedule ``(E_dpm, E_flow)``
for four data sets, but never ``mu0``: the presets use ``mu0 = 0`` unless asked for the
empirical mean of the transformed data (``mu0="empirical"``), resolved by :meth:`DPMixturePrior.loc`.

**The default prior is written in the data's units.** A model built with ``prior=None`` fits
with :func:`default_prior` of its data: ``DPMixturePrior()`` moved to the data's centre and
spread (:func:`~pyromodels.conjugate.data_units`), that is ``mu0`` = the column means and
``beta0 = scale^2``. Fitting ``c x + b`` then gives the clustering of ``x`` (the posterior of
the partition is the same; ``mu`` and ``1 / lam`` move with the data), where a fixed prior
sees one cluster at ``x * 1e-8`` or ``x + 1e6``. An explicit prior is used as given.

Example:
    >>> prior = DPMixturePrior.paper_preset("mnist")
    >>> prior.kappa0, prior.alpha0, prior.beta0, prior.alpha
    (0.3, 10000.0, 250000.0, 1e-05)
    >>> PAPER_SCHEDULES["har"]
    PaperSchedule(e_dpm=12, e_flow=3)
    >>> float(prior.normal_gamma(dim=10).a)
    10000.0
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, replace

import torch

from ..checks import as_float_tensor, check_in, check_int, check_positive
from ..conjugate import NormalGamma, data_units

__all__ = [
    "DPMixturePrior", "PaperSchedule", "PAPER_PRESETS", "PAPER_SCHEDULES", "EMPIRICAL",
    "default_prior", "resolve_prior",
]

#: value of ``mu0`` that asks for the mean of the (transformed) data
EMPIRICAL = "empirical"


def _check_mu0(mu0):
    """``mu0`` as a float, :data:`EMPIRICAL`, or a tuple of floats (a vector of length ``d``)."""
    if isinstance(mu0, str):
        if mu0 != EMPIRICAL:
            raise ValueError(f"mu0 must be a real number, a 1-d vector or {EMPIRICAL!r}, got {mu0!r}")
        return mu0
    if isinstance(mu0, numbers.Real) and not isinstance(mu0, bool):
        value = float(mu0)
        if not math.isfinite(value):
            raise ValueError(f"mu0 must be finite, got {value}")
        return value
    if isinstance(mu0, bool) or mu0 is None:
        raise TypeError(f"mu0 must be a real number, a 1-d vector or {EMPIRICAL!r}, got {mu0!r}")
    vec = as_float_tensor(mu0, "mu0", ndim=1, dtype=torch.float64)
    return tuple(float(v) for v in vec)


@dataclass(frozen=True)
class PaperSchedule:
    """Optimisation epochs per Monte Carlo EM round (paper, Appendix B).

    Attributes:
        e_dpm: Gibbs sweeps of the DP mixture per round (Algorithm 1, ``GIBBS_STEPS``).
        e_flow: passes of the flow's minibatch optimiser over the data per round
            (``OPT_STEPS = e_flow * N / B``). Both readings are inferred from the paper's words
            "optimization epochs of DPM and Flow in every round".
    """

    e_dpm: int
    e_flow: int

    def __post_init__(self):
        check_int(self.e_dpm, "e_dpm", minimum=1)
        check_int(self.e_flow, "e_flow", minimum=1)


@dataclass(frozen=True)
class DPMixturePrior:
    """Frozen hyperparameters ``Phi = (mu0, kappa0, alpha0, beta0, alpha)`` of the DP mixture.

    Args:
        mu0: prior mean of the cluster means: a real number (the same in every dimension), a
            1-d vector of length ``d``, or ``"empirical"`` for the mean of the data the prior
            is resolved against (the paper never states ``mu0``). Default 0.
        kappa0: ``> 0``, pseudo-count of the mean (prior precision of ``mu_k`` is
            ``kappa0 * lambda_k``).
        alpha0: ``> 0``, Gamma shape of the cluster precision ``lambda_k``.
        beta0: ``> 0``, Gamma rate of ``lambda_k`` (``E[lambda_k] = alpha0 / beta0``).
        alpha: ``> 0``, concentration of the Dirichlet process (of the CRP).

    Raises:
        TypeError: a hyperparameter that is not a real number (``mu0``: nor a vector or
            ``"empirical"``).
        ValueError: ``'kappa0 must be > 0, got ...'`` and so on for the four scalars; a
            non-finite ``mu0``; an unknown string for ``mu0``.

    Example:
        >>> DPMixturePrior(kappa0=2.0).normal_gamma(dim=3).loc.tolist()
        [0.0, 0.0, 0.0]
    """

    mu0: float | tuple | str = 0.0
    kappa0: float = 1.0
    alpha0: float = 1.0
    beta0: float = 1.0
    alpha: float = 1.0

    def __post_init__(self):
        object.__setattr__(self, "mu0", _check_mu0(self.mu0))
        for name in ("kappa0", "alpha0", "beta0", "alpha"):
            object.__setattr__(self, name, check_positive(getattr(self, name), name))

    # ------------------------------------------------------------- presets
    @classmethod
    def paper_preset(cls, dataset: str, mu0=0.0) -> DPMixturePrior:
        """The tuned hyperparameters of Appendix B for ``dataset``.

        Args:
            dataset: one of ``"mnist"``, ``"har"``, ``"reuters10k"``, ``"stl"``.
            mu0: as in the constructor (the paper does not give it).

        Example:
            >>> DPMixturePrior.paper_preset("har").alpha
            0.0001
        """
        check_in(dataset, "dataset", tuple(PAPER_PRESETS))
        return replace(PAPER_PRESETS[dataset], mu0=mu0)

    def with_mu0(self, mu0) -> DPMixturePrior:
        """A copy with another ``mu0``."""
        return replace(self, mu0=mu0)

    def in_units(self, loc, scale: float) -> DPMixturePrior:
        """This prior, written for data of centre 0 and spread 1, moved to data of centre
        ``loc`` and spread ``scale``: ``mu0 -> loc + scale * mu0`` and
        ``beta0 -> scale^2 beta0`` (``mu_k`` and ``lam_k^-1/2`` move with the data;
        ``kappa0``, ``alpha0`` and ``alpha`` are unitless). ``mu0="empirical"`` stays.

        Args:
            loc: ``(d,)`` centre (a tensor or sequence of floats).
            scale: ``> 0`` spread.

        Example:
            >>> p = DPMixturePrior(mu0=1.0, beta0=2.0).in_units([10.0, 20.0], 3.0)
            >>> p.mu0, p.beta0
            ((13.0, 23.0), 18.0)
        """
        scale = check_positive(scale, "scale")
        centre = as_float_tensor(loc, "loc", ndim=1, dtype=torch.float64, device="cpu")
        mu0 = self.mu0
        if mu0 != EMPIRICAL:
            mu0 = tuple(float(v) for v in centre + scale * self.loc(centre.shape[0]))
        return replace(self, mu0=mu0, beta0=self.beta0 * scale ** 2)

    # ------------------------------------------------------------ resolution
    def loc(self, dim: int, data=None, dtype=torch.float64, device=None) -> torch.Tensor:
        """``mu0`` as a ``(dim,)`` tensor.

        Args:
            dim: the dimension ``d`` of the cluster means.
            data: ``(N, dim)`` points; needed (and only used) when ``mu0 == "empirical"``,
                whose value is their mean. Pass the transformed points ``z = f(y)``.
            dtype: dtype of the result when ``data`` is not given.
            device: device of the result when ``data`` is not given.

        Raises:
            ValueError: ``'mu0 has length L but dim is d'``; ``'data is needed to resolve
                mu0="empirical"'``; data of the wrong shape.
        """
        dim = check_int(dim, "dim", minimum=1)
        if self.mu0 == EMPIRICAL:
            if data is None:
                raise ValueError('data is needed to resolve mu0="empirical" (the mean of the data)')
            x = as_float_tensor(data, "data", ndim=2)
            if x.shape[1] != dim:
                raise ValueError(f"data must have {dim} columns (dim), got shape {tuple(x.shape)}")
            return x.detach().mean(0)
        if data is not None:
            ref = as_float_tensor(data, "data", ndim=2)
            dtype, device = ref.dtype, ref.device
        if isinstance(self.mu0, tuple):
            if len(self.mu0) != dim:
                raise ValueError(f"mu0 has length {len(self.mu0)} but dim is {dim}")
            return torch.tensor(self.mu0, dtype=dtype, device=device)
        return torch.full((dim,), self.mu0, dtype=dtype, device=device)

    def normal_gamma(self, dim: int, data=None, dtype=torch.float64, device=None) -> NormalGamma:
        """The base measure ``G0`` as :class:`~pyromodels.conjugate.NormalGamma`
        ``(loc=mu0, kappa=kappa0, a=alpha0, b=beta0)``; arguments as in :meth:`loc`."""
        loc = self.loc(dim, data, dtype=dtype, device=device)
        opts = {"dtype": loc.dtype, "device": loc.device}
        return NormalGamma(
            loc,
            torch.tensor(self.kappa0, **opts),
            torch.tensor(self.alpha0, **opts),
            torch.tensor(self.beta0, **opts),
        )


def default_prior(data, name: str = "data") -> DPMixturePrior:
    """The prior a model built with ``prior=None`` fits ``data`` ``(N, d)`` with:
    ``DPMixturePrior()`` in the data's units (module docstring), so the clustering does not
    depend on the data's unit or origin.

    Raises:
        ValueError: all points identical (no spread to write the prior in; give a prior).

    Example:
        >>> import torch
        >>> p = default_prior(torch.tensor([[1e6, 0.0], [1e6 + 2.0, 2.0]], dtype=torch.float64))
        >>> p.mu0, round(p.beta0, 9)
        ((1000001.0, 1.0), 2.0)
    """
    x = as_float_tensor(data, name, ndim=2)
    return DPMixturePrior().in_units(*data_units(x, name))


def resolve_prior(prior: DPMixturePrior | None, data, name: str = "data") -> DPMixturePrior:
    """``prior`` when the user gave one, else :func:`default_prior` of ``data``."""
    return default_prior(data, name) if prior is None else prior


#: Appendix B, the hyperparameters shared by DPM and DDPM (``mu0 = 0``: not given in the paper)
PAPER_PRESETS = {
    "mnist": DPMixturePrior(kappa0=0.3, alpha0=10_000.0, beta0=250_000.0, alpha=1e-5),
    "har": DPMixturePrior(kappa0=1.0, alpha0=200_000.0, beta0=10_000.0, alpha=1e-4),
    "reuters10k": DPMixturePrior(kappa0=1.0, alpha0=5_000.0, beta0=10_000.0, alpha=1e-5),
    "stl": DPMixturePrior(kappa0=1.0, alpha0=100_000.0, beta0=10_000.0, alpha=1e-5),
}

#: Appendix B, Gibbs sweeps and flow epochs per Monte Carlo EM round
PAPER_SCHEDULES = {
    "mnist": PaperSchedule(e_dpm=2, e_flow=1),
    "har": PaperSchedule(e_dpm=12, e_flow=3),
    "reuters10k": PaperSchedule(e_dpm=12, e_flow=3),
    "stl": PaperSchedule(e_dpm=10, e_flow=3),
}
