"""Beta prior over a success probability, conjugate to Bernoulli outcomes.

Model:

.. math::

    p \\sim \\mathrm{Beta}(\\alpha, \\beta), \\qquad x_i \\mid p \\sim \\mathrm{Bernoulli}(p),

with ``s`` successes and ``f`` failures. The posterior is ``Beta(alpha + s, beta + f)`` and the
probability of a particular sequence is ``B(alpha + s, beta + f) / B(alpha, beta)``. This is the
two-category case of :class:`~pyromodels.conjugate.DirichletCategorical` (category 0 = success
with weight ``alpha``, category 1 = failure with weight ``beta``), whose formulas it reuses.

As an exponential family in ``p``: ``T(p) = (log p, log(1 - p))``, ``eta = (alpha - 1,
beta - 1)``, ``A = log B(alpha, beta)``, base measure 1.

Example:
    >>> import torch
    >>> prior = BetaBernoulli(torch.tensor(1.0, dtype=torch.float64), 1.0)
    >>> prior.posterior(successes=3, failures=1).mean()
    tensor(0.6667, dtype=torch.float64)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ._base import (
    ConjugateFamily,
    as_data_tensor,
    as_labels,
    build_unchecked,
    check_nonnegative_tensor,
    check_positive_tensor,
    coerce_params,
)
from .dirichlet_categorical import DirichletCategorical
from .random import sample_beta

__all__ = ["BetaBernoulli"]


@dataclass(frozen=True, eq=False)
class BetaBernoulli(ConjugateFamily):
    """Beta(alpha, beta) prior over the success probability of Bernoulli outcomes.

    Args:
        alpha: prior pseudo-count of successes (> 0), any batch shape.
        beta: prior pseudo-count of failures (> 0), broadcastable with ``alpha``.

    Raises:
        ValueError: ``'alpha must be > 0'`` or ``'beta must be > 0'``.

    Example:
        >>> BetaBernoulli(torch.ones(3, dtype=torch.float64), 2.0).batch_shape
        torch.Size([3])
    """

    alpha: torch.Tensor
    beta: torch.Tensor

    event_dims = (1,)
    event_size = 2
    _anchor = "alpha"

    def __post_init__(self):
        self._store_broadcast(coerce_params(alpha=self.alpha, beta=self.beta))
        self.validate()

    def validate(self) -> BetaBernoulli:
        """Raise ``ValueError`` naming the offending hyperparameter; return ``self``."""
        check_positive_tensor(self.alpha, "alpha")
        check_positive_tensor(self.beta, "beta")
        return self

    def _dirichlet(self) -> DirichletCategorical:
        return build_unchecked(
            DirichletCategorical, concentration=torch.stack([self.alpha, self.beta], dim=-1)
        )

    def _pair(self, successes, failures) -> torch.Tensor:
        s = as_data_tensor(successes, "successes", self.alpha)
        f = as_data_tensor(failures, "failures", self.alpha)
        check_nonnegative_tensor(s, "successes")
        check_nonnegative_tensor(f, "failures")
        return torch.stack(torch.broadcast_tensors(s, f), dim=-1)

    def posterior(self, successes, failures) -> BetaBernoulli:
        """``Beta(alpha + successes, beta + failures)`` (non-negative, possibly fractional)."""
        s, f = self._pair(successes, failures).unbind(-1)
        alpha, beta = torch.broadcast_tensors(self.alpha + s, self.beta + f)
        return build_unchecked(BetaBernoulli, alpha=alpha, beta=beta)

    def log_marginal_likelihood(self, successes, failures, ordered: bool = True) -> torch.Tensor:
        """Log marginal probability of ``successes`` and ``failures`` with ``p`` integrated out.

        ``ordered=True`` gives one particular sequence, ``log B(alpha + s, beta + f) -
        log B(alpha, beta)``; ``ordered=False`` adds ``log binom(s + f, s)`` (beta-binomial pmf).
        """
        return self._dirichlet().log_marginal_likelihood(
            self._pair(successes, failures), ordered=ordered
        )

    def log_marginal_sequence(self, outcomes) -> torch.Tensor:
        """Log probability of the 0/1 sequence(s) ``(..., n)`` with ``p`` integrated out."""
        x = as_labels(outcomes, "outcomes", 2, self.device, require_axis=True)
        s = x.sum(-1).to(self.dtype)
        return self.log_marginal_likelihood(s, x.shape[-1] - s)

    def predictive_log_prob(self, outcomes) -> torch.Tensor:
        """Log predictive probability of the next outcome(s) in ``{0, 1}``:
        ``log(alpha / (alpha + beta))`` for 1, ``log(beta / (alpha + beta))`` for 0."""
        x = as_labels(outcomes, "outcomes", 2, self.device)
        weight = torch.where(x == 1, self.alpha, self.beta)
        return torch.log(weight) - torch.log(self.alpha + self.beta)

    def mean(self) -> torch.Tensor:
        """``E[p] = alpha / (alpha + beta)``."""
        return self.alpha / (self.alpha + self.beta)

    def mode(self) -> torch.Tensor:
        """``(alpha - 1) / (alpha + beta - 2)``; defined only when both exceed 1."""
        if not bool((self.alpha > 1).all() and (self.beta > 1).all()):
            raise ValueError("mode requires alpha > 1 and beta > 1")
        return (self.alpha - 1) / (self.alpha + self.beta - 2)

    def sample(
        self, generator: torch.Generator | None = None, sample_shape: tuple = ()
    ) -> torch.Tensor:
        """Draws of ``p``, shape ``sample_shape + batch_shape``."""
        shape = torch.Size(sample_shape) + self.batch_shape
        return sample_beta(self.alpha.expand(shape), self.beta.expand(shape), generator)

    def observation_stats(self, successes, failures) -> torch.Tensor:
        """The statistics of Bernoulli outcomes in the coordinates of the natural parameters,
        ``(successes, failures)`` stacked on a last axis of 2: ``posterior(successes,
        failures).natural_params() == natural_params() + observation_stats(successes,
        failures)``."""
        return self._pair(successes, failures)

    def natural_params(self) -> torch.Tensor:
        """``eta = (alpha - 1, beta - 1)``, shape ``(..., 2)``."""
        return self._dirichlet().natural_params()

    @classmethod
    def from_natural(cls, eta) -> BetaBernoulli:
        """The prior with natural parameters ``eta`` of shape ``(..., 2)``."""
        return cls(eta[..., 0] + 1, eta[..., 1] + 1)

    def sufficient_stats(self, p) -> torch.Tensor:
        """``T(p) = (log p, log(1 - p))``, shape ``(..., 2)``."""
        q = self._probability(p)
        return torch.stack([torch.log(q), torch.log1p(-q)], dim=-1)

    def expected_stats(self) -> torch.Tensor:
        """``(E[log p], E[log(1 - p)]) = (psi(alpha), psi(beta)) - psi(alpha + beta)``."""
        return self._dirichlet().expected_stats()

    def log_normalizer(self) -> torch.Tensor:
        """``A = log B(alpha, beta)``."""
        return self._dirichlet().log_normalizer()

    def _probability(self, p) -> torch.Tensor:
        q = as_data_tensor(p, "p", self.alpha)
        if q.numel() and not bool(((q >= 0) & (q <= 1)).all()):
            raise ValueError("p must lie in [0, 1]")
        return q

    def log_prob(self, p) -> torch.Tensor:
        """``log Beta(p | alpha, beta)``."""
        q = self._probability(p)
        return self._dirichlet().log_prob(torch.stack([q, 1 - q], dim=-1))
