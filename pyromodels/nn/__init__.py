"""Neural-network parts: MLPs, NICE flows, stacked autoencoders and a cache of trained weights.

These parts know no model: families build their networks from them.

- :class:`NICE`, :class:`AdditiveCoupling`, :class:`Permutation`, :class:`Scaling`: the NICE
  flow and its layers as Pyro ``TransformModule`` s.
- :class:`StackedAutoencoder` and :func:`pretrain_autoencoder`: the DEC/VaDE autoencoder and its
  greedy layer-wise denoising pretraining plus fine-tuning, cached on disk.
- :class:`WeightCache`: the file-locked, atomically written cache of trained weights.
- :func:`mlp`: the seeded MLP builder the others use.
"""

from .autoencoder import PretrainingRecord, StackedAutoencoder
from .cache import CacheWarning, WeightCache, cache_key, data_fingerprint, resolve_cache_dir
from .coupling import AdditiveCoupling, Permutation, Scaling
from .mlp import mlp
from .nice import NICE
from .pretrain import pretrain_autoencoder

__all__ = [
    "AdditiveCoupling",
    "CacheWarning",
    "NICE",
    "Permutation",
    "PretrainingRecord",
    "Scaling",
    "StackedAutoencoder",
    "WeightCache",
    "cache_key",
    "data_fingerprint",
    "mlp",
    "pretrain_autoencoder",
    "resolve_cache_dir",
]
