"""A stacked autoencoder ``D - 500 - 500 - 2000 - 10`` as used by DEC and VaDE.

The encoder ``h_e`` has ReLU hidden layers and a linear bottleneck; the decoder ``h_d`` mirrors
it with ReLU hidden layers and a linear output::

    h_e: x (D) -> ReLU(W1 x + b1) (500) -> ReLU (500) -> ReLU (2000) -> W4 h + b4 (10)
    h_d: z (10) -> ReLU (2000) -> ReLU (500) -> ReLU (500) -> V1 h + c1 (D)

Encoder block ``i`` (``dims[i] -> dims[i+1]``) and decoder block ``L-1-i``
(``dims[i+1] -> dims[i]``) form the ``i``-th shallow autoencoder of greedy layer-wise
pretraining (:func:`pyromodels.nn.pretrain_autoencoder`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from torch import nn

from ..checks import check_int
from ..core.seeding import make_generator, resolve_seed
from .mlp import check_dims, linear

__all__ = ["StackedAutoencoder", "PretrainingRecord"]


@dataclass
class PretrainingRecord:
    """How an autoencoder was pretrained (or that its weights came from the cache).

    Attributes:
        settings: every training setting, as used in the cache key.
        layerwise_losses: per shallow autoencoder, the mean corrupted-input reconstruction
            MSE of each epoch.
        finetune_losses: the mean reconstruction MSE of each fine-tuning epoch.
        from_cache: whether the weights were loaded rather than trained in this call.
        cache_path: the cache file, or ``None`` without a cache.
        seconds: the training time (of the run that trained the weights).
    """

    settings: dict
    layerwise_losses: list[list[float]] = field(default_factory=list)
    finetune_losses: list[float] = field(default_factory=list)
    from_cache: bool = False
    cache_path: str | None = None
    seconds: float = 0.0


class StackedAutoencoder(nn.Module):
    """A symmetric autoencoder ``dims[0] -> ... -> dims[-1] -> ... -> dims[0]``.

    Args:
        dims: the widths ``(D, h_1, ..., h_L)``: input width first, bottleneck last (``L >= 1``).
        seed: an int, a ``torch.Generator`` or ``None``: the source of the initial weights
            (uniform ``(-1/sqrt(fan_in), 1/sqrt(fan_in))``, PyTorch's ``nn.Linear`` default).
        dtype, device: of the parameters.

    Attributes:
        encoder: ``h_e``, an ``nn.Sequential`` of ``L`` blocks ``(Linear, ReLU)``, the last
            ``(Linear,)``: ``(..., D) -> (..., h_L)``.
        decoder: ``h_d``, ``L`` blocks ``(Linear, ReLU)``, the last ``(Linear,)``:
            ``(..., h_L) -> (..., D)``.
        pretraining: a :class:`PretrainingRecord` once pretrained, else ``None``.

    Example:
        >>> ae = StackedAutoencoder((6, 8, 2), seed=0)
        >>> ae.encode(torch.zeros(5, 6)).shape
        torch.Size([5, 2])
        >>> ae(torch.zeros(5, 6)).shape
        torch.Size([5, 6])
    """

    def __init__(self, dims: Sequence[int], seed: int | torch.Generator | None = 0,
                 dtype: torch.dtype | None = None, device=None):
        super().__init__()
        dims = check_dims(dims, "dims", minimum_length=2)
        gen = seed if isinstance(seed, torch.Generator) else make_generator(resolve_seed(seed))
        depth = len(dims) - 1

        def block(a, b, relu):
            layer = linear(a, b, gen, dtype=dtype, device=device)
            return nn.Sequential(layer, nn.ReLU()) if relu else nn.Sequential(layer)

        self.dims = dims
        self.encoder = nn.Sequential(*[block(dims[i], dims[i + 1], i < depth - 1) for i in range(depth)])
        self.decoder = nn.Sequential(*[block(dims[i + 1], dims[i], i > 0)
                                       for i in reversed(range(depth))])
        self.pretraining: PretrainingRecord | None = None

    @property
    def input_dim(self) -> int:
        """``D``, the data width."""
        return self.dims[0]

    @property
    def latent_dim(self) -> int:
        """The bottleneck width ``h_L``."""
        return self.dims[-1]

    @property
    def depth(self) -> int:
        """``L``, the number of encoder (and decoder) layers."""
        return len(self.dims) - 1

    def layer_pair(self, i: int) -> tuple[nn.Sequential, nn.Sequential]:
        """The ``i``-th shallow autoencoder: (encoder block ``i``, decoder block ``L-1-i``)."""
        i = check_int(i, "i", minimum=0, maximum=self.depth - 1)
        return self.encoder[i], self.decoder[self.depth - 1 - i]

    def _check(self, t, width: int, name: str) -> torch.Tensor:
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor of shape (..., {width}), got {type(t).__name__}")
        if t.dim() < 1 or t.shape[-1] != width:
            raise ValueError(f"{name} must have shape (..., {width}), got shape {tuple(t.shape)}")
        dtype = next(self.parameters()).dtype
        if t.dtype != dtype:
            raise TypeError(f"{name} must have the network's dtype {dtype}, got {t.dtype}")
        return t

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The reconstruction ``h_d(h_e(x))``, shape ``(..., D)`` (differentiable)."""
        return self.decoder(self.encoder(self._check(x, self.input_dim, "x")))

    @torch.no_grad()
    def encode(self, x: torch.Tensor, batch_size: int | None = None) -> torch.Tensor:
        """Features ``h_e(x)`` without gradients, shape ``(..., h_L)``, computed in batches of
        ``batch_size`` rows of a 2-D ``x`` (all at once when ``None``)."""
        return self._batched(self.encoder, self._check(x, self.input_dim, "x"), batch_size)

    @torch.no_grad()
    def decode(self, z: torch.Tensor, batch_size: int | None = None) -> torch.Tensor:
        """Reconstructions ``h_d(z)`` without gradients, shape ``(..., D)``."""
        return self._batched(self.decoder, self._check(z, self.latent_dim, "z"), batch_size)

    @staticmethod
    def _batched(net, t, batch_size):
        if batch_size is not None:
            batch_size = check_int(batch_size, "batch_size", minimum=1)
        if batch_size is None or t.dim() < 2 or t.shape[0] <= batch_size:
            return net(t)
        return torch.cat([net(t[i:i + batch_size]) for i in range(0, t.shape[0], batch_size)], dim=0)

    def extra_repr(self) -> str:
        return f"dims={self.dims}"
