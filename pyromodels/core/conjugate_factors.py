"""What the natural-gradient engine needs of a conjugate global factor, and the pieces of a step.

A *global factor* is an exponential family over global parameters ``theta``,

.. math::

    q(\\theta \\mid \\eta) = h(\\theta) \\exp\\{\\langle \\eta, T(\\theta) \\rangle - A(\\eta)\\},

whose natural parameters ``eta`` and expected statistics ``E[T] = grad A(eta)`` (its *mean
parameters*) are a tensor or a named tuple of tensors with the same fields. The engine
(:func:`~pyromodels.core.run_natgrad`) only adds, scales and mixes them, so any class with the
methods of :class:`ConjugateFactor` works; the families of :mod:`pyromodels.conjugate`
(Dirichlet, Beta, Normal-Gamma, Normal-Wishart, the Gaussian in natural parameters) do as
they are. The core does not import :mod:`pyromodels.conjugate`: it knows the protocol, not
the families.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import torch

from ..checks import check_positive

__all__ = [
    "ConjugateFactor",
    "LocalStep",
    "Minibatch",
    "RobbinsMonro",
    "fields_of",
    "like",
    "natural_gradient",
    "mean_parameter_view",
]


@runtime_checkable
class ConjugateFactor(Protocol):
    """A conjugate exponential-family factor of the variational posterior (or its prior).

    ``natural_params()`` and ``expected_stats()`` return the same structure: a tensor, or a
    named tuple of tensors whose fields pair up (``<eta, T>`` is the sum over fields of the
    elementwise products summed over the event axes).
    """

    def natural_params(self) -> Any:
        """The natural parameters ``eta``."""

    def expected_stats(self) -> Any:
        """The mean parameters ``E[T(theta)] = grad A(eta)``, same structure as ``eta``."""

    def log_normalizer(self) -> torch.Tensor:
        """``A(eta)``, shape ``batch_shape``."""

    @classmethod
    def from_natural(cls, eta) -> ConjugateFactor:
        """The factor with natural parameters ``eta`` (raises ``ValueError`` outside the
        natural parameter space)."""

    def kl(self, other) -> torch.Tensor:
        """``KL(self || other)`` for a factor of the same family, shape ``batch_shape``."""


def fields_of(params) -> tuple[torch.Tensor, ...]:
    """The tensors of natural parameters or statistics: one tensor, or a tuple's fields."""
    return (params,) if isinstance(params, torch.Tensor) else tuple(params)


def like(template, tensors) -> Any:
    """``tensors`` in the structure of ``template`` (a tensor, or a named or plain tuple)."""
    tensors = tuple(tensors)
    if isinstance(template, torch.Tensor):
        (only,) = tensors
        return only
    if hasattr(type(template), "_fields"):  # a named tuple
        return type(template)(*tensors)
    return type(template)(tensors)


def natural_gradient(prior: ConjugateFactor, q: ConjugateFactor, stats, scale: float = 1.0):
    """The natural gradient of the ELBO for a conjugate global factor,
    ``eta_0 + scale * stats - eta``.

    Args:
        prior: the prior factor (natural parameters ``eta_0``).
        q: the current variational factor (``eta``).
        stats: the local expected statistics in the coordinates of the natural parameters
            (for example ``NormalWishart.observation_stats(...)``), same structure.
        scale: the minibatch's weight, ``N / |B|`` for a sum over ``|B|`` of ``N`` items.

    Returns:
        The natural gradient, in the structure of ``q.natural_params()``.
    """
    eta = q.natural_params()
    parts = zip(fields_of(prior.natural_params()), fields_of(stats), fields_of(eta), strict=True)
    return like(eta, (e0 + scale * t - e for e0, t, e in parts))


