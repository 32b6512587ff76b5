"""Neural-network parts: MLPs, NICE flows, stacked autoencoders and a cache of trained weights.

These parts know no model: families build their networks from them.

- :class:`NICE`, :class:`AdditiveCoupling`, :class:`Permutation`, :class:`Scaling`: the NICE
  flow and its layers as Pyro ``TransformModule`` s.
- :class:`StackedAutoencoder` and :func:`pretrain_autoencoder`: the DEC/VaDE autoencoder and its
  greedy layer-wise denoising pretraining plus fine-tuning, cached on disk.
- :class:`WeightCache`: the file-locked, atomically written cache of trained weights.
- :func:`mlp`: the seeded MLP builder the others use.
- :class:`CategoricalEncoder`, :class:`GaussianEncoder`, :class:`ConditionalGaussianEncoder`,
  :class:`ObservationDecoder` (with :func:`observation_distribution`) and
  :class:`GaussianPotentialEncoder`: amortised encoders and decoders for latent-variable models
  with a discrete cluster (``q(z | o)``, ``q(x | z, o)``, ``p(o | x)``, a recognition network's
  Gaussian potential); :func:`resolve_likelihood` picks the decoder's likelihood for data.
- :func:`init_from_autoencoder`: a VAE's encoder and decoder started from a pretrained
  :class:`StackedAutoencoder`.
- :class:`ParamNetwork`: a network whose weights live in Pyro's param store, run functionally.
"""

from .amortized import (
    CategoricalEncoder,
    ConditionalGaussianEncoder,
    GaussianEncoder,
    GaussianPotentialEncoder,
    ObservationDecoder,
    observation_distribution,
    resolve_likelihood,
)
from .autoencoder import PretrainingRecord, StackedAutoencoder
from .cache import CacheWarning, WeightCache, cache_key, data_fingerprint, resolve_cache_dir
from .coupling import AdditiveCoupling, Permutation, Scaling
from .mlp import mlp
from .nice import NICE
from .param_network import ParamNetwork
from .pretrain import pretrain_autoencoder
from .warm_start import init_from_autoencoder

__all__ = [
    "AdditiveCoupling",
    "CacheWarning",
    "CategoricalEncoder",
    "ConditionalGaussianEncoder",
    "GaussianEncoder",
    "GaussianPotentialEncoder",
    "NICE",
    "ObservationDecoder",
    "ParamNetwork",
    "Permutation",
    "PretrainingRecord",
    "Scaling",
    "StackedAutoencoder",
    "WeightCache",
    "cache_key",
    "data_fingerprint",
    "init_from_autoencoder",
    "mlp",
    "observation_distribution",
    "pretrain_autoencoder",
    "resolve_cache_dir",
    "resolve_likelihood",
]
