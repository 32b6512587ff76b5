"""Dirichlet prior over the probabilities of K categories, conjugate to categorical counts.

Model:

.. math::

    p \\sim \\mathrm{Dir}(\\alpha), \\qquad z_i \\mid p \\sim \\mathrm{Cat}(p), \\quad i = 1..n,

with counts ``c_k = #{i : z_i = k}``. The posterior is ``Dir(alpha + c)``; the probability of a
particular sequence is ``B(alpha + c) / B(alpha)`` with the multivariate Beta function
``B(alpha) = prod_k Gamma(alpha_k) / Gamma(sum_k alpha_k)``.

As an exponential family in ``p``: sufficient statistics ``T(p) = log p``, natural parameters
``eta = alpha - 1``, log normaliser ``A = log B(alpha)``, base measure 1.

Example:
    >>> import torch
    >>> prior = DirichletCategorical(torch.ones(3, dtype=torch.float64))
    >>> post = prior.posterior(torch.tensor([2.0, 0.0, 1.0]))
    >>> post.concentration
    tensor([3., 1., 2.], dtype=torch.float64)
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from ..checks import broadcast_shapes, check_stochastic
from ._base import (
    ConjugateFamily,
    as_data_tensor,
    as_labels,
    build_unchecked,
    check_last_dim,
    check_nonnegative_tensor,
    check_positive_tensor,
    coerce_params,
)
from .random import sample_dirichlet

__all__ = ["DirichletCategorical", "log_multivariate_beta"]


def log_multivariate_beta(concentration: torch.Tensor) -> torch.Tensor:
    """``log B(alpha) = sum_k lgamma(alpha_k) - lgamma(sum_k alpha_k)`` over the last axis."""
    return torch.lgamma(concentration).sum(-1) - torch.lgamma(concentration.sum(-1))


@dataclass(frozen=True, eq=False)
class DirichletCategorical(ConjugateFamily):
    """Dirichlet(concentration) prior over categorical probabilities.

    Args:
        concentration: ``(..., K)`` tensor of ``alpha_k > 0`` with ``K >= 2``; leading axes are
            a batch of independent priors.

    Raises:
        ValueError: ``'concentration must be > 0'`` or fewer than 2 categories.

    Example:
        >>> prior = DirichletCategorical(torch.full((2, 4), 0.5, dtype=torch.float64))
        >>> prior.batch_shape, prior.num_categories
        (torch.Size([2]), 4)
    """

    concentration: torch.Tensor

    event_dims = (1,)
    _anchor = "concentration"
    _anchor_event_ndim = 1

    def __post_init__(self):
        self._store_broadcast(coerce_params(concentration=self.concentration), concentration=1)
        self.validate()

    def validate(self) -> DirichletCategorical:
        """Raise ``ValueError`` naming the offending hyperparameter; return ``self``."""
        alpha = self.concentration
        if alpha.dim() < 1 or alpha.shape[-1] < 2:
            raise ValueError(
                "concentration must have at least 2 categories on its last axis, "
                f"got shape {tuple(alpha.shape)}"
            )
        check_positive_tensor(alpha, "concentration")
        return self

    @property
    def num_categories(self) -> int:
        """Number of categories ``K``."""
        return self.event_size

    def _counts(self, counts, name: str = "counts") -> torch.Tensor:
        c = as_data_tensor(counts, name, self.concentration, min_ndim=1)
        check_last_dim(c, name, self.num_categories, "one entry per category")
        return check_nonnegative_tensor(c, name)

    def posterior(self, counts) -> DirichletCategorical:
        """``Dir(alpha + counts)``.

        Args:
            counts: ``(..., K)`` non-negative (possibly fractional) counts, broadcastable with
                the batch shape.
        """
        return build_unchecked(
            DirichletCategorical, concentration=self.concentration + self._counts(counts)
        )

    def log_marginal_likelihood(self, counts, ordered: bool = True) -> torch.Tensor:
        """Log marginal probability of counts with ``p`` integrated out.

        With ``ordered=True``: ``log B(alpha + c) - log B(alpha)``, the probability of one
        particular sequence with these counts. With ``ordered=False`` the multinomial
        coefficient ``log n! - sum_k log c_k!`` is added (Dirichlet-multinomial pmf).

        Args:
            counts: ``(..., K)`` non-negative counts.
            ordered: whether the order of the observations is part of the event.

        Returns:
            Tensor of the broadcast batch shape.
        """
        c = self._counts(counts)
        alpha = self.concentration
        out = log_multivariate_beta(alpha + c) - log_multivariate_beta(alpha)
        if not ordered:
            out = out + torch.lgamma(c.sum(-1) + 1) - torch.lgamma(c + 1).sum(-1)
        return out

    def category_counts(self, labels) -> torch.Tensor:
        """``(..., K)`` counts of the labels ``(..., n)`` in ``[0, K)`` over their last axis."""
        z = as_labels(labels, "labels", self.num_categories, self.device, require_axis=True)
        counts = torch.zeros(
            z.shape[:-1] + (self.num_categories,), dtype=self.dtype, device=z.device
        )
        return counts.scatter_add_(-1, z, torch.ones(z.shape, dtype=self.dtype, device=z.device))

    def log_marginal_sequence(self, labels) -> torch.Tensor:
        """Log probability of the label sequence(s) ``(..., n)`` with ``p`` integrated out."""
        return self.log_marginal_likelihood(self.category_counts(labels))

    def predictive_log_probs(self) -> torch.Tensor:
        """``(..., K)`` log probabilities of the next category, ``log(alpha_k / sum alpha)``."""
        alpha = self.concentration
        return torch.log(alpha) - torch.log(alpha.sum(-1, keepdim=True))

    def predictive_log_prob(self, labels) -> torch.Tensor:
        """Log predictive probability of ``labels`` (any shape broadcastable with the batch)."""
        z = as_labels(labels, "labels", self.num_categories, self.device)
        log_p = self.predictive_log_probs()
        shape = broadcast_shapes(log_p.shape[:-1], z.shape)
        log_p = log_p.expand(shape + (self.num_categories,))
        return torch.gather(log_p, -1, z.expand(shape).unsqueeze(-1)).squeeze(-1)

    def mean(self) -> torch.Tensor:
        """``E[p] = alpha / sum(alpha)``, shape ``(..., K)``."""
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    def mode(self) -> torch.Tensor:
        """``(alpha - 1) / (sum(alpha) - K)``; defined only when every ``alpha_k > 1``."""
        alpha = self.concentration
        if not bool((alpha > 1).all()):
            raise ValueError("mode requires every concentration > 1")
        return (alpha - 1) / (alpha.sum(-1, keepdim=True) - self.num_categories)

    def sample(
        self, generator: torch.Generator | None = None, sample_shape: tuple = ()
    ) -> torch.Tensor:
        """Draws of ``p``, shape ``sample_shape + batch_shape + (K,)``."""
        alpha = self.concentration
        return sample_dirichlet(alpha.expand(torch.Size(sample_shape) + alpha.shape), generator)

    def observation_stats(self, counts) -> torch.Tensor:
        """The statistics of categorical outcomes in the coordinates of the natural parameters:
        the ``(..., K)`` (soft) counts themselves, so that ``posterior(counts)
        .natural_params() == natural_params() + observation_stats(counts)``."""
        return self._counts(counts)

    def natural_params(self) -> torch.Tensor:
        """``eta = alpha - 1``, shape ``(..., K)``."""
        return self.concentration - 1

    @classmethod
    def from_natural(cls, eta) -> DirichletCategorical:
        """The prior with natural parameters ``eta`` (``alpha = eta + 1``)."""
        return cls(eta + 1)

    def sufficient_stats(self, probs) -> torch.Tensor:
        """``T(p) = log p`` for points ``p`` of the simplex, shape ``(..., K)``."""
        return torch.log(self._simplex(probs))

    def expected_stats(self) -> torch.Tensor:
        """``E[log p_k] = psi(alpha_k) - psi(sum alpha)``, shape ``(..., K)``."""
        alpha = self.concentration
        return torch.digamma(alpha) - torch.digamma(alpha.sum(-1, keepdim=True))

    def log_normalizer(self) -> torch.Tensor:
        """``A = log B(alpha)``, shape ``batch_shape``."""
        return log_multivariate_beta(self.concentration)

    def _simplex(self, probs) -> torch.Tensor:
        """``probs`` as points of the simplex in the concentration's dtype and device; the sums
        are checked in ``probs``' own dtype, before the cast (an empty batch passes)."""
        p = as_data_tensor(probs, "probs", self.concentration, min_ndim=1)
        check_last_dim(p, "probs", self.num_categories, "one entry per category")
        if p.numel():
            p = check_stochastic(probs, "probs", dtype=p.dtype, device=p.device)
        return p

    def log_prob(self, probs) -> torch.Tensor:
        """``log Dir(p | alpha) = sum_k (alpha_k - 1) log p_k - log B(alpha)``."""
        p = self._simplex(probs)
        return torch.xlogy(self.concentration - 1, p).sum(-1) - self.log_normalizer()
