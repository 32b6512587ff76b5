"""AE+GMM and VAE+GMM on two well-separated blobs, and the checks of their input."""

import numpy as np
import pytest
import torch

from pyromodels.ltvae import VAE, ae_gmm, gmm_clusters, vae_gmm
from pyromodels.nn import pretrain_autoencoder


def _blobs(n=60, d=5, seed=0):
    g = torch.Generator().manual_seed(seed)
    y = torch.arange(n) % 2
    centres = torch.stack([torch.full((d,), -3.0), torch.full((d,), 3.0)])
    return centres[y] + torch.randn(n, d, generator=g), y


def test_vae_gmm_separates_two_blobs():
    x, y = _blobs()
    vae = VAE(2, hidden=(16,), likelihood="normal")
    post = vae.fit(x, num_epochs=60, batch_size=30, lr=1e-2, seed=0, progress=False)
    result = vae_gmm(vae, post, x, 2, y=y, n_init=3)
    assert result.labels.shape == (60,) and result.labels.dtype == np.int64
    assert result.features.shape == (60, 2)
    torch.testing.assert_close(result.features, vae.encode(post, x)[0])
    assert result.accuracy >= 0.95
    assert result.majority_accuracy >= result.accuracy


def test_ae_gmm_separates_two_blobs():
    x, y = _blobs(seed=1)
    ae = pretrain_autoencoder(x, dims=(8, 2), layerwise_epochs=5, finetune_epochs=30,
                              batch_size=20, cache=False, progress=False)
    result = ae_gmm(ae, x, 2, y=y, n_init=3)
    assert result.accuracy >= 0.95
    torch.testing.assert_close(result.features, ae.encode(x))


def test_accuracies_follow_the_labels_of_the_mixture():
    x, y = _blobs(seed=2)
    flipped = gmm_clusters(x, 2, y=1 - y, n_init=2)
    plain = gmm_clusters(x, 2, y=y, n_init=2)
    assert plain.accuracy == flipped.accuracy == 1.0      # Hungarian: names don't matter
    three = gmm_clusters(x, 3, y=y, n_init=2, covariance_type="spherical")
    assert three.majority_accuracy == 1.0                 # many-to-one absorbs the split
    assert three.accuracy < 1.0                           # one-to-one does not
    assert gmm_clusters(x, 2).accuracy is None


def test_bad_input_is_reported():
    x, y = _blobs()
    with pytest.raises(ValueError, match="y must have shape"):
        gmm_clusters(x, 2, y=y[:-1])
    with pytest.raises(ValueError, match="n_clusters"):
        gmm_clusters(x, 0)
    with pytest.raises(ValueError, match="covariance_type must be one of"):
        gmm_clusters(x, 2, covariance_type="banded")
    bad = x.clone()
    bad[0, 0] = float("inf")
    with pytest.raises(ValueError, match="features"):
        gmm_clusters(bad, 2)
    with pytest.raises(TypeError, match="autoencoder must be a StackedAutoencoder"):
        ae_gmm(object(), x, 2)
    ae = pretrain_autoencoder(x, dims=(2,), layerwise_epochs=0, finetune_epochs=1,
                              cache=False, progress=False)
    with pytest.raises(ValueError, match="x must have 5 columns"):
        ae_gmm(ae, x[:, :4], 2)
    with pytest.raises(TypeError, match="vae must be a VAE"):
        vae_gmm(ae, {}, x, 2)
