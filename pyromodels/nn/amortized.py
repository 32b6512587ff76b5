r"""Amortised encoders and decoders for deep latent-variable models with a discrete cluster.

Every network here is an :func:`~pyromodels.nn.mlp.mlp` with seeded initial weights; the
hidden widths are configurable (two layers of 40 units suit small data, two of 500 suit
MNIST-sized images). With ``o`` an observation, ``z`` one of ``K`` clusters and ``x`` a
continuous latent of dimension ``d``:

* :class:`CategoricalEncoder`: :math:`q(z \mid o)`, an MLP to ``K`` logits.
* :class:`GaussianEncoder`: :math:`q(x \mid o)`, an MLP to a mean and a log scale (a diagonal
  Gaussian), the encoder of a VAE.
* :class:`ConditionalGaussianEncoder`: :math:`q(x \mid z, o)`, an MLP on the concatenation of
  ``o`` and the one-hot ``z`` to a mean and a log scale (a diagonal Gaussian).
* :class:`ObservationDecoder`: :math:`p(o \mid x)`, an MLP to Bernoulli logits (binary
  ``o``) or to a Gaussian mean and log variance (real ``o``); :func:`observation_distribution`
  turns its outputs into the Pyro distribution.
* :class:`GaussianPotentialEncoder`: a recognition network :math:`r(o)` giving a Gaussian
  potential :math:`\psi(x; o) = h^\top x - \tfrac12 x^\top \mathrm{diag}(\lambda) x`, with
  :math:`h \in \mathbb{R}^d` and a diagonal precision :math:`\lambda = \mathrm{softplus}(\cdot)
  > 0` (natural parameters :math:`h` and :math:`J = -\tfrac12\mathrm{diag}(\lambda)`), as the
  conjugate surrogate of structured VAEs uses.

The inputs may carry any leading batch dimensions; :class:`ConditionalGaussianEncoder`
broadcasts ``o`` against the one-hot ``z``, so an enumerated ``z`` of shape ``(K, 1)`` with a
batch of ``o`` of shape ``(B, D)`` gives outputs of shape ``(K, B, d)``.
"""

from __future__ import annotations

from collections.abc import Sequence

import pyro.distributions as dist
import torch
import torch.nn.functional as F
from torch import nn

from ..checks import check_in
from .mlp import mlp

__all__ = [
    "CategoricalEncoder",
    "ConditionalGaussianEncoder",
    "GaussianEncoder",
    "ObservationDecoder",
    "GaussianPotentialEncoder",
    "observation_distribution",
    "resolve_likelihood",
    "LIKELIHOODS",
]

#: the observation likelihoods :class:`ObservationDecoder` offers
LIKELIHOODS = ("bernoulli", "normal")


class CategoricalEncoder(nn.Module):
    """:math:`q(z \\mid o)`: an MLP from ``in_features`` to ``num_classes`` logits.

    Args:
        in_features: width ``D`` of an observation.
        num_classes: number of clusters ``K``.
        hidden: hidden widths.
        activation, generator, dtype, device: as for :func:`~pyromodels.nn.mlp.mlp`.

    Example:
        >>> enc = CategoricalEncoder(5, 3, (8,), generator=torch.Generator().manual_seed(0))
        >>> enc(torch.zeros(4, 5)).shape
        torch.Size([4, 3])
    """

    def __init__(self, in_features: int, num_classes: int, hidden: Sequence[int] = (40, 40),
                 activation: str = "relu", generator: torch.Generator | None = None,
                 dtype: torch.dtype | None = None, device=None):
        super().__init__()
        self.net = mlp(in_features, hidden, num_classes, activation, generator, dtype=dtype,
                       device=device)

    def forward(self, o: torch.Tensor) -> torch.Tensor:
        """``(..., K)`` logits of :math:`q(z \\mid o)` for ``o`` of shape ``(..., D)``."""
        return self.net(o)


