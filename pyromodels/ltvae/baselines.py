"""The two-stage clustering baselines of the LTVAE paper (Table 2): AE+GMM and VAE+GMM.

Each encodes the data with a trained network, then fits a Gaussian mixture to the codes
(scikit-learn's ``GaussianMixture``, ``n_init`` restarts, the best likelihood kept) and labels
each point by its most probable component:

* AE+GMM: the features are the bottleneck ``h_e(x)`` of a stacked autoencoder
  (:class:`~pyromodels.nn.StackedAutoencoder`, pretrained as in DEC by
  :func:`~pyromodels.nn.pretrain_autoencoder`);
* VAE+GMM: the features are the means :math:`\\mu_\\phi(x)` of a fitted
  :class:`~pyromodels.ltvae.vae.VAE`'s encoder (as the authors' code reads the encoder in
  evaluation).

With reference classes the result carries both accuracies the paper's comparisons use: the
one-to-one Hungarian :func:`~pyromodels.metrics.clustering_accuracy` and the many-to-one
:func:`~pyromodels.metrics.majority_accuracy` of the authors' evaluation code.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import torch

from ..checks import as_float_tensor, as_label_tensor, check_in, check_int
from ..metrics import clustering_accuracy, majority_accuracy
from ..nn.autoencoder import StackedAutoencoder
from .vae import VAE

__all__ = ["ClusteringResult", "gmm_clusters", "ae_gmm", "vae_gmm", "COVARIANCE_TYPES"]

#: the covariance forms of scikit-learn's GaussianMixture
COVARIANCE_TYPES = ("full", "tied", "diag", "spherical")


@dataclasses.dataclass(frozen=True, eq=False)
class ClusteringResult:
    """A two-stage clustering.

    Attributes:
        labels: ``(N,)`` int64, each point's most probable mixture component.
        features: ``(N, J)`` the codes the mixture was fitted to.
        mixture: the fitted ``sklearn.mixture.GaussianMixture``.
        accuracy: Hungarian (one-to-one) accuracy against the reference classes, or ``None``
            without them.
        majority_accuracy: many-to-one (majority label per cluster) accuracy, or ``None``.
    """

    labels: np.ndarray
    features: torch.Tensor
    mixture: object
    accuracy: float | None = None
    majority_accuracy: float | None = None


def gmm_clusters(features, n_clusters: int, *, y=None, covariance_type: str = "full",
                 n_init: int = 10, seed: int = 0) -> ClusteringResult:
    """Cluster ``features`` with a Gaussian mixture of ``n_clusters`` components.

    Args:
        features: ``(N, J)`` finite codes.
        n_clusters: components (the baselines take the number of classes).
        y: ``(N,)`` reference classes, or ``None``.
        covariance_type: ``"full"`` (default), ``"tied"``, ``"diag"`` or ``"spherical"``.
        n_init: EM restarts (the paper's baselines: 10); the best likelihood is kept.
        seed: seed of the restarts' k-means starts.

    Returns:
        A :class:`ClusteringResult`.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> f = torch.cat([torch.randn(20, 2, generator=g) - 4, torch.randn(20, 2, generator=g) + 4])
        >>> gmm_clusters(f, 2, y=[0] * 20 + [1] * 20, n_init=2).accuracy
        1.0
    """
    from sklearn.mixture import GaussianMixture

    features = as_float_tensor(features, "features", ndim=2)
    n_clusters = check_int(n_clusters, "n_clusters", minimum=1, maximum=features.shape[0])
    check_in(covariance_type, "covariance_type", COVARIANCE_TYPES)
    n_init = check_int(n_init, "n_init", minimum=1)
    seed = check_int(seed, "seed", minimum=0, maximum=2**32 - 1)
    if y is not None:
        y = as_label_tensor(y, "y")
        if y.shape != (features.shape[0],):
            raise ValueError(f"y must have shape ({features.shape[0]},), one class per row, got "
                             f"shape {tuple(y.shape)}")
    codes = features.detach().cpu().to(torch.float64).numpy()
    mixture = GaussianMixture(n_clusters, covariance_type=covariance_type, n_init=n_init,
                              random_state=seed).fit(codes)
    labels = mixture.predict(codes).astype(np.int64)
    acc = maj = None
    if y is not None:
        truth = y.cpu().numpy()
        acc, maj = clustering_accuracy(truth, labels), majority_accuracy(truth, labels)
    return ClusteringResult(labels, features, mixture, acc, maj)


def ae_gmm(autoencoder: StackedAutoencoder, x, n_clusters: int, *, y=None,
           covariance_type: str = "full", n_init: int = 10, seed: int = 0) -> ClusteringResult:
    """AE+GMM: a Gaussian mixture on a trained autoencoder's bottleneck codes ``h_e(x)``.

    Args:
        autoencoder: a trained :class:`~pyromodels.nn.StackedAutoencoder` (for example from
            :func:`~pyromodels.nn.pretrain_autoencoder`, as the paper's DEC-style pretraining).
        x: ``(N, D)`` data of the autoencoder's width.
        n_clusters, y, covariance_type, n_init, seed: as for :func:`gmm_clusters`.
    """
    if not isinstance(autoencoder, StackedAutoencoder):
        raise TypeError(f"autoencoder must be a StackedAutoencoder, got {type(autoencoder).__name__}")
    weight = next(autoencoder.parameters())
    x = as_float_tensor(x, "x", ndim=2, dtype=weight.dtype, device=weight.device)
    if x.shape[1] != autoencoder.input_dim:
        raise ValueError(f"x must have {autoencoder.input_dim} columns, the autoencoder's input "
                         f"width, got {x.shape[1]}")
    return gmm_clusters(autoencoder.encode(x), n_clusters, y=y, covariance_type=covariance_type,
                        n_init=n_init, seed=seed)


def vae_gmm(vae: VAE, posterior, x, n_clusters: int, *, y=None, covariance_type: str = "full",
            n_init: int = 10, seed: int = 0) -> ClusteringResult:
    """VAE+GMM: a Gaussian mixture on the encoder means :math:`\\mu_\\phi(x)` of a fitted VAE.

    Args:
        vae: the :class:`~pyromodels.ltvae.vae.VAE` that was fitted.
        posterior: its fit (or the fit's ``params``).
        x: ``(N, D)`` data of the fitted width.
        n_clusters, y, covariance_type, n_init, seed: as for :func:`gmm_clusters`.
    """
    if not isinstance(vae, VAE):
        raise TypeError(f"vae must be a VAE, got {type(vae).__name__}")
    loc, _ = vae.encode(posterior, x)
    return gmm_clusters(loc, n_clusters, y=y, covariance_type=covariance_type, n_init=n_init,
                        seed=seed)