@dataclass
class LocalStep:
    """What a local step returns for one minibatch.

    Attributes:
        stats: global name -> the batch's expected sufficient statistics in the coordinates
            of that global's natural parameters (same structure), summed over the batch and
            *not* rescaled. A global left out is not updated at this step.
        scales: global name -> the weight of its statistics (default: the batch's
            ``Minibatch.scale``, ``N / |B|``). Relational statistics drawn as ``|S|`` of
            ``N_a`` annotations take ``N_a / |S|``.
        objective: optional scalar tensor, an unbiased estimate of the local part of the
            ELBO for the whole data set (everything but ``-KL(q(theta) || p(theta))``, which
            the engine adds), differentiable in the network parameters (and, with
            ``correction=True``, in the globals' mean parameters).
        step_sizes: global name -> a step size in ``(0, 1]`` that replaces the schedule's
            ``rho_t`` for that global at this step (default: the schedule's). With ``1`` and
            full-data statistics the update is the global's coordinate-ascent (CAVI) update,
            which a local step can use to restart a global from the data.
    """

    stats: Mapping[str, Any]
    scales: Mapping[str, float] = field(default_factory=dict)
    objective: torch.Tensor | None = None
    step_sizes: Mapping[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Minibatch:
    """One minibatch as the local step receives it.

    Attributes:
        data: the rows ``indices`` of the data (same structure: a tensor, or a dict, tuple or
            list of tensors sharing their first axis).
        indices: ``(B,)`` long tensor of the rows, on the data's device.
        scale: ``N / B``, the weight that makes a sum over the batch unbiased for the data set.
        epoch: the epoch, from 0.
        step: the global step, from 1.
    """

    data: Any
    indices: torch.Tensor
    scale: float
    epoch: int
    step: int


@dataclass(frozen=True)
class RobbinsMonro:
    """The step sizes ``rho_t = (t + tau)^(-kappa)`` for steps ``t = 1, 2, ...`` (Hoffman et
    al. 2013): ``sum rho_t = inf`` and ``sum rho_t^2 < inf`` for ``kappa`` in ``(0.5, 1]``, so
    stochastic natural-gradient steps converge to a fixed point of the full-data updates.

    Args:
        tau: delay, ``>= 0`` (``0``: the first step is ``rho_1 = 1``).
        kappa: forgetting rate in ``(0.5, 1]``.

    Example:
        >>> RobbinsMonro(tau=1.0, kappa=1.0)(3)
        0.25
    """

    tau: float = 1.0
    kappa: float = 0.7

    def __post_init__(self):
        check_positive(self.tau, "tau", strict=False)
        kappa = check_positive(self.kappa, "kappa")
        if not 0.5 < kappa <= 1:
            raise ValueError(f"kappa must lie in (0.5, 1], got {kappa}")

    def __call__(self, t: int) -> float:
        return float((t + self.tau) ** -self.kappa)


class _MeanParameterView:
    """A factor whose ``expected_stats()`` are given leaf tensors (for autograd with respect
    to the mean parameters); every other attribute is the factor's own."""

    def __init__(self, factor, mean):
        self._factor = factor
        self._mean = mean

    def expected_stats(self):
        return self._mean

    def __getattr__(self, name):
        return getattr(self._factor, name)


def mean_parameter_view(factor: ConjugateFactor) -> tuple[Any, tuple[torch.Tensor, ...]]:
    """``(view, leaves)``: a stand-in for ``factor`` whose ``expected_stats()`` returns fresh
    leaf tensors ``leaves`` that require gradients, so that autograd of anything computed from
    the view's expected statistics gives the gradient with respect to the mean parameters."""
    mean = factor.expected_stats()
    leaves = tuple(t.detach().clone().requires_grad_(True) for t in fields_of(mean))
    return _MeanParameterView(factor, like(mean, leaves)), leaves


def step_size_at(step_size: float | Callable[[int], float], t: int) -> float:
    """``rho_t`` of a constant or a schedule, checked to lie in ``(0, 1]``."""
    rho = step_size(t) if callable(step_size) else step_size
    rho = float(rho)
    if not (0 < rho <= 1) or math.isnan(rho):
        raise ValueError(f"step_size must give values in (0, 1], got {rho} at step {t}")
    return rho