class _TwoHeads(nn.Module):
    """An MLP from ``in_features`` to two ``latent_dim``-wide heads (``self.net``; the
    subclasses split and transform its output)."""

    def __init__(self, in_features: int, latent_dim: int, hidden: Sequence[int] = (40, 40),
                 activation: str = "relu", generator: torch.Generator | None = None,
                 dtype: torch.dtype | None = None, device=None):
        super().__init__()
        self.latent_dim = latent_dim
        self.net = mlp(in_features, hidden, 2 * latent_dim, activation, generator, dtype=dtype,
                       device=device)


class GaussianEncoder(_TwoHeads):
    """:math:`q(x \\mid o) = N(\\mu(o), \\mathrm{diag}\\,\\sigma^2(o))`: an MLP from
    ``in_features`` to a mean and a log scale.

    Args:
        in_features: width ``D`` of an observation.
        latent_dim: dimension ``d`` of ``x``.
        hidden: hidden widths (empty: the mean and the log scale are affine in ``o``).
        activation, generator, dtype, device: as for :func:`~pyromodels.nn.mlp.mlp`.

    Attributes:
        net: the MLP ``(..., D) -> (..., 2d)``; its first ``d`` outputs are the mean, the last
            ``d`` the log scale.

    Example:
        >>> enc = GaussianEncoder(5, 2, (8,), generator=torch.Generator().manual_seed(0))
        >>> loc, log_scale = enc(torch.zeros(4, 5))
        >>> loc.shape, log_scale.shape
        (torch.Size([4, 2]), torch.Size([4, 2]))
    """

    def forward(self, o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log scale, each ``(..., d)``, for ``o`` of shape ``(..., D)``."""
        loc, log_scale = self.net(o).split(self.latent_dim, dim=-1)
        return loc, log_scale


class ConditionalGaussianEncoder(nn.Module):
    """:math:`q(x \\mid z, o) = N(\\mu(z, o), \\mathrm{diag}\\,\\sigma^2(z, o))` from
    ``concat(o, onehot(z))``.

    Args:
        in_features: width ``D`` of an observation.
        num_classes: number of clusters ``K`` (width of the one-hot code).
        latent_dim: dimension ``d`` of ``x``.
        hidden: hidden widths.
        activation, generator, dtype, device: as for :func:`~pyromodels.nn.mlp.mlp`.

    Example:
        >>> enc = ConditionalGaussianEncoder(5, 3, 2, (8,), generator=torch.Generator().manual_seed(0))
        >>> onehot = torch.eye(3).unsqueeze(1)          # every cluster, shape (3, 1, 3)
        >>> loc, log_scale = enc(torch.zeros(4, 5), onehot)
        >>> loc.shape, log_scale.shape
        (torch.Size([3, 4, 2]), torch.Size([3, 4, 2]))
    """

    def __init__(self, in_features: int, num_classes: int, latent_dim: int,
                 hidden: Sequence[int] = (40, 40), activation: str = "relu",
                 generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
                 device=None):
        super().__init__()
        self.latent_dim = latent_dim
        self.net = mlp(in_features + num_classes, hidden, 2 * latent_dim, activation, generator,
                       dtype=dtype, device=device)

    def forward(self, o: torch.Tensor, onehot: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean and log scale, each ``(..., d)``, for ``o`` ``(..., D)`` and ``onehot``
        ``(..., K)`` (their leading dimensions broadcast)."""
        batch = torch.broadcast_shapes(o.shape[:-1], onehot.shape[:-1])
        joint = torch.cat([o.expand(*batch, o.shape[-1]),
                           onehot.to(o.dtype).expand(*batch, onehot.shape[-1])], dim=-1)
        loc, log_scale = self.net(joint).split(self.latent_dim, dim=-1)
        return loc, log_scale


class ObservationDecoder(nn.Module):
    """:math:`p(o \\mid x)`: an MLP from ``x`` to Bernoulli logits or a Gaussian mean and log
    variance.

    Args:
        latent_dim: dimension ``d`` of ``x``.
        out_features: width ``D`` of an observation.
        likelihood: ``"bernoulli"`` (binary ``o``; outputs ``D`` logits) or ``"normal"`` (real
            ``o``; outputs a mean and a log variance, ``D`` each).
        hidden: hidden widths.
        activation, generator, dtype, device: as for :func:`~pyromodels.nn.mlp.mlp`.

    Example:
        >>> dec = ObservationDecoder(2, 5, "normal", (8,), generator=torch.Generator().manual_seed(0))
        >>> loc, log_var = dec(torch.zeros(4, 2))
        >>> observation_distribution("normal", (loc, log_var)).event_shape
        torch.Size([5])
    """

    def __init__(self, latent_dim: int, out_features: int, likelihood: str = "bernoulli",
                 hidden: Sequence[int] = (40, 40), activation: str = "relu",
                 generator: torch.Generator | None = None, dtype: torch.dtype | None = None,
                 device=None):
        super().__init__()
        self.likelihood = check_in(likelihood, "likelihood", LIKELIHOODS)
        self.out_features = out_features
        width = out_features if likelihood == "bernoulli" else 2 * out_features
        self.net = mlp(latent_dim, hidden, width, activation, generator, dtype=dtype,
                       device=device)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        """``(logits,)`` for Bernoulli, ``(mean, log_variance)`` for Normal, each ``(..., D)``."""
        out = self.net(x)
        if self.likelihood == "bernoulli":
            return (out,)
        return tuple(out.split(self.out_features, dim=-1))


def observation_distribution(likelihood: str, outputs: tuple[torch.Tensor, ...]):
    """The Pyro distribution of one observation (event shape ``(D,)``) from the outputs of an
    :class:`ObservationDecoder`: ``Bernoulli(logits)`` or ``Normal(mean, exp(log_var / 2))``."""
    check_in(likelihood, "likelihood", LIKELIHOODS)
    if likelihood == "bernoulli":
        return dist.Bernoulli(logits=outputs[0]).to_event(1)
    loc, log_var = outputs
    return dist.Normal(loc, torch.exp(0.5 * log_var)).to_event(1)


def resolve_likelihood(likelihood: str, o: torch.Tensor, name: str = "o") -> str:
    """The likelihood of :class:`ObservationDecoder` for observations ``o``.

    ``"auto"`` resolves to ``"bernoulli"`` when every value of ``o`` is 0 or 1, else
    ``"normal"``; ``"bernoulli"`` on other values is a ``ValueError`` (``name`` names the
    observations in it).

    Example:
        >>> resolve_likelihood("auto", torch.tensor([[0.0, 1.0]]))
        'bernoulli'
    """
    check_in(likelihood, "likelihood", ("auto",) + LIKELIHOODS)
    binary = bool(((o == 0) | (o == 1)).all())
    if likelihood == "auto":
        return "bernoulli" if binary else "normal"
    if likelihood == "bernoulli" and not binary:
        raise ValueError(f"likelihood='bernoulli' needs binary observations (0 or 1); {name} "
                         f"holds other values (use likelihood='normal')")
    return likelihood


class GaussianPotentialEncoder(_TwoHeads):
    """A recognition network :math:`r(o)`: the natural parameters of a diagonal Gaussian
    potential on ``x``.

    Args:
        in_features: width ``D`` of an observation.
        latent_dim: dimension ``d`` of ``x``.
        hidden: hidden widths.
        activation, generator, dtype, device: as for :func:`~pyromodels.nn.mlp.mlp`.

    Example:
        >>> rec = GaussianPotentialEncoder(5, 2, (8,), generator=torch.Generator().manual_seed(0))
        >>> h, precision = rec(torch.zeros(4, 5))
        >>> h.shape, bool((precision > 0).all())
        (torch.Size([4, 2]), True)
    """

    def forward(self, o: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``h`` and the diagonal precision ``softplus(.)``, each ``(..., d)``; the potential's
        second natural parameter is ``J = -precision / 2`` on the diagonal."""
        h, raw = self.net(o).split(self.latent_dim, dim=-1)
        return h, F.softplus(raw)
